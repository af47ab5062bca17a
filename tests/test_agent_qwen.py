"""Qwen Code: the recorded real session (0.24.4) and hand-made trees for what the format
allows: rewinds onto dead branches, record fragments, compression, hidden reasoning,
torn and unknown lines, broken parent links, missing stores."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import event as tally
from hypothesis import example, given, settings
from hypothesis import strategies as st

from passdown._extract import extract
from passdown.agents._qwen_records import _FAST_RECORD, _decode, _lenient_record
from passdown.agents.qwen import QwenCode, encode_project
from passdown.transcript import Compaction, Diagnostics, Message, PlanOp, ToolResult
from recorded import FIXTURES, Recorded

WS = "/tmp/passdown-qwen/my_ws"
SID = "5e5e5e5e-1111-4222-8333-444455556666"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("QWEN_HOME", "QWEN_RUNTIME_DIR"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def _recorded() -> Recorded:
    root = FIXTURES / "qwen" / "full"
    return Recorded("qwen", "full", root, json.loads((root / "expected.json").read_text()))


class Tree:
    """A Qwen session file built record by record; each record's parent is the last one
    unless given."""

    def __init__(self, home: Path, workspace: str = WS, session_id: str = SID) -> None:
        chats = home / ".qwen" / "projects" / encode_project(workspace) / "chats"
        chats.mkdir(parents=True, exist_ok=True)
        self.path = chats / f"{session_id}.jsonl"
        self.workspace = workspace
        self.session_id = session_id
        self.lines: list[str] = []
        self.last: str | None = None
        self.n = 0

    def add(self, kind: str, *, parent: Any = ..., uuid: str | None = None, **extra: Any) -> str:
        self.n += 1
        uid = uuid or f"r{self.n:03d}"
        record = {
            "uuid": uid,
            "parentUuid": self.last if parent is ... else parent,
            "sessionId": self.session_id,
            "timestamp": f"2026-11-29T10:00:{self.n:02d}.000Z",
            "type": kind,
            "cwd": self.workspace,
            "version": "0.24.4",
            "gitBranch": "main",
            **extra,
        }
        self.lines.append(json.dumps(record))
        self.last = uid
        return uid

    def user(self, text: str, **extra: Any) -> str:
        return self.add(
            "user",
            provenance="real_user",
            message={"role": "user", "parts": [{"text": text}]},
            **extra,
        )

    def assistant(self, *parts: dict[str, Any], **extra: Any) -> str:
        return self.add(
            "assistant", model="qwen-test", message={"role": "model", "parts": list(parts)}, **extra
        )

    def result(
        self,
        cid: str,
        name: str,
        *,
        output: str | None = None,
        error: str | None = None,
        display: Any = "",
        **extra: Any,
    ) -> str:
        response = {"error": error} if error is not None else {"output": output or ""}
        return self.add(
            "tool_result",
            message={
                "role": "user",
                "parts": [{"functionResponse": {"id": cid, "name": name, "response": response}}],
            },
            toolCallResult={
                "callId": cid,
                "status": "error" if error is not None else "success",
                "resultDisplay": display,
            },
            **extra,
        )

    def write(self, *, newline: bool = True) -> Path:
        self.path.write_text("\n".join(self.lines) + ("\n" if newline and self.lines else ""))
        return self.path


def fc(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"functionCall": {"id": cid, "name": name, "args": args}}


def _read(path: Path) -> tuple[list[Any], Any]:
    agent = QwenCode()
    transcript = agent.read(agent.ref_for_path(path))
    return list(transcript.events()), transcript


def _texts(events: list[Any]) -> list[tuple[str, str]]:
    return [(e.role, e.text) for e in events if isinstance(e, Message) and not e.synthetic]


# -- the recorded real session ------------------------------------------------------------
def test_recorded_session_is_discovered_by_workspace(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _recorded()
    rec.install(home / "store", monkeypatch)
    agent = QwenCode()
    refs = agent.sessions(Path(rec.expected["workspace"]))
    assert [r.session_id for r in refs] == [rec.expected["session_id"]]
    assert refs[0].cwd == rec.expected["workspace"]
    assert agent.sessions(Path("/tmp/some-other-workspace")) == []


def test_recorded_session_extracts_what_the_agent_did(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _recorded()
    path = rec.install(home / "store", monkeypatch)
    exp = rec.expected
    events, transcript = _read(path)
    ex = extract(iter(events), workspace=exp["workspace"])
    assert ex.task.original_request == exp["original_request"]
    assert ex.task.latest_user_message == exp["latest_user_message"]
    assert ex.task.latest_progress == exp["final_assistant_message"]
    assert [t for r, t in _texts(events) if r == "user"] == exp["turns"]
    assert [(p.subject, p.status) for p in ex.state.plan] == [
        (p["subject"], p["status"]) for p in exp["plan"]
    ]
    assert {f.path for f in ex.state.files_touched} == set(exp["files_touched"])
    assert [f.path for f in ex.state.failed_edits] == exp["failed_edits"]
    assert [(c.command, c.exit_code) for c in ex.state.commands] == [
        (c["command"], c["exit_code"]) for c in exp["commands"]
    ]
    failing = exp["failing_command"]
    assert ex.state.last_failure is not None
    assert (ex.state.last_failure.command, ex.state.last_failure.exit_code) == (
        failing["command"],
        failing["exit_code"],
    )
    assert failing["error_line_contains"] in (ex.state.last_failure.error or "")
    assert "Directory:" not in (ex.state.last_failure.error or "")
    info = transcript.info
    assert (info.session_id, info.agent_version, info.git_branch) == (
        exp["session_id"],
        exp["cli_version"],
        "main",
    )
    assert info.models == [exp["model"]]
    assert transcript.sha256 and len(transcript.sha256) == 64
    diag = transcript.diagnostics
    assert (diag.bad_lines, diag.torn_last_line, diag.unknown_types, diag.off_branch_records) == (
        0,
        False,
        {},
        0,
    )


def test_plan_comes_from_todo_write_even_without_the_todo_file(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _recorded()
    path = rec.install(home / "store", monkeypatch)
    (home / "store" / ".qwen" / "todos" / f"{rec.expected['session_id']}.json").unlink()
    events, _ = _read(path)
    assert not any(isinstance(e, PlanOp) for e in events)
    ex = extract(iter(events), workspace=rec.expected["workspace"])
    assert [(p.subject, p.status) for p in ex.state.plan] == [
        (p["subject"], p["status"]) for p in rec.expected["plan"]
    ]
    assert ex.state.plan_source == "todo_write"


@pytest.mark.parametrize("var", ["QWEN_HOME", "QWEN_RUNTIME_DIR"])
def test_qwen_home_and_runtime_dir_override_home(
    var: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _recorded()
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    for other in ("QWEN_HOME", "QWEN_RUNTIME_DIR"):
        monkeypatch.delenv(other, raising=False)
    shutil.copytree(rec.root / ".qwen", tmp_path / "q")
    monkeypatch.setenv(var, str(tmp_path / "q"))
    agent = QwenCode()
    assert agent.store_roots() == [tmp_path / "q" / "projects"]
    refs = agent.sessions(Path(rec.expected["workspace"]))
    assert [r.session_id for r in refs] == [rec.expected["session_id"]]
    assert any(isinstance(e, PlanOp) for e in agent.read(refs[0]).events())  # todos/ found too


# -- the tree -------------------------------------------------------------------------------
def test_rewind_leaves_the_rewound_turn_on_a_dead_branch(home: Path) -> None:
    tree = Tree(home)
    tree.user("first request")
    a1 = tree.assistant({"text": "ok"})
    tree.user("a request the user took back")
    tree.assistant(fc("c1", "run_shell_command", {"command": "rm -rf build"}))
    tree.result("c1", "run_shell_command", error="Command: rm -rf build\nExit Code: 1")
    tree.add("system", parent=a1, subtype="rewind", systemPayload={"targetTurnIndex": 1})
    tree.user("the real second request")
    tree.assistant({"text": "final answer"})
    tree.add("system", subtype="ui_telemetry", systemPayload={"uiEvent": {}})
    events, transcript = _read(tree.write())
    assert _texts(events) == [
        ("user", "first request"),
        ("assistant", "ok"),
        ("user", "the real second request"),
        ("assistant", "final answer"),
    ]
    assert extract(iter(events), workspace=WS).state.commands == []
    assert transcript.diagnostics.off_branch_records == 3


def test_fragments_of_one_record_are_joined(home: Path) -> None:
    tree = Tree(home)
    tree.user("go")
    parent = tree.last
    uid = tree.assistant({"text": "part one"})
    tree.add("system", subtype="ui_telemetry", systemPayload={})  # a sibling, off the branch
    tree.assistant(
        {"text": "part two"},
        fc("c1", "write_file", {"file_path": f"{WS}/a.py", "content": "x"}),
        uuid=uid,
        parent=parent,
    )
    tree.result("c1", "write_file", output="ok")
    events, _ = _read(tree.write())
    assert _texts(events) == [("user", "go"), ("assistant", "part one\n\npart two")]
    assert [f.path for f in extract(iter(events), workspace=WS).state.files_touched] == ["a.py"]


def test_compression_record_gives_the_summary(home: Path) -> None:
    tree = Tree(home)
    tree.user("the original request")
    tree.assistant({"text": "early progress"})
    history = [
        {"role": "user", "parts": [{"text": "<state_snapshot>goal: ship it</state_snapshot>"}]},
        {"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]},
    ]
    tree.add(
        "system",
        subtype="chat_compression",
        systemPayload={"info": {"trigger": "manual"}, "compressedHistory": history},
    )
    tree.user("carry on")
    tree.assistant({"text": "latest"})
    events, _ = _read(tree.write())
    comp = [e for e in events if isinstance(e, Compaction)]
    assert len(comp) == 1 and comp[0].trigger == "manual" and "ship it" in (comp[0].summary or "")
    ex = extract(iter(events), workspace=WS)
    assert (ex.task.original_request, ex.task.latest_progress, ex.task.compactions) == (
        "the original request",
        "latest",
        1,
    )


def test_hidden_reasoning_and_injected_parts_are_never_exported(home: Path) -> None:
    tree = Tree(home)
    tree.add(
        "user",
        provenance="real_user",
        message={
            "role": "user",
            "parts": [
                {"text": "real prompt"},
                {"text": "<system-reminder>INJECTED</system-reminder>"},
                {
                    "text": "<qwen:user-prompt-submit-context>\nHOOK\n</qwen:user-prompt-submit-context>"
                },
            ],
        },
    )
    tree.assistant({"text": "SECRET-THOUGHT", "thought": True}, {"text": "visible"})
    tree.add(
        "user",
        provenance="system",
        subtype="notification",
        message={"role": "user", "parts": [{"text": "background task finished"}]},
    )
    events, _ = _read(tree.write())
    dumped = repr(events)
    assert "SECRET-THOUGHT" not in dumped and "INJECTED" not in dumped and "HOOK" not in dumped
    assert _texts(events) == [("user", "real prompt"), ("assistant", "visible")]
    assert [m.text for m in events if isinstance(m, Message) and m.synthetic] == [
        "background task finished"
    ]


def test_shell_exit_code_from_the_result_display_or_the_text(home: Path) -> None:
    tree = Tree(home)
    tree.user("run")
    tree.assistant(fc("c1", "run_shell_command", {"command": "make"}))
    tree.result(
        "c1",
        "run_shell_command",
        error="Command: make\nDirectory: (root)\nOutput: make: *** No rule\nError: (none)\nExit Code: 2",
        display={"type": "shell_result", "exitCode": 2, "output": "make: *** No rule"},
    )
    tree.assistant(fc("c2", "run_shell_command", {"command": "ls"}))
    tree.add(
        "tool_result",
        message={
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "c2",
                        "name": "run_shell_command",
                        "response": {"output": "Command: ls\nOutput: a\nExit Code: 0"},
                    }
                }
            ],
        },
    )
    events, _ = _read(tree.write())
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    assert (results["c1"].exit_code, results["c1"].is_error) == (2, True)
    assert (
        results["c1"].error
        and "No rule" in results["c1"].error
        and "Command:" not in results["c1"].error
    )
    assert (results["c2"].exit_code, results["c2"].is_error) == (0, False)


# -- bad input ---------------------------------------------------------------------------
def test_torn_last_line_and_unknown_types_do_not_raise(home: Path) -> None:
    tree = Tree(home)
    tree.user("hello")
    tree.add("hologram")
    tree.add("assistant", message={"role": "model", "parts": "not a list"})
    tree.assistant({"text": "reply"})
    tree.lines.append(
        '{"uuid": "zz", "parentUuid": "r004", "type": "user", "message": {"parts": [{"text": "cut'
    )
    events, transcript = _read(tree.write(newline=False))
    assert _texts(events) == [("user", "hello"), ("assistant", "reply")]
    diag = transcript.diagnostics
    assert diag.torn_last_line and diag.bad_lines == 0
    assert diag.unknown_types == {"hologram": 1}


def test_broken_parent_chain_falls_back_to_file_order(home: Path) -> None:
    tree = Tree(home)
    tree.user("first")
    tree.assistant({"text": "second"}, parent="missing-parent")
    events, transcript = _read(tree.write())
    assert _texts(events) == [("user", "first"), ("assistant", "second")]
    assert any("broken" in w for w in transcript.diagnostics.warnings)


def test_bad_lines_empty_file_and_missing_store(home: Path) -> None:
    tree = Tree(home)
    tree.user("ok")
    tree.lines.insert(0, "{not json")
    path = tree.write()
    path.write_bytes(
        path.read_bytes()
        + b'{"uuid": "r9", "parentUuid": "r001", "type": "assistant", "message": {"parts": [{"text": "caf\\udce9 \xff"}]}}\n'
    )
    events, transcript = _read(path)
    assert _texts(events) == [("user", "ok"), ("assistant", "caf\ufffd \ufffd")]
    assert transcript.diagnostics.bad_lines == 1
    path.write_bytes(b"")
    events, transcript = _read(path)
    assert events == [] and not transcript.diagnostics.warnings
    shutil.rmtree(home / ".qwen")
    assert QwenCode().sessions(Path(WS)) == [] and QwenCode().sessions(None) == []


def test_a_hostile_session_id_never_reaches_the_todos_folder(home: Path) -> None:
    (home / ".qwen" / "secret.json").parent.mkdir(parents=True)
    (home / ".qwen" / "secret.json").write_text(
        json.dumps({"todos": [{"content": "LEAK", "status": "pending"}]})
    )
    tree = Tree(home, session_id="../secret")
    tree.user("x")
    events, _ = _read(tree.write())
    assert "LEAK" not in repr(events)


# -- discovery ---------------------------------------------------------------------------
def test_lossy_folder_names_are_confirmed_by_cwd(home: Path) -> None:
    neighbour = Tree(
        home, workspace="/tmp/passdown-qwen/my-ws", session_id="aaaa1111"
    )  # same folder name
    neighbour.user("neighbour")
    neighbour.write()
    assert neighbour.path.parent == Tree(home).path.parent
    mine = Tree(home, session_id="bbbb2222")
    mine.user("mine")
    mine.write()
    sub = Tree(home, workspace=f"{WS}/pkg", session_id="cccc3333")
    sub.user("below")
    sub.write()
    archived = Tree(home, session_id="dddd4444")
    archived.path = archived.path.parent / "archive" / archived.path.name
    archived.path.parent.mkdir()
    archived.user("old")
    archived.write()
    agent = QwenCode()
    assert sorted(r.session_id for r in agent.sessions(Path(WS))) == [
        "bbbb2222",
        "cccc3333",
        "dddd4444",
    ]
    assert agent.resolve("bbbb", None).session_id == "bbbb2222"
    assert [r.session_id for r in agent.sessions(Path("/tmp/passdown-qwen/my-ws"))] == ["aaaa1111"]


# -- launching ---------------------------------------------------------------------------
@pytest.mark.parametrize("interactive", [False, True])
def test_launch_keeps_a_dash_prompt_one_argument(interactive: bool, tmp_path: Path) -> None:
    prompt = "--help -p read .agent-handoff/HANDOFF.md"
    spec = QwenCode().launch_spec(prompt, workspace=tmp_path, interactive=interactive)
    assert spec.cwd == tmp_path
    if interactive:
        assert spec.argv == ["qwen", f"--prompt-interactive={prompt}"]
    else:
        assert spec.argv == ["qwen", "--approval-mode", "auto-edit", f"--prompt={prompt}"]
    assert sum(prompt in a for a in spec.argv) == 1


# -- pass 2's one typed decode against the lenient path ---------------------------------
# The reader decodes each line once with every nested field typed, and takes the lenient
# path (the record's own fields, then each nested field on its own) only for a line that
# decode refuses. Both must read a line the same: a typed decode that succeeds gives the
# record the lenient path gives, field for field.
_ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "x", "ls -l", "a.py"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner),
    max_leaves=6,
)


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """The field as expected, another JSON value, or absent (None drops the key)."""
    return st.one_of(strategy, _ANY_JSON, st.just(_ABSENT))


_ABSENT = object()
_TEXT = st.sampled_from(["", "ok", " Exit Code: 2", "\\ud83d"])
_ARGS = st.fixed_dictionaries(
    {},
    optional={
        "command": _maybe(_TEXT),
        "file_path": _maybe(_TEXT),
        "todos": _maybe(
            st.lists(
                st.fixed_dictionaries(
                    {}, optional={"id": _maybe(st.integers(0, 3)), "status": _maybe(_TEXT)}
                ),
                max_size=2,
            )
        ),
    },
)
_PART = st.fixed_dictionaries(
    {},
    optional={
        "text": _maybe(_TEXT),
        "thought": _ANY_JSON,
        "functionCall": _maybe(
            st.fixed_dictionaries(
                {}, optional={"id": _maybe(_TEXT), "name": _maybe(_TEXT), "args": _maybe(_ARGS)}
            )
        ),
        "functionResponse": _maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "id": _maybe(_TEXT),
                    "name": _maybe(_TEXT),
                    "response": _maybe(
                        st.fixed_dictionaries(
                            {}, optional={"output": _ANY_JSON, "error": _ANY_JSON}
                        )
                    ),
                },
            )
        ),
    },
)
_RECORD = st.fixed_dictionaries(
    {
        "uuid": _maybe(_TEXT),
        "type": _maybe(st.sampled_from(["user", "assistant", "tool_result", "system"])),
    },
    optional={
        "timestamp": _maybe(_TEXT),
        "subtype": _maybe(st.sampled_from(["ui_telemetry", "chat_compression"])),
        "message": _maybe(
            st.fixed_dictionaries(
                {}, optional={"role": _maybe(_TEXT), "parts": _maybe(st.lists(_PART, max_size=3))}
            )
        ),
        "toolCallResult": _maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "callId": _maybe(_TEXT),
                    "status": _maybe(_TEXT),
                    "resultDisplay": _ANY_JSON,
                },
            )
        ),
        "systemPayload": _maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "uiEvent": _maybe(
                        st.fixed_dictionaries(
                            {},
                            optional={
                                "event.name": _maybe(st.just("qwen-code.api_error")),
                                "status_code": _ANY_JSON,
                            },
                        )
                    )
                },
            )
        ),
    },
)


def _without_absent(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_absent(v) for k, v in value.items() if v is not _ABSENT}
    if isinstance(value, list):
        return [_without_absent(v) for v in value]
    return value


def _result_record(response: Any) -> dict[str, Any]:
    part = {"functionResponse": {"id": "c1", "name": "x", "response": response}}
    return {"uuid": "u", "type": "tool_result", "message": {"role": "user", "parts": [part]}}


@settings(max_examples=400, deadline=None)
@given(record=_RECORD)
@example(record=_result_record(None))
@example(record=_result_record({"output": "out", "error": None}))
@example(record=_result_record("a whole response as text"))
@example(record={"uuid": "u", "type": "assistant", "message": {"role": "model"}})
def test_the_typed_decode_reads_a_line_as_the_lenient_path_does(record: dict[str, Any]) -> None:
    line = json.dumps(_without_absent(record)).replace("\\\\ud83d", "\\ud83d").encode()
    diag = Diagnostics()
    lenient = _lenient_record(line, 0, -1, diag)
    try:
        typed = _FAST_RECORD.decode(line)
    except msgspec.DecodeError:
        tally("the lenient path reads it")
        assert _decode(line, 0, -1, Diagnostics()) == lenient
        return
    tally("typed")
    assert typed == lenient
    assert (diag.bad_lines, diag.torn_last_line) == (0, False)


def test_the_recorded_lines_decode_typed_as_the_lenient_path_reads_them() -> None:
    session = next((FIXTURES / "qwen" / "full").rglob("*.jsonl"))
    lines = [line for line in session.read_bytes().split(b"\n") if line]
    typed = [_FAST_RECORD.decode(line) for line in lines]  # no recorded line needs the fallback
    assert typed == [_lenient_record(line, 0, -1, Diagnostics()) for line in lines]
    assert any(rec.systemPayload is not None for rec in typed)
    assert any(
        part.functionResponse is not None and part.functionResponse.response is not None
        for rec in typed
        for part in (rec.message.parts or () if rec.message else ())
    )
