"""Register this checkout's agents for a `passdown` subprocess the way pip would: a
dist-info folder declaring the `passdown.agents` entry points of pyproject.toml, so the
subprocess finds every agent even when the installed metadata predates one (an editable
install made before the agent was added)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _entry_points() -> dict[str, str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return dict(project["entry-points"]["passdown.agents"])


def register(site: Path) -> str:
    """Write the dist-info into `site`; returns a PYTHONPATH with `site`, then this
    checkout's src, in front."""
    dist = site / "passdown_checkout_agents-0.1.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: passdown-checkout-agents\nVersion: 0.1\n", encoding="utf-8"
    )
    lines = "".join(f"{name} = {target}\n" for name, target in _entry_points().items())
    (dist / "entry_points.txt").write_text(f"[passdown.agents]\n{lines}", encoding="utf-8")
    parts = [str(site), str(REPO / "src"), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in parts if p)
