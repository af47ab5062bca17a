"""Register the second-wave agents (Cline CLI, Kimi CLI) for a `passdown` subprocess the
way pip would, with a dist-info folder declaring their entry points: the installed
metadata may predate them (an editable install made before they were added)."""

from __future__ import annotations

import os
from pathlib import Path

ENTRY_POINTS = {
    "cline": "passdown.agents.cline:ClineCLI",
    "kimi": "passdown.agents.kimi:KimiCLI",
    "gptme": "passdown.agents.gptme:Gptme",
    "hermes": "passdown.agents.hermes:HermesAgent",
}


def register(site: Path) -> str:
    """Write the dist-info into `site`; returns a PYTHONPATH with `site` in front."""
    dist = site / "passdown_wave2_agents-0.1.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: passdown-wave2-agents\nVersion: 0.1\n", encoding="utf-8"
    )
    lines = "".join(f"{name} = {target}\n" for name, target in ENTRY_POINTS.items())
    (dist / "entry_points.txt").write_text(f"[passdown.agents]\n{lines}", encoding="utf-8")
    src = Path(__file__).resolve().parents[1] / "src"
    parts = [str(site), str(src), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in parts if p)
