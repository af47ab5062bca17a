#!/usr/bin/env bash
# Install the pinned real agent CLIs for the end-to-end tests into a test-only npm prefix.
# Idempotent: skips packages whose pinned version is already installed there.
# Fails loudly (non-zero) when an install is impossible: e2e tests must never pass by skipping.
set -euo pipefail

CLAUDE_VERSION="${PASSDOWN_CLAUDE_VERSION:-2.1.197}"
CODEX_VERSION="${PASSDOWN_CODEX_VERSION:-0.171.0}"
E2E_HOME="${PASSDOWN_E2E_HOME:-$HOME/.cache/passdown-e2e}"
PREFIX="$E2E_HOME/npm"

command -v npm >/dev/null || { echo "install-agents: npm not found (Node 20+ required)" >&2; exit 2; }
mkdir -p "$PREFIX"

installed_version() {  # $1 = package name; prints the version installed in PREFIX, or nothing
    local pj="$PREFIX/lib/node_modules/$1/package.json"
    [[ -f "$pj" ]] && node -p "require(process.argv[1]).version" "$pj" 2>/dev/null || true
}

want=()
[[ "$(installed_version @anthropic-ai/claude-code)" == "$CLAUDE_VERSION" ]] \
    || want+=("@anthropic-ai/claude-code@$CLAUDE_VERSION")
[[ "$(installed_version @openai/codex)" == "$CODEX_VERSION" ]] \
    || want+=("@openai/codex@$CODEX_VERSION")

if ((${#want[@]})); then
    echo "install-agents: installing ${want[*]} into $PREFIX" >&2
    # --global with --prefix keeps bins in PREFIX/bin; the npm cache makes re-installs cheap.
    npm install --global --prefix "$PREFIX" --no-fund --no-audit --loglevel=error "${want[@]}"
fi

# Verify: the binaries exist and report the pinned versions.
for bin in claude codex; do
    [[ -x "$PREFIX/bin/$bin" ]] || { echo "install-agents: $PREFIX/bin/$bin missing after install" >&2; exit 1; }
done
[[ "$(installed_version @anthropic-ai/claude-code)" == "$CLAUDE_VERSION" ]] \
    || { echo "install-agents: claude-code is not $CLAUDE_VERSION" >&2; exit 1; }
[[ "$(installed_version @openai/codex)" == "$CODEX_VERSION" ]] \
    || { echo "install-agents: codex is not $CODEX_VERSION" >&2; exit 1; }
echo "$PREFIX/bin"
