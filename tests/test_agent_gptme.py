"""gptme 0.35: the recorded two-run conversation (tests/fixtures/sessions/gptme/full,
written by tests/e2e/test_gptme_real.py against the real `gptme` 0.35.1) through the
reader and the CLI; hand-made logs for both tool-call forms, every `todo write`
operation, gptme's loop-control nudges, hidden context, failed tools, bad and torn lines;
incremental reading window by window and incremental export; discovery (the `workspace`
symlink, config.toml, env overrides) and the launch argv; the session.end hook's
install/uninstall and its environment payload."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from agent_entry_points import register
from passdown._extract import extract
from passdown.agents.gptme import Gptme, logs_dir
from passdown.integrations._base import InstallTarget
from passdown.integrations._gptme import GptmeHooks
from passdown.transcript import Diagnostics, Message, ToolCall, ToolResult
from recorded import FIXTURES

RECORDED = FIXTURES / "gptme" / "full"
EXPECTED = json.loads((RECORDED / "expected.json").read_text())
SID = EXPECTED["session_id"]
PASSDOWN = [sys.executable, "-m", "passdown"]
WS = "/tmp/ws-gptme"


@pytest.fixture
def recorded_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(RECORDED, home, ignore=shutil.ignore_patterns("expected.json"))
    monkeypatch.setenv("HOME", str(home))
    for var in ("GPTME_LOGS_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)
    return home


def test_recorded_session(recorded_home: Path) -> None:
    agent = Gptme()
    [ref] = agent.sessions(Path(EXPECTED["workspace"]))  # found through its config.toml
    assert ref.session_id == SID and ref.cwd == EXPECTED["workspace"]
    transcript = agent.read(ref)
    events = list(transcript.events())
    users = [e.text for e in events if isinstance(e, Message) and e.role == "user"]
    assert users == EXPECTED["turns"]  # the system prompt and context notes are not requests
    said = [e.text for e in events if isinstance(e, Message) and e.role == "assistant"]
    assert said[-1] == EXPECTED["final_assistant_message"]
    assert not any("@save(" in text or "```todo" in text for text in said)
    [command] = [e for e in events if isinstance(e, ToolCall) and e.action == "command"]
    [result] = [e for e in events if isinstance(e, ToolResult) and e.call_id == command.call_id]
    assert command.command == EXPECTED["failing_command"]["command"]
    assert result.exit_code == 2 and result.is_error
    assert (result.error or "").startswith("ls: cannot access")
    edits = [(e.action, e.paths) for e in events if isinstance(e, ToolCall) and e.paths]
    assert edits == [("write", ("hello.txt",)), ("edit", ("hello.txt",))]
    ex = extract(iter(events), workspace=EXPECTED["workspace"])
    assert [{"subject": i.subject, "status": i.status} for i in ex.state.plan] == EXPECTED["plan"]
    info = transcript.info
    assert info.agent_version == EXPECTED["cli_version"] and info.models == [EXPECTED["model"]]
    assert info.started_at and info.updated_at and info.started_at.endswith("Z")
    assert transcript.diagnostics.summary() == []
    assert ex.ended.reason == "normal"


def test_recorded_handoff_through_the_cli(recorded_home: Path, tmp_path: Path) -> None:
    env = {
        "HOME": str(recorded_home),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": register(tmp_path / "site"),
        "PASSDOWN_DATA_DIR": str(tmp_path / "data"),
    }
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            *PASSDOWN,
            "export",
            "--from",
            "gptme",
            "--session",
            SID,
            *("--workspace", "."),
            *("--out", str(out), "--no-store"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "handoff.json").read_text())
    assert data["source"]["agent"] == "gptme" and data["source"]["session_id"] == SID
    assert data["task"]["original_request"] == EXPECTED["original_request"]
    assert data["task"]["latest_user_message"] == EXPECTED["latest_user_message"]
    assert [{k: p[k] for k in ("subject", "status")} for p in data["state"]["plan"]] == (
        EXPECTED["plan"]
    )
    assert [f["path"] for f in data["state"]["files_touched"]] == EXPECTED["files_touched"]
    failure = data["state"]["last_failure"]
    assert failure["command"] == EXPECTED["failing_command"]["command"]
    assert failure["exit_code"] == 2 and "No such file" in failure["error"]
    assert data["ended"]["reason"] == "normal"


# -- hand-made conversations -----------------------------------------------------------------
def _msg(role: str, content: str, **extra: object) -> dict[str, object]:
    return {"role": role, "content": content, "timestamp": "2026-11-30T18:00:00.5", **extra}


def _conversation(
    root: Path, lines: list[dict[str, object]] | bytes, *, name: str = "2026-11-30-a", cwd: str = WS
) -> Path:
    folder = root / ".local" / "share" / "gptme" / "logs" / name
    folder.mkdir(parents=True)
    body = (
        lines
        if isinstance(lines, bytes)
        else b"".join(json.dumps(x).encode() + b"\n" for x in lines)
    )
    (folder / "conversation.jsonl").write_bytes(body)
    os.symlink(cwd, folder / "workspace")
    return folder / "conversation.jsonl"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("GPTME_LOGS_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def _events(name: str = "2026-11-30-a") -> list[object]:
    agent = Gptme()
    return list(agent.read(agent.resolve(name, None)).events())


def _todo(*lines: str) -> str:
    return "Plan.\n```todo write\n" + "\n".join(lines) + "\n```"


MIXED = [
    _msg("system", "You are gptme v0.35.1, a general-purpose AI assistant.", pinned=True),
    _msg("system", "## Git Status", hide=True),
    _msg("user", "fix the tests"),
    _msg("assistant", _todo('add "Read the code"', 'add "Fix it"', 'add "Ship"')),
    _msg("system", "Added todo 1 ..."),
    _msg("assistant", _todo("update 1 completed", 'update 2 "Fix the bug"', "remove 3")),
    _msg("system", "Updated ..."),
    _msg("assistant", "Looking.\n```shell\nmake test\n```\n```save notes.md\nhi\n```"),
    _msg(
        "system",
        "Ran command: `make test`\n\n```stderr\nE   AssertionError: 1 != 2\n```\n\nReturn code: 1\n",
    ),
    _msg("system", "Saved to notes.md"),
    _msg("assistant", 'Patching.\n@patch(call_1): {"path": "/tmp/ws-gptme/a.py", "patch": "x"}'),
    _msg("system", "Error: patch failed: no match", call_id="call_1"),
    _msg("assistant", "@todo(call_2): {}"),  # tool form: gptme reads the list
    _msg("system", "Todo list ...", call_id="call_2"),
    _msg("user", "<system>No tool call detected in last message. Did you mean to finish?</system>"),
    _msg("assistant", "Done.", metadata={"model": "openai/gpt-x"}),
]


def test_both_call_forms_the_todo_operations_and_nudges(home: Path) -> None:
    _conversation(home, MIXED)
    agent = Gptme()
    transcript = agent.read(agent.resolve("2026-11-30-a", None))
    events = list(transcript.events())
    assert transcript.info.agent_version == "0.35.1"
    assert transcript.info.models == ["openai/gpt-x"]
    users = [e.text for e in events if isinstance(e, Message) and e.role == "user"]
    assert users == ["fix the tests"]  # the loop-control nudge is gptme's, not the user's
    said = [e.text for e in events if isinstance(e, Message) and e.role == "assistant"]
    assert said == ["Plan.", "Plan.", "Looking.", "Patching.", "Done."]
    ex = extract(iter(events), workspace=WS)
    assert [(i.id, i.subject, i.status) for i in ex.state.plan] == [
        ("1", "Read the code", "completed"),
        ("2", "Fix the bug", "pending"),
    ]
    assert [(c.command, c.exit_code, c.ok) for c in ex.state.commands] == [("make test", 1, False)]
    assert "AssertionError" in (ex.state.last_failure.error or "")  # type: ignore[union-attr]
    assert [f.path for f in ex.state.files_touched] == ["notes.md"]
    assert [(f.path, f.error) for f in ex.state.failed_edits] == [
        ("a.py", "Error: patch failed: no match")
    ]


def test_clear_and_clear_completed(home: Path) -> None:
    lines = [
        _msg("user", "go"),
        _msg("assistant", _todo('add "A"', 'add "B"', "update 1 completed", "clear completed")),
        _msg("system", "ok"),
    ]
    _conversation(home, lines)
    ex = extract(iter(_events()), workspace=WS)
    assert [(i.id, i.subject) for i in ex.state.plan] == [("2", "B")]
    _conversation(home, [*lines, _msg("assistant", _todo("clear")), _msg("system", "ok")], name="b")
    assert extract(iter(_events("b")), workspace=WS).state.plan == []


def test_bad_and_torn_lines_are_counted(home: Path) -> None:
    good = json.dumps(_msg("user", "hello")).encode()
    _conversation(home, b"not json\n" + good + b'\n{"role": "assistant", "cont')
    agent = Gptme()
    transcript = agent.read(agent.resolve("2026-11-30-a", None))
    events = list(transcript.events())
    assert [e.text for e in events if isinstance(e, Message)] == ["hello"]
    assert transcript.diagnostics.bad_lines == 1 and transcript.diagnostics.torn_last_line


def test_incremental_reading_gives_what_read_gives(home: Path) -> None:
    path = _conversation(home, MIXED)
    agent = Gptme()
    whole = list(agent.read(agent.resolve("2026-11-30-a", None)).events())
    data = path.read_bytes()
    cut = data.index(b"\n", data.index(b"make test")) + 1  # between a call and its result
    info = agent.read(agent.resolve("2026-11-30-a", None)).info
    first = agent.resumable_reader(info, Diagnostics(), None, {})
    events = list(first.events(io.BytesIO(data[:cut])))
    pending = {e.call_id: e for e in events if isinstance(e, ToolCall)}
    state = msgspec.json.decode(msgspec.json.encode(first.state()))
    second = agent.resumable_reader(info, Diagnostics(), state, pending)
    events += list(second.events(io.BytesIO(data[cut:])))
    events += list(second.close())
    assert [repr(e) for e in events] == [repr(e) for e in whole]


def test_incremental_export_of_the_growing_recorded_session_equals_a_full_read(
    recorded_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from passdown import _checkpoint as checkpoint
    from passdown import _pipeline as pipeline

    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "data"))
    agent = Gptme()
    [ref] = agent.sessions(Path(EXPECTED["workspace"]))
    body = ref.path.read_bytes()
    workspace = tmp_path / "ws"
    workspace.mkdir()

    def handoff(incremental: bool) -> dict[str, object]:
        if incremental:
            monkeypatch.delenv(checkpoint.DISABLE_ENV, raising=False)
        else:
            monkeypatch.setenv(checkpoint.DISABLE_ENV, "1")
        selection = pipeline.Selection(
            agent=agent, ref=agent.ref_for_path(ref.path), workspace=workspace
        )
        data = pipeline.build_handoff(selection).model_dump(mode="json")
        del data["id"], data["created_at"]
        return data

    start = body.index(b"\n", body.index(b'"role": "user"')) + 1  # after the first request
    rest = len(body) - start
    for cut in [start, start + rest // 3 + 7, start + rest * 2 // 3, len(body) - 40, len(body)]:
        ref.path.write_bytes(body[:cut])
        assert handoff(True) == handoff(False)
    assert checkpoint.checkpoint_path("gptme", ref.path).exists()
    assert handoff(True)["task"]["latest_user_message"] == EXPECTED["latest_user_message"]  # type: ignore[index]


def test_discovery_by_workspace_and_the_config_fallback(home: Path) -> None:
    _conversation(home, [_msg("user", "a")], name="in-ws")
    _conversation(home, [_msg("user", "b")], name="sub", cwd=f"{WS}/pkg")
    _conversation(home, [_msg("user", "c")], name="other", cwd="/elsewhere")
    folder = logs_dir() / "no-link"
    folder.mkdir()
    (folder / "conversation.jsonl").write_text(json.dumps(_msg("user", "d")) + "\n")
    (folder / "config.toml").write_text(f'[chat]\nworkspace = "{WS}"\nname = "Named"\n')
    (logs_dir() / "empty").mkdir()  # no conversation.jsonl: not a session
    agent = Gptme()
    assert {r.session_id for r in agent.sessions(Path(WS))} == {"in-ws", "sub", "no-link"}
    assert len(agent.sessions(None)) == 4
    ref = agent.ref_for_path(folder)
    assert ref.path == folder / "conversation.jsonl" and ref.cwd == WS
    transcript = agent.read(ref)
    assert [e.text for e in transcript.events() if isinstance(e, Message)] == ["d"]
    assert transcript.info.title == "Named"  # [chat] name


def test_logs_folder_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GPTME_LOGS_HOME", str(tmp_path / "logs"))
    assert Gptme().store_roots() == [tmp_path / "logs"]
    monkeypatch.delenv("GPTME_LOGS_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert logs_dir() == tmp_path / "xdg" / "gptme" / "logs"
    assert Gptme().sessions(None) == []


def test_launch_argv_keeps_a_dash_prompt_one_argument(tmp_path: Path) -> None:
    agent = Gptme()
    spec = agent.launch_spec("-r is no flag here", workspace=tmp_path, interactive=False)
    assert spec.argv == ["gptme", "-n", "--", "-r is no flag here"] and spec.cwd == tmp_path
    assert agent.launch_spec("go", workspace=tmp_path, interactive=True).argv == [
        "gptme",
        "--",
        "go",
    ]


# -- the session.end hook ------------------------------------------------------------------------
ORIGINAL = '# mine\n[user]\nname = "User"\n\n[hooks]\nscripts = []\n'


def test_hook_install_keeps_the_config_and_uninstall_is_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    target = InstallTarget("gptme", "user", tmp_path, "/opt/bin/passdown")
    [(path, install, uninstall)] = GptmeHooks().plan(target)
    assert path == tmp_path / "cfg" / "gptme" / "config.toml"
    for original in (ORIGINAL, None, '[[hooks.scripts]]\nevent = "session.start"\ncommand = "x"\n'):
        installed = install(original)
        assert installed is not None and "/opt/bin/passdown hook gptme" in installed
        assert "session.start" not in installed.replace('"session.start"\ncommand = "x"', "")
        assert install(installed) == installed  # idempotent: the same bytes
        assert uninstall(installed) == (original or "")
    with pytest.raises(Exception, match="user config"):
        GptmeHooks().plan(InstallTarget("gptme", "project", tmp_path, "passdown"))


def test_hook_payload_comes_from_gptmes_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logdir = tmp_path / "logs" / "2026-11-30-a"
    monkeypatch.setenv("GPTME_HOOK_EVENT", "session.end")
    monkeypatch.setenv("GPTME_LOGDIR", str(logdir))
    monkeypatch.setenv("GPTME_WORKSPACE", WS)
    hooks = GptmeHooks()
    assert not hooks.wants_stdin([])  # never waits on an inherited stdin
    payload = hooks.payload([], None)
    assert hooks.event(payload) == "session_end"
    assert hooks.session_spec(payload) == str(logdir / "conversation.jsonl")
    assert hooks.session_id(payload) == "2026-11-30-a" and hooks.cwd(payload) == WS


def test_the_hook_process_reads_gptmes_environment_never_stdin(
    recorded_home: Path, tmp_path: Path
) -> None:
    """`passdown hook gptme` as gptme runs it (payload in GPTME_*; a stdin left open that
    it must not wait for): the recorded conversation is handed off in the workspace."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    logdir = recorded_home / ".local" / "share" / "gptme" / "logs" / SID
    env = {
        "HOME": str(recorded_home),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": register(tmp_path / "site"),
        "PASSDOWN_DATA_DIR": str(tmp_path / "data"),
        "GPTME_HOOK_EVENT": "session.end",
        "GPTME_LOGDIR": str(logdir),
        "GPTME_WORKSPACE": str(workspace),
        "GPTME_MODEL": "local/scripted-model",
    }
    with subprocess.Popen(
        [*PASSDOWN, "hook", "gptme"],
        cwd=workspace,
        env=env,
        stdin=subprocess.PIPE,  # never closed: a hook reading it would hang
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        proc.wait(timeout=120)
        assert proc.returncode == 0
        out, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    assert out == b"" and err == b""
    handoff = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())
    assert handoff["source"]["agent"] == "gptme" and handoff["source"]["session_id"] == SID
    assert handoff["task"]["latest_user_message"] == EXPECTED["latest_user_message"]
    assert "ok gptme session_end" in (tmp_path / "data" / "logs" / "hooks.log").read_text()


def test_incremental_export_reads_a_conversation_an_undo_rewrote_anew(
    recorded_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gptme's /undo and edits write the conversation anew (a new file, fewer lines):
    the export after one continued from a checkpoint equals a full read, not the old
    lines plus the new ones."""
    from passdown import _checkpoint as checkpoint
    from passdown import _pipeline as pipeline

    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv(checkpoint.DISABLE_ENV, raising=False)
    agent = Gptme()
    [ref] = agent.sessions(Path(EXPECTED["workspace"]))
    workspace = tmp_path / "ws"
    workspace.mkdir()

    def handoff() -> dict[str, object]:
        selection = pipeline.Selection(
            agent=agent, ref=agent.ref_for_path(ref.path), workspace=workspace
        )
        data = pipeline.build_handoff(selection).model_dump(mode="json")
        del data["id"], data["created_at"]
        return data

    lines = ref.path.read_bytes().splitlines(keepends=True)
    assert handoff()["task"]["latest_user_message"] == SECOND_TURN  # type: ignore[index]
    assert checkpoint.checkpoint_path("gptme", ref.path).exists()
    second = next(i for i, line in enumerate(lines) if SECOND_TURN.encode() in line)
    redo = json.dumps(_msg("user", "Do something else instead.")).encode() + b"\n"
    ref.path.write_bytes(b"".join(lines[:second]) + redo)  # undone back to the first run
    after = handoff()
    assert after["task"]["latest_user_message"] == "Do something else instead."  # type: ignore[index]
    monkeypatch.setenv(checkpoint.DISABLE_ENV, "1")
    assert after == handoff()


SECOND_TURN = EXPECTED["latest_user_message"]


def _error_line(kind: str, message: str) -> dict[str, object]:
    """gptme's record of a request it gave up on (gptme/cli/main.py, as 0.35.1 writes it)."""
    return {
        "role": "system",
        "content": f"error: {kind}\n{message}",
        "timestamp": "2026-11-30T18:01:00+00:00",
        "metadata": {"error": True, "error_class": kind, "exit_code": 75},
    }


@pytest.mark.parametrize(
    ("kind", "message", "reason"),
    [
        (
            "rate_limit",
            "Error code: 429 - {'error': {'message': 'Rate limit reached'}}",
            "rate_limit",
        ),
        ("auth_error", "Error code: 401 - {'error': {'message': 'bad key'}}", "auth"),
        ("generic", "Error code: 500 - {'error': {'message': 'boom'}}", "error"),
    ],
)
def test_a_request_gptme_gave_up_on_ends_the_run(
    home: Path, kind: str, message: str, reason: str
) -> None:
    _conversation(home, [_msg("user", "go"), _error_line(kind, message)])
    ex = extract(iter(_events()), workspace=WS)
    assert ex.ended.reason == reason
    assert "gptme gave up" in (ex.ended.message or "")
    assert ex.ended.at == "2026-11-30T18:01:00.000Z"
    # the user went on and gptme answered: the session recovered
    more = [_msg("user", "go"), _error_line(kind, message), _msg("user", "again")]
    _conversation(home, [*more, _msg("assistant", "Done.")], name="b")
    assert extract(iter(_events("b")), workspace=WS).ended.reason == "normal"
