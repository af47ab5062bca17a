"""Attributing git's changes from a hook (issue 12): the commands an export keeps to
explain a change are bounded (only those that could write a file, the most recent
within a cap), and a hook, which loads only its own agent, still sees a concurrent
session of any other agent with a session store on this machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from passdown import _seen as seen_module
from passdown._seen import SeenEvents, could_write_files
from passdown.transcript import Message, ToolCall
from test_doors import Session, repo

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "command",
    [
        "sed -i 's/x/y/' README.md",
        "git mv a.py b.py",
        "git rm -q old.py",
        "git -C sub checkout -- a.py",
        "cp a.py b.py && rm a.py",
        "echo hi > notes.txt",
        "cat <<'EOF' > a.py\nA = 1\nEOF",
        "python - <<'PY'\nfrom pathlib import Path\nPath('a.py').write_text('A = 1')\nPY",
        "apply_patch <<'EOF'\n*** Add File: a.py\nEOF",
        "find . -name '*.pyc' -delete",
        "ls | xargs rm",
        "grep -l x *.py | tee hits.txt",
        "cat $(touch made.txt)",
        "npm install",
    ],
)
def test_commands_that_could_write_a_file_are_kept(command: str) -> None:
    assert could_write_files(command)


@pytest.mark.parametrize(
    "command",
    [
        "ls -la src",
        "cat a.py | grep -n def",
        "sed -n '1,40p' a.py",
        "rg -n 'def add' src/ && wc -l src/a.py",
        "git status --short",
        "git -C sub diff HEAD -- a.py",
        "git log --oneline -5 2>&1",
        "LC_ALL=C grep -r TODO . >/dev/null 2>&1",
        "find . -name '*.py'",
        "cd src; pwd",
    ],
)
def test_commands_that_only_read_are_not_kept(command: str) -> None:
    assert not could_write_files(command)


def calls(commands: list[str]) -> list[ToolCall | Message]:
    return [ToolCall(call_id=f"c{n}", name="Bash", command=c) for n, c in enumerate(commands)]


def test_seen_events_keep_distinct_writing_commands_within_the_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(seen_module, "MAX_KEPT_COMMANDS", 3)
    seen = SeenEvents()
    events = calls(["cat a.py", "cp a b", "ls", "cp a b", "rm c", "sed -i s/x/y/ d", "mv e f"])
    events.append(Message(role="user", text="go"))
    assert list(seen.watch(iter(events))) == events  # every event passes through
    assert seen.count == 8
    # reads dropped, duplicates once, the least recently used beyond the cap gone
    assert seen.commands == ["rm c", "sed -i s/x/y/ d", "mv e f"]
    list(seen.watch(iter(calls(["rm c", "touch g"]))))
    assert seen.commands == ["mv e f", "rm c", "touch g"]  # `rm c` used again: kept


def test_seen_events_bound_the_characters_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seen_module, "MAX_KEPT_COMMAND_CHARS", 100)
    seen = SeenEvents()
    big = "cat <<EOF > big.txt\n" + "x" * 200 + "\nEOF"
    list(seen.watch(iter(calls(["rm a", "rm b", big]))))
    assert seen.commands == [big]  # over the bound alone: the newest still kept
    list(seen.watch(iter(calls(["rm c"]))))
    assert seen.commands == ["rm c"]


def test_commands_restored_from_a_checkpoint_are_kept_as_if_seen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(seen_module, "MAX_KEPT_COMMANDS", 2)
    full = SeenEvents()
    list(full.watch(iter(calls(["rm a", "ls", "rm b", "rm c", "rm d"]))))
    resumed = SeenEvents()
    # a checkpoint of an older passdown kept every command, reads and all
    resumed.commands = ["rm a", "ls", "rm b", "rm c"]
    list(resumed.watch(iter(calls(["rm d"]))))
    assert resumed.commands == full.commands == ["rm c", "rm d"]


def codex_rollout(codex_home: Path, ws: Path, session_id: str, mtime: float) -> Path:
    """A Codex rollout that ran in `ws` and added b.py through apply_patch."""

    def line(kind: str, payload: dict[str, object], second: int) -> str:
        stamp = f"2026-11-29T10:01:{second:02d}.000Z"
        return json.dumps({"timestamp": stamp, "type": kind, "payload": payload}) + "\n"

    patch = "*** Begin Patch\n*** Add File: b.py\n+B = 2\n*** End Patch\n"
    lines = [
        line(
            "session_meta",
            {
                "id": session_id,
                "timestamp": "2026-11-29T10:01:00.000Z",
                "cwd": str(ws),
                "cli_version": "0.171.0",
            },
            0,
        ),
        line(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Write b.py"}],
            },
            1,
        ),
        line(
            "response_item",
            {
                "type": "custom_tool_call",
                "call_id": "call_1",
                "name": "apply_patch",
                "input": patch,
            },
            2,
        ),
        line(
            "response_item",
            {"type": "custom_tool_call_output", "call_id": "call_1", "output": "Success."},
            3,
        ),
    ]
    folder = codex_home / "sessions" / "2026" / "11" / "29"
    folder.mkdir(parents=True)
    path = folder / f"rollout-2026-11-29T10-01-00-{session_id}.jsonl"
    path.write_text("".join(lines))
    os.utime(path, (mtime, mtime))
    return path


def test_a_hook_sees_a_concurrent_session_of_another_agent(tmp_path: Path) -> None:
    ws = repo(tmp_path / "ws")
    now = 2_000_000_000.0
    claude = (
        Session("aaaa0000-0000-4000-8000-00000000000a", ws, start_minute=0)
        .user("Write a.py")
        .tool("Write", {"file_path": str(ws / "a.py"), "content": "A = 1\n"})
        .assistant("Done with a.py.")
        .write(mtime=now)
    )
    codex_rollout(Path(os.environ["CODEX_HOME"]), ws, "01a22926-0000-7000-8000-0000000000bb", now)
    (ws / "a.py").write_text("A = 1\n")
    (ws / "b.py").write_text("B = 2\n")
    (ws / "c.txt").write_text("nobody's\n")
    payload = {
        "hook_event_name": "SessionEnd",
        "session_id": claude.stem,
        "transcript_path": str(claude),
        "cwd": str(ws),
        "reason": "exit",
    }
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("PASSDOWN_AGENTS")  # as an agent runs it: the hook limits it to its own agent
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", "hook", "claude"],
        input=json.dumps(payload),
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    log = (Path(os.environ["PASSDOWN_DATA_DIR"]) / "logs" / "hooks.log").read_text()
    assert " ok claude session_end stored=handoff-" in log, log
    state = json.loads((ws / ".agent-handoff" / "handoff.json").read_text())["state"]
    assert [f["path"] for f in state["files_touched"]] == ["a.py"]
    # b.py is the Codex session's work: neither this session's nor unexplained (the
    # README is the repository's first commit, made after the session started)
    assert [f["path"] for f in state["workspace_changes"]] == ["README.md", "c.txt"]


def test_long_commands_skip_the_cache_and_are_judged_the_same() -> None:
    long_read = "cat " + "a" * 5000
    assert not could_write_files(long_read) and could_write_files(long_read + " > out.txt")
    assert not could_write_files("cat a") and could_write_files("cat a > out.txt")
