"""pi: the recorded session, hand-made trees (forks, compaction, branch summaries), bad
lines, empty and missing stores, the env overrides, and launch argv."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from passdown._extract import extract
from passdown.agents._common import parse_exit_code
from passdown.agents.pi import PiAgent, _may_name_exit_code, _without_exit_line, encode_cwd
from passdown.errors import UsageError
from passdown.transcript import Compaction, Message, ToolCall, ToolResult
from recorded import FIXTURES

RECORDED = FIXTURES / "pi" / "full"
EXPECTED = json.loads((RECORDED / "expected.json").read_text())
WS = "/tmp/ws-pi"


@pytest.fixture
def recorded_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(RECORDED, home, ignore=shutil.ignore_patterns("expected.json"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    return home


def test_recorded_session(recorded_home: Path) -> None:
    agent = PiAgent()
    refs = agent.sessions(Path(EXPECTED["workspace"]))
    assert [r.session_id for r in refs] == [EXPECTED["session_id"]]
    transcript = agent.read(refs[0])
    events = list(transcript.events())
    users = [e.text for e in events if isinstance(e, Message) and e.role == "user"]
    assert users == EXPECTED["turns"]
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [c.action for c in calls].count("command") == 4
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    failing = next(c for c in calls if c.command and "unittest" in c.command)
    assert results[failing.call_id].exit_code == 1
    assert "FAILED (failures=1)" in (results[failing.call_id].error or "")
    assert transcript.info.models == ["scripted-model"]
    assert transcript.info.cwd == EXPECTED["workspace"]
    assert transcript.diagnostics.summary() == []
    assert transcript.diagnostics.off_branch_records == 0


def test_folder_name_encoding() -> None:
    assert encode_cwd("/tmp/passdown-rec/pi-full") == "--tmp-passdown-rec-pi-full--"
    assert encode_cwd("/a_b/c:d") == "--a_b-c-d--"


# -- hand-made sessions --------------------------------------------------------------------
def _entry(kind: str, eid: str, parent: str | None, **fields: object) -> dict:
    return {
        "type": kind,
        "id": eid,
        "parentId": parent,
        "timestamp": f"2026-01-01T00:00:{len(eid):02d}Z",
        **fields,
    }


def _user(eid: str, parent: str | None, text: str) -> dict:
    return _entry(
        "message",
        eid,
        parent,
        message={"role": "user", "content": [{"type": "text", "text": text}]},
    )


def _assistant(eid: str, parent: str | None, *blocks: dict) -> dict:
    return _entry(
        "message", eid, parent, message={"role": "assistant", "content": list(blocks), "model": "m"}
    )


def _result(eid: str, parent: str, call_id: str, text: str, *, error: bool = False) -> dict:
    return _entry(
        "message",
        eid,
        parent,
        message={
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": "x",
            "content": [{"type": "text", "text": text}],
            "isError": error,
        },
    )


def _write_session(
    home: Path, lines: list[dict | str], *, cwd: str = WS, name: str = "t_abc.jsonl"
) -> Path:
    folder = home / ".pi" / "agent" / "sessions" / encode_cwd(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    header = {
        "type": "session",
        "version": 3,
        "id": "sess-1",
        "timestamp": "2026-01-01T00:00:00Z",
        "cwd": cwd,
    }
    body = [json.dumps(header)] + [x if isinstance(x, str) else json.dumps(x) for x in lines]
    path.write_text("\n".join(body) + "\n")
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    return tmp_path


def _events(path: Path) -> tuple[list, object]:
    agent = PiAgent()
    transcript = agent.read(agent.ref_for_path(path))
    return list(transcript.events()), transcript


def test_only_the_active_branch_is_read(home: Path) -> None:
    path = _write_session(
        home,
        [
            _user("u1", None, "start"),
            _assistant(
                "a1",
                "u1",
                {"type": "text", "text": "abandoned answer"},
                {
                    "type": "toolCall",
                    "id": "c1",
                    "name": "write",
                    "arguments": {"path": f"{WS}/dead.py"},
                },
            ),
            _result("r1", "a1", "c1", "ok"),
            _user("u2", "u1", "try again differently"),  # a fork from u1
            _assistant(
                "a2",
                "u2",
                {"type": "thinking", "thinking": "HIDDEN-THOUGHT"},
                {"type": "text", "text": "live answer"},
            ),
        ],
    )
    events, transcript = _events(path)
    texts = [e.text for e in events if isinstance(e, Message)]
    assert texts == ["start", "try again differently", "live answer"]
    assert not any(isinstance(e, ToolCall) for e in events)
    assert "HIDDEN-THOUGHT" not in repr(events)
    assert transcript.diagnostics.off_branch_records == 2
    assert transcript.info.session_id == "sess-1"


def test_compaction_branch_summary_and_user_commands(home: Path) -> None:
    path = _write_session(
        home,
        [
            _user("u1", None, "the original request"),
            _entry(
                "compaction",
                "k1",
                "u1",
                summary="Earlier: did A and B",
                firstKeptEntryId="u1",
                tokensBefore=9,
            ),
            _entry("branch_summary", "b1", "k1", fromId="u1", summary="tried C, failed"),
            _entry(
                "message",
                "x1",
                "b1",
                message={
                    "role": "bashExecution",
                    "command": "make",
                    "output": "error: boom",
                    "exitCode": 2,
                },
            ),
            _entry("label", "l1", "x1", targetId="u1", label="start"),
            _user("u2", "l1", "now continue"),
        ],
    )
    events, transcript = _events(path)
    comp = [e for e in events if isinstance(e, Compaction)]
    assert [c.summary for c in comp] == ["Earlier: did A and B"]
    ex = extract(iter(events), workspace=WS)
    assert ex.task.original_request == "the original request"
    assert ex.task.latest_user_message == "now continue"
    assert [(c.command, c.exit_code) for c in ex.state.commands] == [("make", 2)]
    assert ex.state.last_failure and "boom" in (ex.state.last_failure.error or "")
    assert transcript.diagnostics.unknown_types == {}


def test_failed_edit_touches_nothing(home: Path) -> None:
    path = _write_session(
        home,
        [
            _user("u1", None, "edit"),
            _assistant(
                "a1",
                "u1",
                {
                    "type": "toolCall",
                    "id": "c1",
                    "name": "edit",
                    "arguments": {"path": f"{WS}/x.py", "edits": []},
                },
            ),
            _result("r1", "a1", "c1", "Could not find the exact text in x.py", error=True),
            _assistant(
                "a2",
                "r1",
                {
                    "type": "toolCall",
                    "id": "c2",
                    "name": "write",
                    "arguments": {"path": f"{WS}/y.py", "content": ""},
                },
            ),
            _result("r2", "a2", "c2", "Successfully wrote"),
        ],
    )
    events, _ = _events(path)
    ex = extract(iter(events), workspace=WS)
    assert [f.path for f in ex.state.files_touched] == ["y.py"]
    assert [f.path for f in ex.state.failed_edits] == ["x.py"]


def test_torn_last_line_bad_lines_and_unknown_types(home: Path) -> None:
    path = _write_session(
        home,
        [
            _user("u1", None, "hello"),
            "{this is not json",
            _entry("brand_new_kind", "n1", "u1"),
            _assistant("a1", "n1", {"type": "text", "text": "hi"}),
        ],
    )
    with path.open("a") as fh:
        fh.write('{"type": "message", "id": "a2", "parentId": "a1", "mess')  # torn, no newline
    events, transcript = _events(path)
    assert [e.text for e in events if isinstance(e, Message)] == ["hello", "hi"]
    diag = transcript.diagnostics
    assert diag.torn_last_line
    assert diag.bad_lines == 1
    assert diag.unknown_types == {"brand_new_kind": 1}


def test_broken_tree_falls_back_to_file_order(home: Path) -> None:
    path = _write_session(
        home,
        [
            _user("u1", None, "one"),
            _assistant("a1", "missing-parent", {"type": "text", "text": "two"}),
        ],
    )
    events, transcript = _events(path)
    assert [e.text for e in events if isinstance(e, Message)] == ["one", "two"]
    assert any("broken" in w for w in transcript.diagnostics.warnings)


def test_empty_file_and_missing_store(home: Path) -> None:
    agent = PiAgent()
    assert agent.sessions(None) == []
    folder = home / ".pi" / "agent" / "sessions" / encode_cwd(WS)
    folder.mkdir(parents=True)
    empty = folder / "2026_empty.jsonl"
    empty.write_text("")
    ref = agent.ref_for_path(empty)
    assert ref.cwd is None
    assert list(agent.read(ref).events()) == []
    assert agent.sessions(Path(WS)) == []  # no header, no cwd: not claimed for a workspace


def test_env_overrides_and_workspace_matching(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent_dir = home / "custom-agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    folder = agent_dir / "sessions" / encode_cwd(WS + "/sub")
    folder.mkdir(parents=True)
    header = {"type": "session", "version": 3, "id": "s-sub", "cwd": WS + "/sub"}
    (folder / "t_s-sub.jsonl").write_text(json.dumps(header) + "\n")
    flat = home / "flat"
    flat.mkdir()
    header2 = {"type": "session", "version": 3, "id": "s-flat", "cwd": WS}
    (flat / "t_s-flat.jsonl").write_text(json.dumps(header2) + "\n")
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(flat))
    agent = PiAgent()
    assert sorted(r.session_id for r in agent.sessions(Path(WS))) == ["s-flat", "s-sub"]
    assert agent.sessions(Path(WS + "-other")) == []
    assert agent.resolve("s-fl", None).session_id == "s-flat"
    with pytest.raises(UsageError):
        agent.resolve(str(home / "elsewhere.jsonl"), None)


def test_launch_argv(tmp_path: Path) -> None:
    agent = PiAgent()
    plain = agent.launch_spec("read HANDOFF.md", workspace=tmp_path, interactive=False)
    assert plain.argv == ["pi", "-p", "read HANDOFF.md"]
    # pi has no "--": a leading space keeps "-..." and "@..." a message, one argument
    dash = agent.launch_spec("-x read", workspace=tmp_path, interactive=False)
    assert dash.argv == ["pi", "-p", " -x read"]
    at = agent.launch_spec("@HANDOFF.md first", workspace=tmp_path, interactive=True)
    assert at.argv == ["pi", " @HANDOFF.md first"]
    assert at.cwd == tmp_path


def _bash(eid: str, parent: str, call_id: str, command: object) -> dict:
    block = {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": command}}
    return _assistant(eid, parent, block)


def test_repeated_and_many_failure_outputs_keep_their_own_error_lines(home: Path) -> None:
    # The error line of an output is remembered for outputs seen again (a failing test
    # rerun); more distinct outputs than that memory holds, then an old one again, must
    # still each give their own error line and exit code.
    outputs = [f"Traceback (most recent call last):\nValueError: bad {i}" for i in range(70)]
    runs = [0, 0, *range(1, 70), 0, 5]
    lines: list[dict | str] = [_user("u", None, "run it")]
    parent = "u"
    for n, which in enumerate(runs):
        text = f"{outputs[which]}\n\nCommand exited with code {which % 3 + 1}"
        lines += [
            _bash(f"a{n}", parent, f"c{n}", "pytest -x"),
            _result(f"r{n}", f"a{n}", f"c{n}", text, error=True),
        ]
        parent = f"r{n}"
    lines += [
        _bash("ok", parent, "c-ok", "true"),
        _result("r-ok", "ok", "c-ok", "all good\nexit status 0"),
        _bash("odd", "r-ok", "c-odd", ["not", "a", "string"]),
    ]
    events, _ = _events(_write_session(home, lines))
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [(r.error, r.exit_code) for r in results[:-1]] == [
        (f"ValueError: bad {which}", which % 3 + 1) for which in runs
    ]
    assert (results[-1].is_error, results[-1].exit_code, results[-1].error) == (False, 0, None)
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert calls[-1].command == ""  # a command that is not a string is absent
    assert {c.command for c in calls[:-1]} == {"pytest -x", "true"}


def test_edit_target_from_file_path_or_absent(home: Path) -> None:
    def edit(eid: str, parent: str, call_id: str, args: dict) -> dict:
        return _assistant(
            eid, parent, {"type": "toolCall", "id": call_id, "name": "edit", "arguments": args}
        )

    path = _write_session(
        home,
        [
            _user("u", None, "edit"),
            edit("a1", "u", "c1", {"file_path": f"{WS}/a.py", "content": "x" * 5000}),
            edit("a2", "a1", "c2", {"path": 7, "file_path": f"{WS}/b.py"}),
            edit("a3", "a2", "c3", {"path": ["x"]}),
        ],
    )
    events, _ = _events(path)
    paths = [e.paths for e in events if isinstance(e, ToolCall)]
    assert paths == [(f"{WS}/a.py",), (), ()]


# The regexes these replace on the hot path, as they read before: the results must match.
_OLD_EXIT_LINE = re.compile(r"\n*Command exited with code -?\d+\s*$")
_PIECES = st.sampled_from(
    [
        "\n",
        " ",
        "\t",
        "\r",
        "\u2028",
        "Command exited with code",
        "Command exited with code ",
        "1",
        "-",
        "٣",  # an Arabic-Indic digit: \d matches it
        "x",
        "exit code",
        "EXIT STATUS",
        "Exit Code: ",
        "ſtatus",  # IGNORECASE matches the long s for "s"
        "exıt",  # ...and the dotless i for "i"
        "coDe",
    ]
)


@settings(max_examples=3000, deadline=None)
@given(text=st.lists(_PIECES, max_size=10).map("".join))
def test_the_exit_line_cut_and_the_exit_code_filter_agree_with_the_regexes(text: str) -> None:
    assert _without_exit_line(text) == _OLD_EXIT_LINE.sub("", text)
    if parse_exit_code(text) is not None:
        assert _may_name_exit_code(text)
