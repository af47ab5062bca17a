"""Cursor's agent CLI and Aider, read from fixtures built from their documented formats
(no real program runs here; the README says so)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from passdown._extract import extract
from passdown.agents import get_agent

AIDER_HISTORY = """
# aider chat started at 2026-11-01 09:00:00

#### fix the typo in the readme

Done, fixed it.

# aider chat started at 2026-11-02 10:00:00

> Aider v0.86.1
> Added app.py to the chat.

#### add a /health endpoint to app.py; my key is AKIAQ4XJ7PASSDOWN5ZT

Here is the change:

```python
> not tool output: a quote inside code
def health():
    return {"ok": True}
```

> Applied edit to app.py
> Commit 3f2a1bc feat: add health endpoint
> ## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in tests/test_app.py

#### /run pytest -q

> FAILED tests/test_app.py::test_health - assert 404 == 200
> 1 failed in 0.12s
> exited with code 1

The test fails because the route is not registered. Next step: register the route in create_app().
"""


def test_aider_reads_the_last_run(tmp_path: Path) -> None:
    (tmp_path / ".aider.chat.history.md").write_text(AIDER_HISTORY)
    agent = get_agent("aider")
    refs = agent.sessions(tmp_path)
    assert [r.session_id.rsplit("#", 1)[1] for r in refs] == ["2", "1"]
    transcript = agent.read(refs[0])
    ex = extract(transcript.events(), workspace=str(tmp_path))
    assert ex.task.original_request.startswith("add a /health endpoint")
    assert "not tool output" in (ex.task.transcript[1].text)
    assert [f.path for f in ex.state.files_touched] == ["app.py"]
    assert [f.path for f in ex.state.failed_edits] == ["tests/test_app.py"]
    assert [(c.command, c.exit_code) for c in ex.state.commands] == [("pytest -q", 1)]
    assert ex.task.latest_progress.endswith("register the route in create_app().")
    assert "register the route in create_app()." in ex.state.next_steps  # no "Next step:"
    first = agent.read(refs[1])
    assert (
        extract(first.events(), workspace=str(tmp_path)).task.original_request
        == "fix the typo in the readme"
    )


def test_aider_launch_argv(tmp_path: Path) -> None:
    agent = get_agent("aider")
    spec = agent.launch_spec(
        "-x Read the full handoff first: /w/.agent-handoff/HANDOFF.md",
        workspace=tmp_path,
        interactive=False,
    )
    assert spec.argv == [
        "aider",
        "--yes-always",
        "--message",
        "-x Read the full handoff first: /w/.agent-handoff/HANDOFF.md",
    ]
    spec = agent.launch_spec(
        "Read the full handoff first: /w/.agent-handoff/HANDOFF.md",
        workspace=tmp_path,
        interactive=True,
    )
    assert spec.argv == ["aider", "--read", "/w/.agent-handoff/HANDOFF.md"]


def _cursor_session(
    root: Path, workspace: Path, records: list[dict[str, object]], sid: str = "c0ffee00-1111"
) -> Path:
    slug = str(workspace).lstrip("/").replace("/", "-")
    folder = root / "projects" / slug / "agent-transcripts" / sid
    folder.mkdir(parents=True)
    path = folder / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_cursor_jsonl_transcript(tmp_path: Path) -> None:
    workspace = tmp_path / "proj"
    workspace.mkdir()
    root = Path(os.environ["CURSOR_CONFIG_DIR"])
    _cursor_session(
        root,
        workspace,
        [
            {
                "role": "user",
                "message": {
                    "content": [
                        {
                            "type": "text",
                            "text": "<user_query>\nSplit utils.py into modules\n</user_query>",
                        }
                    ]
                },
            },
            {
                "role": "assistant",
                "message": {
                    "content": [
                        {"type": "text", "text": "Splitting it."},
                        {
                            "type": "tool_use",
                            "name": "Write",
                            "input": {"path": str(workspace / "utils" / "io.py"), "contents": "x"},
                        },
                        {"type": "tool_use", "name": "Shell", "input": {"command": "pytest -q"}},
                        {
                            "type": "tool_use",
                            "name": "TodoWrite",
                            "input": {
                                "todos": [
                                    {
                                        "id": "a",
                                        "content": "move io helpers",
                                        "status": "completed",
                                    },
                                    {
                                        "id": "b",
                                        "content": "move string helpers",
                                        "status": "in_progress",
                                    },
                                ]
                            },
                        },
                    ]
                },
            },
            {
                "role": "assistant",
                "message": {
                    "content": [{"type": "text", "text": "io helpers moved; string helpers next."}]
                },
            },
        ],
    )
    agent = get_agent("cursor")
    refs = agent.sessions(workspace)
    assert [r.session_id for r in refs] == ["c0ffee00-1111"]
    ex = extract(agent.read(refs[0]).events(), workspace=str(workspace))
    assert ex.task.original_request == "Split utils.py into modules"
    assert [(f.path, f.confirmed) for f in ex.state.files_touched] == [("utils/io.py", False)]
    assert [c.command for c in ex.state.commands] == ["pytest -q"]
    assert [(p.subject, p.status) for p in ex.state.plan] == [
        ("move io helpers", "completed"),
        ("move string helpers", "in_progress"),
    ]
    assert ex.task.latest_progress == "io helpers moved; string helpers next."
    assert agent.sessions(tmp_path / "elsewhere") == []


@pytest.mark.usefixtures("agents_on_path")
def test_cursor_switch_dry_run(tmp_path: Path) -> None:
    workspace = tmp_path / "proj"
    workspace.mkdir()
    _cursor_session(
        Path(os.environ["CURSOR_CONFIG_DIR"]),
        workspace,
        [
            {
                "role": "user",
                "message": {
                    "content": [{"type": "text", "text": "<user_query>hello</user_query>"}]
                },
            },
            {"role": "assistant", "message": {"content": [{"type": "text", "text": "hi"}]}},
        ],
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "passdown",
            "switch",
            "--from",
            "cursor",
            "--to",
            "claude",
            "--dry-run",
            "--json",
            "--non-interactive",
        ],
        cwd=workspace,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["source"]["agent"] == "cursor"
    spec = get_agent("cursor").launch_spec("-p", workspace=workspace, interactive=False)
    assert spec.argv == ["cursor-agent", "-p", "--force", "--", "-p"]


@pytest.mark.parametrize("name", ["aider", "cursor"])
def test_missing_stores_are_empty(name: str, tmp_path: Path) -> None:
    assert get_agent(name).sessions(tmp_path) == []
