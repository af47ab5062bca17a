"""The Claude reader decodes a record's tool input and `toolUseResult` in the record's own
decode (issue 20: one decode per line); a nested field of another shape makes it fall
back to the raw decode, field by field, and reads as it did before."""

from __future__ import annotations

from pathlib import Path

import msgspec

from passdown.agents import _claude_records
from test_claude_messy import Session, _extract, claude_dir  # noqa: F401


def _typed(line: dict[str, object]) -> bool:
    try:
        _claude_records._TYPED_RECORD.decode(msgspec.json.encode(line))
    except msgspec.ValidationError:
        return False
    return True


def test_odd_shapes_fall_back_and_read_as_before(claude_dir: Path) -> None:  # noqa: F811
    session = Session()
    session.user("Fix the build and track it")
    session.task_create(1, "Fix the build")
    # a Bash input of an odd shape: the call is still a command, its text unknown
    session.tool("Bash", {"command": ["make"], "description": 7}, "ok")
    # a Bash result whose toolUseResult is a list (an MCP-shaped result): no exit code
    session.tool("Bash", {"command": "make test"}, "boom", outcome=[{"type": "text"}])
    # typed: a plain failing run with its exit code
    session.tool(
        "Bash", {"command": "pytest -q"}, "1 failed", outcome={"exitCode": 2, "stdout": "x"}
    )
    # a created task numbered by an odd-shaped outcome: the number from the result text
    session.tool(
        "TaskCreate",
        {"subject": "Write the test"},
        "Task #2 created successfully: Write the test",
        outcome={"task": "not an object"},
    )
    path = session.write(claude_dir)
    lines = path.read_bytes().splitlines()
    typed = [_typed(msgspec.json.decode(line)) for line in lines]
    assert typed.count(False) == 3  # the three odd records took the fallback
    extracted = _extract(path)
    commands = [(c.command, c.exit_code) for c in extracted.state.commands]
    assert commands == [("", 0), ("make test", None), ("pytest -q", 2)]
    assert [(p.id, p.subject) for p in extracted.state.plan] == [
        ("1", "Fix the build"),
        ("2", "Write the test"),
    ]
