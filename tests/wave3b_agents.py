"""Register Mistral Vibe and OpenHands (issue 23, third wave) for a `passdown` subprocess
the way pip would, with a dist-info folder declaring their entry points (the installed
metadata may predate them), next to the second wave's (tests/wave2_agents.py)."""

from __future__ import annotations

from pathlib import Path

from wave2_agents import register as register_wave2

ENTRY_POINTS = {
    "vibe": "passdown.agents.vibe:MistralVibe",
    "openhands": "passdown.agents.openhands:OpenHandsCLI",
}


def register(site: Path) -> str:
    """Write the dist-infos into `site`; returns a PYTHONPATH with `site` in front."""
    dist = site / "passdown_wave3b_agents-0.1.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: passdown-wave3b-agents\nVersion: 0.1\n", encoding="utf-8"
    )
    lines = "".join(f"{name} = {target}\n" for name, target in ENTRY_POINTS.items())
    (dist / "entry_points.txt").write_text(f"[passdown.agents]\n{lines}", encoding="utf-8")
    return register_wave2(site)
