#!/usr/bin/env bash
# Install the pinned real agent CLIs for the end-to-end tests into a test-only npm prefix.
# Idempotent: skips packages whose pinned version is already installed there.
# Fails loudly (non-zero) when an install is impossible: e2e tests must never pass by skipping.
# Also warms GitHub Copilot CLI's unpacked runtime (~230 MB) into a shared cache folder that
# the tests point each isolated HOME at, so only the first run ever pays for the unpacking.
set -euo pipefail

E2E_HOME="${PASSDOWN_E2E_HOME:-$HOME/.cache/passdown-e2e}"
PREFIX="$E2E_HOME/npm"

command -v npm >/dev/null || { echo "install-agents: npm not found (Node 20+ required)" >&2; exit 2; }
mkdir -p "$PREFIX"

# package name | pinned version | binary, from the one pin file; PASSDOWN_<NAME>_VERSION overrides
PINS="$(dirname "$0")/agent-pins.txt"
AGENTS=()
while read -r name pkg version; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    override="PASSDOWN_${name^^}_VERSION"
    AGENTS+=("$pkg|${!override:-$version}|$name")
done <"$PINS"
COPILOT_VERSION="$(for e in "${AGENTS[@]}"; do [[ "${e##*|}" == copilot ]] && { v="${e#*|}"; echo "${v%%|*}"; }; done; true)"

installed_version() {  # $1 = package name; prints the version installed in PREFIX, or nothing
    local pj="$PREFIX/lib/node_modules/$1/package.json"
    [[ -f "$pj" ]] && node -p "require(process.argv[1]).version" "$pj" 2>/dev/null || true
}

want=()
for entry in "${AGENTS[@]}"; do
    IFS='|' read -r pkg version _bin <<<"$entry"
    [[ "$(installed_version "$pkg")" == "$version" ]] || want+=("$pkg@$version")
done

if ((${#want[@]})); then
    echo "install-agents: installing ${want[*]} into $PREFIX" >&2
    # --global with --prefix keeps bins in PREFIX/bin; the npm cache makes re-installs cheap.
    # One package per npm call, so a failure names the package that could not be installed.
    for spec in "${want[@]}"; do
        npm install --global --prefix "$PREFIX" --no-fund --no-audit --loglevel=error "$spec" \
            || { echo "install-agents: npm could not install $spec" >&2; exit 1; }
    done
fi

# Verify: the binaries exist and report the pinned versions.
for entry in "${AGENTS[@]}"; do
    IFS='|' read -r pkg version bin <<<"$entry"
    [[ -x "$PREFIX/bin/$bin" ]] || { echo "install-agents: $PREFIX/bin/$bin missing after install" >&2; exit 1; }
    [[ "$(installed_version "$pkg")" == "$version" ]] \
        || { echo "install-agents: $pkg is not $version" >&2; exit 1; }
done

# Copilot unpacks its runtime into $XDG_CACHE_HOME/copilot/pkg (default ~/.cache) on first run.
# The tests set XDG_CACHE_HOME to this shared folder; warm it once here (offline, no model call).
COPILOT_CACHE="$E2E_HOME/xdg-cache"
if [[ ! -f "$COPILOT_CACHE/.copilot-$COPILOT_VERSION" ]]; then
    mkdir -p "$COPILOT_CACHE"
    warm_home="$(mktemp -d)"
    HOME="$warm_home" XDG_CACHE_HOME="$COPILOT_CACHE" COPILOT_OFFLINE=true COPILOT_AUTO_UPDATE=false \
        "$PREFIX/bin/copilot" --version </dev/null >/dev/null 2>&1 \
        || { echo "install-agents: copilot --version failed while warming its cache" >&2; rm -rf "$warm_home"; exit 1; }
    rm -rf "$warm_home"
    touch "$COPILOT_CACHE/.copilot-$COPILOT_VERSION"
fi
echo "$PREFIX/bin"
