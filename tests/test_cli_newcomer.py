"""What a newcomer met (issue 30, the smaller ones), through the CLI: the store error's
hint and the store path as given, an ambiguous prefix's count and list, `ui` stopped
with Ctrl-C, and next steps said twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from commands import SRC
from passdown.cli import main

SESSION = "5e551011-0000-4000-8000-00000000c1a1"  # the example session's id


@pytest.fixture
def session(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example Claude Code session shipped with passdown, laid out for `workspace`."""
    from passdown._demo import _lay_out_session

    claude_home = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_home))
    return _lay_out_session(claude_home, workspace)


def test_the_store_error_names_the_store_switches_and_the_path_as_given(
    session: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    url = f"sqlite:///{blocker}/store.db"  # four slashes: SQLAlchemy's absolute path
    monkeypatch.setenv("PASSDOWN_STORE", url)
    assert main(["export", "--from", "claude"]) == 9
    error, hint = capsys.readouterr().err.splitlines()[:2]
    assert error.startswith(f"passdown: error: SQLite store {url}: ")
    assert f" /{blocker}" not in error.replace(url, ""), "no //path: the path as given"
    assert "--no-store" in hint and "PASSDOWN_STORE" in hint and "--out" not in hint
    assert not (Path.cwd() / ".agent-handoff").exists()
    assert main(["export", "--from", "claude", "--no-store"]) == 0  # as the hint says


def test_a_four_slash_sqlite_url_opens_the_absolute_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "store.db"
    assert main(["find", "--store", f"sqlite:///{db}", "--project", "p"]) == 0
    assert db.is_file()


def test_an_ambiguous_session_prefix_counts_what_it_lists(
    session: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = session.read_text()
    for n in range(6):
        other = f"abcdef0{n}-0000-4000-8000-00000000c1a1"
        session.with_name(f"{other}.jsonl").write_text(text.replace(SESSION, other))
    assert main(["inspect", "--from", "claude", "--session", "abcdef"]) == 4
    error, hint = capsys.readouterr().err.splitlines()[:2]
    assert "matches 6 Claude Code sessions" in error
    listed = hint.split("(", 1)[1].rstrip(")")
    assert listed.count("abcdef0") == 5 and listed.endswith(" and 1 more")


def test_next_steps_hold_a_plan_item_once(
    session: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plan says "Add a test for shout()", the last message "Next step: add a test
    for shout()."; one step."""
    assert main(["inspect", "--from", "claude", "--json"]) == 0
    handoff = json.loads(capsys.readouterr().out)
    assert handoff["state"]["next_steps"] == ["Add a test for shout()"]
    assert main(["inspect", "--from", "claude"]) == 0
    markdown = capsys.readouterr().out
    section = markdown.split("## Next steps\n", 1)[1].split("\n## ", 1)[0]
    assert [line for line in section.splitlines() if line.startswith("- ")] == [
        "- Add a test for shout()"
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
def test_ui_stopped_with_ctrl_c_exits_0_with_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "passdown", "ui", "--port", "0", "--json"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        started = json.loads(proc.stdout.readline())  # printed once it listens
        assert started["url"].startswith("http://127.0.0.1:")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert err.splitlines() == ["passdown: ui stopped"]
    assert "aborted" not in err and out == ""
