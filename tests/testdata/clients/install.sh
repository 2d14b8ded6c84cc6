#!/usr/bin/env bash
# install.sh — the JavaScript programs of the end-to-end tests: the openai
# SDK, LangChain JS and the Vercel AI SDK (tests/clients_test.go), the MCP
# TypeScript SDK and the MCP everything server, the A2A JavaScript SDK, and
# playwright-core for the
# console's browser tests, at the exact versions of package-lock.json,
# installed with npm ci
# into node_modules here (git-ignored; under testdata, which go ./...
# skips). make test runs it; it does nothing when node_modules was
# installed from this very lock, and reinstalls when the lock changed or a
# previous install was cut short.
#
# The packages declare node >= 22; the tests run them on Node 20 as well,
# so npm's engine warnings are not shown.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

# The stamp holds the checksum of the lock node_modules was installed from;
# tests/clients_test.go compares it too. npm ci empties node_modules first,
# so an interrupted install leaves no stamp.
stamp=node_modules/.lock-sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ -f $stamp && $(<"$stamp") == "$want" ]]; then
	exit 0
fi
command -v npm >/dev/null || {
	echo "clients/install.sh: npm is needed to install the JavaScript clients of the tests (apt-get install nodejs npm)" >&2
	exit 1
}
echo "clients/install.sh: npm ci (node_modules missing or installed from another package-lock.json)" >&2
npm ci --no-audit --no-fund --loglevel=error >&2
echo "$want" >"$stamp"
