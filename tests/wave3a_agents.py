"""Register the agents of helper wave3a (Auggie, Continue CLI), with the second wave's,
for a `passdown` subprocess the way pip would: a dist-info folder declaring their entry
points (the installed metadata may predate them)."""

from __future__ import annotations

from pathlib import Path

from wave2_agents import register as register_wave2

ENTRY_POINTS = {
    "auggie": "passdown.agents.auggie:Auggie",
    "continue": "passdown.agents.continue_cli:ContinueCLI",
}


def register(site: Path) -> str:
    """Write the dist-info into `site`; returns a PYTHONPATH with `site` in front."""
    path = register_wave2(site)
    dist = site / "passdown_wave3a_agents-0.1.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: passdown-wave3a-agents\nVersion: 0.1\n", encoding="utf-8"
    )
    lines = "".join(f"{name} = {target}\n" for name, target in ENTRY_POINTS.items())
    (dist / "entry_points.txt").write_text(f"[passdown.agents]\n{lines}", encoding="utf-8")
    return path
