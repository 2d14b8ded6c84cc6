#!/usr/bin/env bash
# install-chromium.sh — the browser of the web console's tests
# (tests/console_test.go): the Debian package chromium, at /usr/bin/chromium,
# driven by playwright-core (tests/testdata/clients). make test runs it. It
# does nothing when Chromium is there (or $LAMBDACLAW_CHROMIUM names one);
# as root it installs the package with apt-get; otherwise it says how and
# fails, as the test would.
set -euo pipefail

browser=${LAMBDACLAW_CHROMIUM:-/usr/bin/chromium}
if [[ -x $browser ]]; then
	exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
	echo "install-chromium.sh: the console's browser test needs Chromium at $browser:" >&2
	echo "  sudo apt-get install chromium   (Debian, Ubuntu)" >&2
	echo "or set LAMBDACLAW_CHROMIUM to a Chromium or Chrome executable" >&2
	exit 1
fi
echo "install-chromium.sh: apt-get install chromium" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends chromium >&2
