#!/usr/bin/env bash
# Makes sure bubblewrap (bwrap), the local sandbox of the exec tool, is
# installed for make test: when it is missing and this runs as root on a
# system with apt-get, it installs the Debian/Ubuntu package "bubblewrap".
# Otherwise it says how to install it, and the sandbox tests skip.
set -euo pipefail
if command -v bwrap >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "installing bubblewrap with apt-get" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap
	exit 0
fi
echo "bubblewrap is not installed, so the sandbox tests will be skipped; install it with" >&2
echo "  sudo apt-get install bubblewrap   (Debian, Ubuntu)" >&2
echo "  sudo dnf install bubblewrap       (Fedora)" >&2
echo "  sudo pacman -S bubblewrap         (Arch)" >&2
