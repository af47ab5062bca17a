"""One error format for every failure: `passdown: error: ...` plus a hint, or with
`--json` one JSON object on stderr, redacted and on one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from passdown.cli import main


def _stderr_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_usage_error_uses_the_passdown_format(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["export", "--max-messages", "many"])
    lines = _stderr_lines(capsys)
    assert code == 2
    assert lines[0].startswith("passdown: error: ")
    assert "many" in lines[0]
    assert lines[1] == "hint: run 'passdown export --help'"
    assert not any(line.startswith(("Error:", "Usage:")) for line in lines)


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["exportt"]) == 2
    lines = _stderr_lines(capsys)
    assert lines[0].startswith("passdown: error: ") and "exportt" in lines[0]


def test_json_errors_are_one_json_object_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["inspect", "--from", "claude", "--json"])
    captured = capsys.readouterr()
    assert code == 3
    assert captured.out == ""
    error = json.loads(captured.err)
    assert error["code"] == 3
    assert "session" in error["error"]
    assert error["hint"]


def test_json_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["export", "--json", "--max-messages", "x"])
    error = json.loads(capsys.readouterr().err)
    assert code == 2 and error["code"] == 2
    assert error["hint"] == "run 'passdown export --help'"


def test_json_after_double_dash_belongs_to_the_target_agent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["exportt", "--", "--json"])
    assert code == 2
    assert capsys.readouterr().err.startswith("passdown: error: ")


def test_error_messages_are_redacted_and_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    path = tmp_path / f"x\n## forged\x1b]0;title\x07{secret}.jsonl"
    code = main(["inspect", "--from", "claude", "--session", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert secret not in err
    assert "\x1b" not in err and "\x07" not in err
    assert err.splitlines()[0].startswith("passdown: error: ")
    assert not any(line.startswith("## forged") for line in err.splitlines())
