"""Mistral Vibe 3.0: the recorded two-turn session (tests/fixtures/sessions/vibe/full, written
by `tests/e2e/test_vibe_real.py` against the real `mistral-vibe` 3.0.3) through the reader
and the CLI, and the same session as a post_agent hook sees it (its last turn only in the
recovery journal); the recorded turn a sticky 429 ended; hand-made endings (a failed
request, an interrupt); a store that lies (chunk names that are paths, a missing chunk, a
broken CURRENT); launch argv; the hooks.toml edit and a hook run; a grown session."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import tomlkit

from agent_checks import (
    Launch,
    PassdownCLI,
    agent_fixtures,
    check_launch,
    copy_recorded,
    hooks_installed,
)
from agent_entry_points import register
from passdown._extract import extract
from passdown.agents.vibe import MistralVibe
from passdown.errors import UsageError
from passdown.integrations._base import InstallTarget
from passdown.integrations._vibe import VibeHooks
from passdown.transcript import Event, Message, PlanOp, SessionEnding, ToolCall, ToolResult
from recorded import FIXTURES

RECORDED = FIXTURES / "vibe" / "full"
EXPECTED = json.loads((RECORDED / "expected.json").read_text())
SID = EXPECTED["session_id"]
WS = EXPECTED["workspace"]


home, cli = agent_fixtures(register, "VIBE_HOME")


def _install(source: Path, home: Path) -> Path:
    copy_recorded(source, home, "*.json.md")
    return home / ".vibe" / "logs" / "session" / "unified"


def _events(workspace: str = WS) -> tuple[list[Event], MistralVibe]:
    agent = MistralVibe()
    [ref] = agent.sessions(Path(workspace))
    transcript = agent.read(ref)
    events = list(transcript.events())
    assert transcript.diagnostics.summary() == [], transcript.diagnostics.summary()
    return events, agent


def test_recorded_session(home: Path) -> None:
    _install(RECORDED, home)
    agent = MistralVibe()
    [ref] = agent.sessions(Path(WS))
    assert ref.session_id == SID and ref.path.name == "CURRENT" and ref.cwd == WS
    events, _ = _events()
    users = [e.text for e in events if isinstance(e, Message) and e.role == "user"]
    assert users == [EXPECTED["original_request"], EXPECTED["latest_user_message"]]
    said = [e.text for e in events if isinstance(e, Message) and e.role == "assistant"]
    assert said[-1] == EXPECTED["final_assistant_message"]
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    [command] = [e for e in events if isinstance(e, ToolCall) and e.action == "command"]
    assert command.command == EXPECTED["failing_command"]["command"]
    # Vibe records the failed bash as outcome "success": its returncode says it failed
    assert results[command.call_id].exit_code == 2 and results[command.call_id].is_error
    assert "No such file" in (results[command.call_id].error or "")
    edits = [(e.action, e.paths) for e in events if isinstance(e, ToolCall) and e.paths]
    assert edits == [("write", ("hello.txt",)), ("edit", (f"{WS}/hello.txt",))]
    final_plan = [
        e for e in events if isinstance(e, PlanOp) or (isinstance(e, ToolCall) and e.plan)
    ]
    last = final_plan[-1]
    plan = last.plan if isinstance(last, ToolCall) else last
    assert plan is not None
    assert [{"subject": i.subject, "status": i.status} for i in plan.items] == EXPECTED["plan"]
    assert not any(isinstance(e, SessionEnding) for e in events)


def test_recorded_handoff_through_the_cli(home: Path, cli: PassdownCLI) -> None:
    _install(RECORDED, home)
    data = cli.export("vibe", SID[:8])
    assert data["source"]["session_id"] == SID and data["source"]["agent"] == "vibe"
    assert data["source"]["models"] == ["scripted-model"]
    assert data["task"]["original_request"] == EXPECTED["original_request"]
    assert data["task"]["latest_user_message"] == EXPECTED["latest_user_message"]
    plan = [{k: p[k] for k in ("subject", "status")} for p in data["state"]["plan"]]
    assert plan == EXPECTED["plan"]
    failure = data["state"]["last_failure"]
    assert failure["command"] == EXPECTED["failing_command"]["command"]
    assert failure["exit_code"] == 2 and "No such file" in failure["error"]
    assert data["ended"]["reason"] == "normal"


def _as_the_hook_sees_it(unified: Path) -> Path:
    """The store while the second turn's post_agent hook runs: CURRENT still names the
    first turn's generation; the second turn is only in the journal after it."""
    folder = unified / SID
    generations = sorted((folder / "generations").iterdir())
    first, last = generations[0], generations[-1]
    shutil.rmtree(last)
    current = json.loads((folder / "CURRENT").read_text())
    current.update(generation=first.name, snapshot_sequence=int(first.name))
    (folder / "CURRENT").write_text(json.dumps(current))
    return folder


def test_a_turn_still_in_the_journal_is_read(home: Path) -> None:
    """A post_agent hook runs before Vibe writes the turn's generation: the reader replays
    the recovery journal after the newest snapshot, so the hook's handoff has the turn."""
    unified = _install(RECORDED, home)
    full, _ = _events()
    _as_the_hook_sees_it(unified)
    hooked, _ = _events()
    full_ex, hooked_ex = extract(iter(full), workspace=WS), extract(iter(hooked), workspace=WS)
    assert hooked_ex.task.latest_user_message == EXPECTED["latest_user_message"]
    assert hooked_ex.task.latest_progress == EXPECTED["final_assistant_message"]
    assert [(p.subject, p.status) for p in hooked_ex.state.plan] == [
        (p.subject, p.status) for p in full_ex.state.plan
    ]
    assert {f.path for f in hooked_ex.state.files_touched} == {"hello.txt"}
    assert [(c.command, c.exit_code) for c in hooked_ex.state.commands] == [
        (c.command, c.exit_code) for c in full_ex.state.commands
    ]


def test_a_sticky_429_recorded_ends_on_a_rate_limit(home: Path) -> None:
    """tests/fixtures/sessions/vibe/ratelimit: the real Vibe with a 1 s retry budget and a
    server that always answers 429: the turn's outcome is `failed`, a rate limit."""
    unified = _install(FIXTURES / "vibe" / "ratelimit", home)
    [folder] = list(unified.iterdir())
    agent = MistralVibe()
    events = list(agent.read(agent.ref_for_path(folder / "CURRENT")).events())
    endings = [e for e in events if isinstance(e, SessionEnding)]
    assert endings and endings[-1].reason == "rate_limit" and "429" in (endings[-1].message or "")
    assert extract(iter(events), workspace=None).ended.reason == "rate_limit"


# -- hand-made stores --------------------------------------------------------------------------
def _store(
    home: Path, context: list[object], *, turn: object = None, journal: list[object] = ()
) -> Path:
    folder = home / ".vibe" / "logs" / "session" / "unified" / "s1"
    (folder / "generations" / "0000000000000005").mkdir(parents=True)
    (folder / "chunks").mkdir()
    (folder / "journal").mkdir()
    digest = "a" * 64
    (folder / "chunks" / f"{digest}.json").write_text(json.dumps(context))
    gen = folder / "generations" / "0000000000000005"
    manifest = {"checkpoint": {"chunks": [digest], "path": "checkpoint.json"}}
    (gen / "manifest.json").write_text(json.dumps(manifest))
    (gen / "checkpoint.json").write_text(json.dumps({"turn": turn or {"type": "idle"}}))
    current = {"generation": "0000000000000005", "snapshot_sequence": 5}
    (folder / "CURRENT").write_text(json.dumps(current))
    meta = {"environment": {"working_directory": "/tmp/ws-vibe"}, "config": {"model_name": "m"}}
    (folder / "meta.json").write_text(json.dumps(meta))
    lines = [
        json.dumps({"payload": r, "sequence": 6 + n, "type": t}) for n, (t, r) in enumerate(journal)
    ]  # type: ignore[misc]
    (folder / "journal" / "0000000000000006.jsonl").write_text("".join(f"{x}\n" for x in lines))
    return folder


def _user(text: str) -> dict[str, object]:
    return {"message": {"role": "user", "content": [{"type": "text", "text": text}]}}


def _read(folder: Path) -> list[Event]:
    agent = MistralVibe()
    return list(agent.read(agent.ref_for_path(folder / "CURRENT")).events())


@pytest.mark.parametrize(
    ("turn", "reason", "words"),
    [
        (
            {
                "type": "terminal",
                "outcome": {
                    "type": "failed",
                    "error": {
                        "code": "model_unauthorized",
                        "message": "Invalid API key",
                        "details": {"httpStatus": 401},
                    },
                },
            },
            "auth",
            "Invalid API key",
        ),
        (
            {"type": "terminal", "outcome": {"type": "interrupted", "reason": "client interrupt"}},
            "interrupted",
            "client interrupt",
        ),
        ({"type": "terminal", "outcome": {"type": "completed"}}, None, None),
    ],
)
def test_how_the_last_turn_ended(
    home: Path, turn: object, reason: str | None, words: str | None
) -> None:
    events = _read(_store(home, [_user("Say hi.")], turn=turn))
    endings = [e for e in events if isinstance(e, SessionEnding)]
    if reason is None:
        assert endings == []
    else:
        assert [e.reason for e in endings] == [reason] and words in (endings[0].message or "")


def test_journal_records_after_the_snapshot(home: Path) -> None:
    """Records up to the snapshot are in the generation already and are skipped; a
    failed request and an interrupt in the journal end the turn."""
    old = (
        "core_input",
        {
            "input": {
                "command": {"type": "user_message", "content": [{"type": "text", "text": "old"}]}
            }
        },
    )
    journal = [
        (
            "core_input",
            {
                "input": {
                    "command": {
                        "type": "user_message",
                        "content": [{"type": "text", "text": "again"}],
                    }
                }
            },
        ),
        ("action_intent", {"request": {"huge": "x" * 1000}}),
        (
            "action_result",
            {
                "result": {
                    "type": "completion_failed",
                    "error": {
                        "code": "model_rate_limited",
                        "message": "429 Too Many Requests: Rate limit reached",
                    },
                }
            },
        ),
    ]
    folder = _store(home, [_user("Say hi.")], journal=[old, *journal])
    # the first journal record (sequence 6) is made older than the snapshot
    current = json.loads((folder / "CURRENT").read_text())
    current["snapshot_sequence"] = 6
    (folder / "CURRENT").write_text(json.dumps(current))
    events = _read(folder)
    assert [e.text for e in events if isinstance(e, Message)] == ["Say hi.", "again"]
    [ending] = [e for e in events if isinstance(e, SessionEnding)]
    assert ending.reason == "rate_limit"


def test_a_store_that_lies_is_read_safely(home: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps([_user("not this session")]))
    folder = _store(home, [_user("Say hi.")])
    gen = folder / "generations" / "0000000000000005"
    manifest = {"checkpoint": {"chunks": ["../../../../secret", "b" * 64]}}
    (gen / "manifest.json").write_text(json.dumps(manifest))
    agent = MistralVibe()
    transcript = agent.read(agent.ref_for_path(folder / "CURRENT"))
    events = list(transcript.events())
    assert [e for e in events if isinstance(e, Message)] == []  # never outside the store
    assert transcript.diagnostics.bad_lines == 1
    assert any("could not read context chunk" in w for w in transcript.diagnostics.warnings)
    # CURRENT naming a path: the newest generation by number is read instead
    (folder / "CURRENT").write_text('{"generation": "../../x"}')
    (gen / "manifest.json").write_text(json.dumps({"checkpoint": {"chunks": ["a" * 64]}}))
    transcript = agent.read(agent.ref_for_path(folder / "CURRENT"))
    assert [e.text for e in transcript.events() if isinstance(e, Message)] == ["Say hi."]
    assert any("CURRENT is unreadable" in w for w in transcript.diagnostics.warnings)


def test_discovery_env_and_any_file_of_a_session(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VIBE_HOME", str(tmp_path / "elsewhere"))
    agent = MistralVibe()
    assert agent.store_roots() == [tmp_path / "elsewhere" / "logs" / "session" / "unified"]
    monkeypatch.delenv("VIBE_HOME")
    unified = _install(RECORDED, home)
    folder = unified / SID
    assert agent.sessions(Path("/nowhere")) == []
    for inner in (folder / "meta.json", next((folder / "chunks").iterdir())):
        assert agent.ref_for_path(inner).session_id == SID
    assert agent.resolve(SID[:6], None).path == folder / "CURRENT"
    # a sub-agent's session (the `task` tool) in the same folder is not the user's
    child = unified / "child-session"
    shutil.copytree(folder, child)
    meta = json.loads((child / "meta.json").read_text())
    (child / "meta.json").write_text(json.dumps({**meta, "parent_session_id": SID}))
    os.utime(child / "CURRENT", (2e9, 2e9))  # newer than the parent
    assert [r.session_id for r in agent.sessions(Path(WS))] == [SID]
    assert agent.ref_for_path(child / "CURRENT").session_id == "child-session"


# -- launching ---------------------------------------------------------------------------------
DASH = "-c is no flag: continue"
LONG = "x" * (70 * 1024)
LAUNCHES = [
    Launch(DASH, False, ("vibe", "--auto-approve", f"--prompt={DASH}")),
    Launch(DASH, True, ("vibe", "--", DASH)),
    Launch(LONG, False, ("vibe", "--auto-approve", "--prompt-file", "{file}")),
    Launch(LONG, True, ("vibe", "--", "Read {file} and follow it.")),
]


@pytest.mark.parametrize("launch", LAUNCHES, ids=str)
def test_launch_argv(launch: Launch, tmp_path: Path) -> None:
    check_launch(MistralVibe(), launch, tmp_path, "vibe-prompt.md")


# -- hooks -------------------------------------------------------------------------------------
MINE = '# my hooks\n[[hooks]]\nname = "lint"\ntype = "post_agent"\ncommand = "make lint"\n'


def _target(tmp_path: Path, scope: str = "user") -> InstallTarget:
    return InstallTarget("vibe", scope, tmp_path, "/opt/bin/passdown")


def test_hooks_toml_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIBE_HOME", str(tmp_path / "v"))
    hooks = VibeHooks()
    [(path, install, uninstall)] = hooks.plan(_target(tmp_path))
    assert path == tmp_path / "v" / "hooks.toml"
    installed = install(MINE)
    assert installed is not None and installed.startswith(MINE)
    entries = tomlkit.parse(installed)["hooks"]
    assert [(h["name"], h["type"], h["command"], h.get("match")) for h in entries][1:] == [
        ("passdown-handoff", "post_agent", "/opt/bin/passdown hook vibe", "main")
    ]
    assert install(installed) == installed
    edited = installed.replace('"make lint"', '"make check"')
    assert uninstall(edited) == MINE.replace('"make lint"', '"make check"')
    assert uninstall(MINE) == MINE
    [(project, _, _)] = hooks.plan(_target(tmp_path, "project"))
    assert project == tmp_path / ".vibe" / "hooks.toml"
    with pytest.raises(UsageError, match="not valid TOML"):
        install("[[hooks]\n")
    path.parent.mkdir(parents=True)
    path.write_text(installed)
    assert [(r.what, r.program) for r in hooks.commands(_target(tmp_path))] == [
        ("hook post_agent", "/opt/bin/passdown")
    ]


def test_install_and_uninstall_are_byte_exact_and_the_hook_writes_the_handoff(
    home: Path, tmp_path: Path, cli: PassdownCLI
) -> None:
    """Through the CLI: `passdown install vibe` into the user's own hooks.toml, a hook run
    with the payload Vibe sends (recorded: post_agent, transcript_path = the folder), then
    `passdown uninstall vibe` gives the file back byte for byte."""
    unified = _install(RECORDED, home)
    user_file = home / ".vibe" / "hooks.toml"
    with hooks_installed(cli, "vibe", user_file, MINE):
        assert "hook vibe" in user_file.read_text()
        workspace = tmp_path / "ws"
        workspace.mkdir()
        payload = {
            "session_id": SID,
            "transcript_path": str(unified / SID),
            "cwd": str(workspace),
            "parent_session_id": None,
            "hook_event_name": "post_agent",
            "agent_name": "accept-edits",
        }
        hook = cli("hook", "vibe", stdin=json.dumps(payload))
        assert hook.returncode == 0 and hook.stdout == ""  # Vibe wants nothing printed
        log = cli.hooks_log()
        assert "ok vibe turn_complete" in log, log
        handoff = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())
        assert handoff["source"]["session_id"] == SID
        assert handoff["task"]["latest_user_message"] == EXPECTED["latest_user_message"]


# -- growth ------------------------------------------------------------------------------------
def test_a_grown_session_stays_in_budget(home: Path) -> None:
    """The recorded turn's shape repeated 3,000 times (a plan write, a file write, a failing
    command each): the handoff keeps bounded lists and what matters most survives."""
    from passdown.handoff import COMMANDS_KEEP, FILES_KEEP
    from passdown.transcript import PLAN_KEEP

    context: list[object] = [_user("the first request")]
    for n in range(3000):
        todos = [{"id": str(n), "content": f"task {n}", "status": "pending"}]
        context += [
            _call(f"t{n}", "todo", {"action": "write", "todos": todos}),
            _result(f"t{n}", "todo", '{"verb": "Updated"}'),
            _call(f"w{n}", "write_file", {"path": f"f{n}.py", "content": "x"}),
            _result(f"w{n}", "write_file", '{"bytes_written": 1}'),
            _call(f"c{n}", "bash", {"command": f"pytest -k t{n}"}),
            _result(
                f"c{n}", "bash", json.dumps({"returncode": 1, "stderr": "E   boom", "stdout": ""})
            ),
        ]
    events = _read(_store(home, context))
    ex = extract(iter(events), workspace="/tmp/ws-vibe")
    assert ex.task.original_request == "the first request"
    assert len(ex.state.plan) <= 2 * PLAN_KEEP and len(ex.state.commands) <= COMMANDS_KEEP
    assert len(ex.state.files_touched) <= FILES_KEEP
    assert ex.state.last_failure is not None and ex.state.last_failure.command == "pytest -k t2999"
    assert [p.subject for p in ex.state.plan] == ["task 2999"]


def _call(call_id: str, name: str, args: dict[str, object]) -> dict[str, object]:
    part = {
        "type": "tool_call",
        "id": call_id,
        "name": name,
        "arguments": {"raw": json.dumps(args), "value": args},
    }
    return {"message": {"role": "assistant", "content": [part]}}


def _result(call_id: str, name: str, text: str) -> dict[str, object]:
    return {
        "message": {
            "role": "tool",
            "name": name,
            "tool_call_id": call_id,
            "outcome": "success",
            "content": [{"type": "text", "text": text}],
        }
    }
