"""A resumed export equals a full read, for every checkpointed agent's recorded session,
whatever line the previous export stopped at.

For each recording of an agent with checkpoints (`Agent.supports_checkpoint`) and each
line boundary k of its session file: the file holds its first k lines and is exported
(which saves a checkpoint at k), then the rest is appended and it is exported again.
That second export must read from the checkpoint (the pipeline's `Selection.reading`,
what `export --json` prints) and give the handoff a full read of the whole file gives
(`PASSDOWN_NO_CHECKPOINT=1`), task and state alike.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from passdown import _checkpoint as checkpoint
from passdown import _pipeline as pipeline
from passdown.agents import get_agent
from recorded import Recorded, scenarios
from workspace_probe import workspace_probed_once

CHECKPOINTED = [
    pytest.param(r, id=r.id) for r in scenarios() if get_agent(r.agent).supports_checkpoint
]


def _handoff(path: Path, agent_name: str, workspace: Path) -> tuple[dict[str, Any], str, int]:
    """The handoff (without its id, creation time and git snapshot, which differ from
    one export to the next), how the file was read, and from which offset."""
    agent = get_agent(agent_name)
    selection = pipeline.Selection(agent=agent, ref=agent.ref_for_path(path), workspace=workspace)
    data = pipeline.build_handoff(selection).model_dump(mode="json")
    for volatile in ("id", "created_at", "workspace"):
        del data[volatile]
    assert selection.reading is not None
    return data, selection.reading.how, selection.reading.offset


def test_every_checkpointed_agent_has_a_recording() -> None:
    from passdown.agents import load_agents

    with_checkpoints = {n for n, a in load_agents().items() if a.supports_checkpoint}
    recorded = {p.values[0].agent for p in CHECKPOINTED}  # type: ignore[union-attr]
    assert with_checkpoints == recorded


@pytest.mark.parametrize("recording", CHECKPOINTED)
def test_a_resume_at_any_line_boundary_gives_the_full_reads_handoff(
    recording: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "data"))
    path = recording.install(tmp_path / "store", monkeypatch)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    body = path.read_bytes()
    monkeypatch.setenv(checkpoint.DISABLE_ENV, "1")
    full, how, _ = _handoff(path, recording.agent, workspace)
    assert how == "off"
    monkeypatch.delenv(checkpoint.DISABLE_ENV)
    boundaries = [i + 1 for i, byte in enumerate(body) if byte == 0x0A and i + 1 < len(body)]
    assert len(boundaries) >= 4
    reads: Counter[str] = Counter()
    with workspace_probed_once():  # the untouched workspace: one git probe
        for k in boundaries:
            saved = checkpoint.checkpoint_path(recording.agent, path)
            if saved.exists():
                os.unlink(saved)
            path.write_bytes(body[:k])
            try:
                _handoff(path, recording.agent, workspace)
            except pipeline.SessionReadError:
                continue  # nothing readable in the first lines yet (a header alone)
            with open(path, "ab") as handle:
                handle.write(body[k:])
            resumed, how, offset = _handoff(path, recording.agent, workspace)
            reads[how] += 1
            assert resumed == full, f"resumed at byte {k} of {len(body)}"
            if how == "resumed":
                assert offset == k
    # a reader may refuse a resume where the appended records change what it handed on
    # (a tree's branch left, a Gemini rewind): the full read then. Most resume.
    assert reads["resumed"] >= 0.5 * sum(reads.values()), reads
