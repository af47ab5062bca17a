#!/usr/bin/env bash
# Install the pinned agent CLIs that ship on PyPI, each into a venv of its own (their
# dependencies pin versions passdown's own test environment must not get).
# Idempotent; fails loudly (non-zero) when an install is impossible: e2e tests never skip.
set -euo pipefail

E2E_HOME="${PASSDOWN_E2E_HOME:-$HOME/.cache/passdown-e2e}"
PINS="${PASSDOWN_PYAGENT_PINS:-$(dirname "$0")/pyagent-pins.txt}"  # .ci/canary: the newest

python_for() {  # $1 = "3.12": pyenv's newest 3.12.x, else python3.12 on PATH
    local found
    found="$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/python3 2>/dev/null | sort -V | tail -n 1 || true)"
    [[ -n "$found" ]] || found="$(command -v "python$1" || true)"
    [[ -n "$found" ]] || { echo "install-pyagents: no Python $1 found" >&2; exit 1; }
    echo "$found"
}

while read -r name pkg version pyver; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    venv="$E2E_HOME/pyagents/$name"
    if [[ "$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$pkg'))" 2>/dev/null)" != "$version" ]]; then
        echo "install-pyagents: installing $pkg==$version into $venv" >&2
        rm -rf "$venv"
        "$(python_for "$pyver")" -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check "$pkg==$version" 2>&1 | grep -v "^WARNING: Location" >&2 || true
        [[ "$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$pkg'))")" == "$version" ]] \
            || { echo "install-pyagents: $pkg==$version did not install" >&2; exit 1; }
    fi
    [[ -x "$venv/bin/$name" ]] || { echo "install-pyagents: $venv/bin/$name missing" >&2; exit 1; }
done <"$PINS"
