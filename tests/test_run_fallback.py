"""`passdown run AGENT --fallback NEXT` when NEXT cannot take over (leftovers item 3).

The first agent is a stand-in `claude` on PATH that writes a Claude Code session ending
on a 429 (an `isApiErrorMessage` record, as 2.1.197 writes it) and exits 1; passdown
exports and publishes that handoff. Before the fix, the handoff was claimed by
`passdown run` before the fallback was even looked at, so when the fallback could not
start (an exec error) or was not installed, the handoff stayed "claimed" by nobody and
no later session could pick it up. Now it is claimed only for a launch, given back when
the launch fails, and the user gets the error (exit 7) saying where the handoff is.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from passdown.agents.claude import encode_cwd
from passdown.cli import main
from passdown.coordinator import HandoffCoordinator
from passdown.integrations._continuity import pickup
from test_continuity import git

TASK = "Fix the add() bug in calc.py"
NEXT = "Next step: add a test for negative numbers in test_calc.py."

# The stand-in Claude Code: one turn, then the request that hits the rate limit.
FAKE_CLAUDE = """#!{python}
import json, os, sys
from datetime import datetime, UTC
now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
ws, folder = {workspace!r}, {folder!r}
os.makedirs(folder, exist_ok=True)
base = {{"isSidechain": False, "cwd": ws, "sessionId": "run-sid", "version": "2.1.197",
         "timestamp": now}}
records = [
    {{**base, "type": "user", "uuid": "u1", "parentUuid": None,
      "message": {{"role": "user", "content": {task!r}}}}},
    {{**base, "type": "assistant", "uuid": "u2", "parentUuid": "u1",
      "message": {{"id": "m1", "role": "assistant", "model": "claude-test",
                  "content": [{{"type": "text", "text": {progress!r}}}]}}}},
    {{**base, "type": "assistant", "uuid": "u3", "parentUuid": "u2",
      "isApiErrorMessage": True, "error": "rate_limit",
      "message": {{"id": "m2", "role": "assistant", "model": "<synthetic>",
                  "content": [{{"type": "text",
                               "text": "API Error: Request rejected (429) · rate limit"}}]}}}},
]
with open(os.path.join(folder, "run-sid.jsonl"), "w") as fh:
    fh.writelines(json.dumps(r) + "\\n" for r in records)
sys.exit(1)
"""


@pytest.fixture
def workspace(isolated_homes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "initial")
    monkeypatch.chdir(ws)
    return ws


@pytest.fixture
def bindir(tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH holding only the stand-in `claude` (and what each test adds)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    claude_dir = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / encode_cwd(str(workspace))
    program(
        folder / "claude",
        FAKE_CLAUDE.format(
            python=sys.executable,
            workspace=str(workspace),
            folder=str(claude_dir),
            task=TASK,
            progress=f"Found it: add() subtracts. {NEXT}",
        ),
    )
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    return folder


def program(path: Path, text: str | bytes) -> None:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def active_status(workspace: Path) -> tuple[str, str, str | None]:
    """(the active handoff's id, its lifecycle status, who set it)."""
    with HandoffCoordinator(workspace) as coordinator:
        active = coordinator.lifecycle().active()
        assert active, "nothing was published"
        event = coordinator.status(active)
        assert event is not None
        return active, event.status, event.by


def run(capsys: pytest.CaptureFixture[str], *fallback: str) -> tuple[int, str]:
    args = ["run", "claude", *[f"--fallback={a}" for a in fallback], "--non-interactive"]
    capsys.readouterr()
    code = main([*args, "--", TASK])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "internal error" not in err, err
    return code, err


BROKEN = {
    "exec-format": b"\x00\x01 not a program for this machine\n",
    "missing-interpreter": "#!/nonexistent/interpreter\necho never\n",
}


@pytest.mark.parametrize("kind", list(BROKEN))
def test_a_fallback_that_cannot_start_leaves_the_handoff_claimable(
    kind: str, workspace: Path, bindir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program(bindir / "codex", BROKEN[kind])  # on PATH and executable: "installed"
    code, err = run(capsys, "codex")
    assert code == 7, err  # the documented "could not be started", not the agent's 1
    handoff_id, status, _ = active_status(workspace)
    assert "passdown: Claude Code stopped on a rate limit" in err
    assert f"passdown: error: cannot start {bindir / 'codex'}: " in err
    assert f"the handoff {handoff_id} is published again for the next session" in err
    assert str(workspace / ".agent-handoff" / "HANDOFF.md") in err
    assert status == "published"  # before: "claimed" by passdown run, for nobody
    handoff = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())
    assert handoff["id"] == handoff_id and handoff["ended"]["reason"] == "rate_limit"
    assert handoff["task"]["original_request"] == TASK
    # the next session's pickup gets it, which a claimed handoff would refuse
    taken = pickup("gemini", "a-later-session", str(workspace))
    assert taken.outcome == f"claimed {handoff_id}" and taken.pointer
    assert "add a test for negative numbers" in taken.pointer
    with HandoffCoordinator(workspace) as coordinator:
        events = [(e.status, e.by) for e in coordinator.events(handoff_id)]
    assert [s for s, _ in events] == ["prepared", "published", "claimed"], events
    assert events[-1][1] != "passdown run (claude)"  # the later session's claim, not run's


def test_a_fallback_not_installed_leaves_the_handoff_claimable(
    workspace: Path, bindir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run(capsys, "codex")
    assert code == 1  # the last agent's own exit code, as documented
    assert "passdown: Codex CLI is not installed; skipping it" in err
    assert "the handoff is in" in err
    _, status, _ = active_status(workspace)
    assert status == "published"  # before: claimed by passdown run though nothing ran


def test_a_fallback_that_starts_gets_the_handoff_claimed_for_it(
    workspace: Path, bindir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control: a fallback that starts takes the handoff, so its own session-start
    hook injects no second pointer."""
    seen = tmp_path / "codex-argv.txt"
    program(bindir / "codex", f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {seen}\nexit 0\n")
    code, err = run(capsys, "codex")
    assert code == 0, err
    assert "continuing in Codex CLI" in err
    assert "add a test for negative numbers" in seen.read_text()  # the takeover prompt
    _, status, by = active_status(workspace)
    assert (status, by) == ("claimed", "passdown run (claude)")
    assert pickup("gemini", "later", str(workspace)).pointer is None


def test_a_fallback_that_cannot_start_passes_the_handoff_to_the_next_in_the_chain(
    workspace: Path, bindir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """codex cannot start (an exec error), gemini is not installed, qwen starts: qwen
    gets the takeover prompt and the handoff is claimed for it."""
    program(bindir / "codex", BROKEN["exec-format"])
    seen = tmp_path / "qwen-argv.txt"
    program(bindir / "qwen", f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {seen}\nexit 3\n")
    code, err = run(capsys, "codex", "gemini", "qwen")
    assert code == 3, err  # the agent that took over is the last one launched
    assert f"passdown: cannot start {bindir / 'codex'}: " in err
    assert "Codex CLI did not take over" in err
    assert "passdown: Gemini CLI is not installed; skipping it" in err
    assert "continuing in Qwen Code" in err
    assert "passdown: error" not in err
    assert "add a test for negative numbers" in seen.read_text()  # the takeover prompt
    handoff_id, status, by = active_status(workspace)
    assert (status, by) == ("claimed", "passdown run (claude)")
    # claimed for codex, given back when it could not start (its claim record goes),
    # then claimed again for qwen: one claim in the history, the current status
    with HandoffCoordinator(workspace) as coordinator:
        statuses = [e.status for e in coordinator.events(handoff_id)]
    assert statuses == ["prepared", "published", "claimed"], statuses


def test_release_claim_only_gives_back_its_own_current_claim(
    workspace: Path, bindir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys)  # no fallback: published
    handoff_id, status, _ = active_status(workspace)
    assert status == "published"
    with HandoffCoordinator(workspace) as coordinator:
        lc = coordinator.lifecycle()
        assert not lc.release_claim(handoff_id, by="me", note="x")  # not claimed
        assert lc.transition(handoff_id, "claimed", by="someone else")
        assert not lc.release_claim(handoff_id, by="me", note="x")  # not mine
        assert coordinator.status(handoff_id).status == "claimed"  # type: ignore[union-attr]
        assert lc.transition(handoff_id, "completed", by="someone else")
        assert not lc.release_claim(handoff_id, by="someone else", note="x")  # moved on
        assert coordinator.status(handoff_id).status == "completed"  # type: ignore[union-attr]
