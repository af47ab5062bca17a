"""The pinned agent CLIs that ship on PyPI, each in a venv of its own.

`.ci/install-pyagents.sh` installs them from `.ci/pyagent-pins.txt` (the one source of the
pins); a missing one fails the test loudly, as the npm agents do (see `agents.py`).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from e2e.agents import REPO_ROOT, AgentsMissing, e2e_home

INSTALL_SCRIPT = REPO_ROOT / ".ci" / "install-pyagents.sh"
# .ci/canary points this at the newest releases (PASSDOWN_PYAGENT_PINS), as it does the npm pins
PINS_FILE = Path(os.environ.get("PASSDOWN_PYAGENT_PINS") or REPO_ROOT / ".ci" / "pyagent-pins.txt")


def _pins() -> dict[str, str]:
    """name -> pinned version; PASSDOWN_<NAME>_VERSION overrides (the canary)."""
    pins = {}
    for line in PINS_FILE.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) == 4 and not line.startswith("#"):
            pins[fields[0]] = os.environ.get(f"PASSDOWN_{fields[0].upper()}_VERSION") or fields[2]
    return pins


PYAGENT_VERSIONS = _pins()


def pyagent(name: str) -> Path:
    """The executable of a pinned PyPI agent, installed (cached, idempotent) when missing."""
    path = e2e_home() / "pyagents" / name / "bin" / name
    if not path.is_file():
        proc = subprocess.run(
            ["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=1200, check=False
        )
        if proc.returncode != 0 or not path.is_file():
            raise AgentsMissing(f"install-pyagents.sh failed ({proc.returncode}):\n{proc.stderr}")
    return path
