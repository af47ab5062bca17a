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

pip_install() {  # $1 = venv, $2 = package, $3 = version
    if [[ "$2" == mistral-vibe ]]; then
        # mistral-vibe 3.0.3 pins certifi==2026.10.19, which the registry serves only as
        # 2026.10.19.post1: install the wheel's own requirements with that one pin relaxed to
        # ">=" (a post release is newer), then the wheel without its dependencies
        local wheels
        wheels="$(mktemp -d)"
        "$1/bin/pip" download -q --disable-pip-version-check --no-deps -d "$wheels" "$2==$3"
        "$1/bin/python" - "$wheels"/*.whl >"$wheels/requirements.txt" <<'PY'
import re, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    meta = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    for line in wheel.read(meta).decode().splitlines():
        if line.startswith("Requires-Dist:") and "extra ==" not in line:
            print(re.sub(r"^certifi *== *([0-9.]+[0-9])(?=\s*(;|$))", r"certifi>=\1", line.split(":", 1)[1].strip()))
PY
        "$1/bin/pip" install -q --disable-pip-version-check -r "$wheels/requirements.txt"
        "$1/bin/pip" install -q --disable-pip-version-check --no-deps "$wheels"/*.whl
        rm -rf "$wheels"
    else
        "$1/bin/pip" install -q --disable-pip-version-check "$2==$3"
    fi
}

while read -r name pkg version pyver; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    override="PASSDOWN_${name^^}_VERSION"  # the canary's newest release instead of the pin
    version="${!override:-$version}"
    venv="$E2E_HOME/pyagents/$name"
    if [[ "$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$pkg'))" 2>/dev/null)" != "$version" ]]; then
        echo "install-pyagents: installing $pkg==$version into $venv" >&2
        rm -rf "$venv"
        "$(python_for "$pyver")" -m venv "$venv"
        pip_install "$venv" "$pkg" "$version" 2>&1 | grep -v "^WARNING: Location" >&2 || true
        [[ "$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$pkg'))")" == "$version" ]] \
            || { echo "install-pyagents: $pkg==$version did not install" >&2; exit 1; }
    fi
    [[ -x "$venv/bin/$name" ]] || { echo "install-pyagents: $venv/bin/$name missing" >&2; exit 1; }
done <"$PINS"
