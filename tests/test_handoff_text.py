"""Issue 21, "Handoff text", through `passdown export` on hand-made Claude Code sessions:

- a next step stated as "... Next: run the full suite." is the step, without its label
  (HANDOFF.md showed "**Next step:** Next: run the full suite", the web view "Next: Next:");
- a record title is never cut inside a redaction marker (`[REDACTED:github_t`);
- "Open question: ...", "Question: ...", "Q: ..." are open questions, with or without
  their "?", also in the middle of a line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from passdown.records import Scope, default_project
from passdown.store import open_store
from test_claude_messy import Session

pytestmark = pytest.mark.timeout(300)

TOKEN = "ghp_" + "HandoffTextTitle0123456789abcdefghijklm"


def export(ws: Path, session: Session) -> tuple[dict[str, Any], str, str]:
    """(handoff.json, HANDOFF.md, the stored record's id) of `passdown export`."""
    path = session.write(Path(os.environ["CLAUDE_CONFIG_DIR"]))
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", "export", "--from", "claude", "--session",
         str(path), "--json"],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    folder = ws / ".agent-handoff"
    data = json.loads((folder / "handoff.json").read_text())
    return data, (folder / "HANDOFF.md").read_text(), json.loads(proc.stdout)["record_id"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def test_a_next_step_in_prose_loses_its_label(ws: Path) -> None:
    s = Session(cwd=str(ws))
    s.user("Make parse() reject whitespace-only input")
    s.assistant("Parser fixed and its tests pass. Next: run the full suite.")
    data, markdown, record_id = export(ws, s)
    assert data["state"]["next_steps"] == ["run the full suite."]
    assert "**Next step:** run the full suite." in markdown
    assert "Next: Next" not in markdown and "**Next step:** Next" not in markdown
    with open_store() as store:
        record = store.retrieve(Scope(project=default_project(ws)), record_id)
    (step,) = [a.value for a in record.annotations if a.kind == "next"]
    assert step == "run the full suite."  # what the web view shows after "Next:"


def test_open_questions_are_read_wherever_the_agent_asks_them(ws: Path) -> None:
    s = Session(cwd=str(ws))
    s.user("Make parse() reject whitespace-only input")
    s.assistant("Q: keep the old parse_lines() alias\n\nLooking at the callers first.")
    s.user("go on")
    s.assistant(
        "Fixed it. Open question: should whitespace-only input be an error? I kept it "
        "lenient for now.\n\n**Question:** rename parse() to parse_text()"
    )
    data, markdown, record_id = export(ws, s)
    questions = data["state"]["open_questions"]
    assert questions == [
        "keep the old parse_lines() alias",
        "should whitespace-only input be an error?",
        "rename parse() to parse_text()",
    ]
    assert "- should whitespace-only input be an error?" in markdown
    with open_store() as store:
        record = store.retrieve(Scope(project=default_project(ws)), record_id)
    (stored,) = [a.value for a in record.annotations if a.kind == "open_questions"]
    assert stored.splitlines() == questions


@pytest.mark.parametrize("pad", range(70, 100, 3))
def test_a_record_title_is_never_cut_inside_a_redaction_marker(ws: Path, pad: int) -> None:
    s = Session(cwd=str(ws))
    s.user(f"{'x' * pad} deploy with {TOKEN} and report back")
    s.assistant("Deployed.")
    data, _, record_id = export(ws, s)
    assert TOKEN not in json.dumps(data)
    with open_store() as store:
        title = store.retrieve(Scope(project=default_project(ws)), record_id).title
    assert TOKEN[4:] not in title
    marker = title.find("[REDACTED")
    assert marker < 0 or title[marker:].startswith("[REDACTED:github_token]"), title
    assert title.endswith("…") or title.endswith("report back"), title


def test_cut_keeps_or_drops_a_marker_whole() -> None:
    from passdown._text import cut, one_line

    text = "token [REDACTED:github_token] here"
    assert [cut(text, n) for n in (7, 12, 29, 30, 34)] == [
        "token …",
        "token…",
        "token…",
        "token [REDACTED:github_token]…",
        "token [REDACTED:github_token] here",
    ]
    assert one_line("a\n[REDACTED:aws_access_key]", 10) == "a…"
