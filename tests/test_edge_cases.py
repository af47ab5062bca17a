"""Hand-made sessions for what real files do in the wild: torn lines, unknown records,
rewinds, compaction, sub-agents, bad bytes, huge lines, empty and missing stores,
hostile session ids. None of them may produce a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import zstandard

from passdown._extract import extract
from passdown.agents import get_agent
from passdown.errors import AmbiguousSession, SessionNotFound, UsageError
from passdown.transcript import Message

WS = "/tmp/passdown-edge/ws"


class ClaudeSession:
    """Builds a Claude Code session file record by record."""

    def __init__(self, session_id: str = "aaaaaaaa-0000-4000-8000-000000000001") -> None:
        self.session_id = session_id
        self.lines: list[bytes] = []
        self.parent: str | None = None
        self.n = 0

    def add(
        self, kind: str, message: dict[str, Any] | None = None, *, parent: Any = ..., **extra: Any
    ) -> str:
        self.n += 1
        uid = f"u{self.n:04d}"
        record = {
            "parentUuid": self.parent if parent is ... else parent,
            "isSidechain": False,
            "cwd": WS,
            "sessionId": self.session_id,
            "version": "2.1.197",
            "type": kind,
            "uuid": uid,
            "timestamp": f"2026-11-29T10:00:{self.n:02d}.000Z",
            **extra,
        }
        if message is not None:
            record["message"] = message
        self.lines.append(json.dumps(record).encode())
        self.parent = uid
        return uid

    def user(self, text: str, **extra: Any) -> str:
        return self.add("user", {"role": "user", "content": text}, **extra)

    def assistant(self, text: str, **extra: Any) -> str:
        return self.add(
            "assistant",
            {
                "id": f"m{self.n}",
                "role": "assistant",
                "model": "claude-test",
                "content": [{"type": "text", "text": text}],
            },
            **extra,
        )

    def raw(self, line: bytes) -> None:
        self.lines.append(line)

    def write(
        self, config_dir: Path, *, trailing_newline: bool = True, compress: bool = False
    ) -> Path:
        folder = config_dir / "projects" / "-tmp-passdown-edge-ws"
        folder.mkdir(parents=True, exist_ok=True)
        data = b"\n".join(self.lines) + (b"\n" if trailing_newline else b"")
        path = folder / f"{self.session_id}.jsonl"
        if compress:
            path = path.with_name(path.name + ".zst")
            data = zstandard.ZstdCompressor().compress(data)
        path.write_bytes(data)
        return path


@pytest.fixture
def claude_dir(isolated_homes: Path) -> Path:
    return Path(os.environ["CLAUDE_CONFIG_DIR"])


@pytest.fixture
def codex_dir(isolated_homes: Path) -> Path:
    return Path(os.environ["CODEX_HOME"])


def _read(agent_name: str, path: Path) -> tuple[Any, Any]:
    agent = get_agent(agent_name)
    transcript = agent.read(agent.ref_for_path(path))
    extracted = extract(transcript.events(), workspace=WS)
    return transcript, extracted


def test_torn_last_line_is_ignored_with_a_warning(claude_dir: Path) -> None:
    s = ClaudeSession()
    s.user("build the thing")
    s.assistant("done with step one")
    s.raw(b'{"type":"assistant","uuid":"u9999","parentUuid":"u0002","message":{"role":"assi')
    transcript, ex = _read("claude", s.write(claude_dir, trailing_newline=False))
    assert transcript.diagnostics.torn_last_line
    assert transcript.diagnostics.bad_lines == 0
    assert ex.task.latest_progress == "done with step one"
    assert any("incomplete" in w for w in transcript.diagnostics.summary())


def test_unknown_record_types_are_skipped_and_counted(claude_dir: Path) -> None:
    s = ClaudeSession()
    s.user("request")
    s.raw(b'{"type":"hologram","payload":{"x":1}}')
    s.raw(b'{"type":"hologram"}')
    s.assistant("answer")
    transcript, ex = _read("claude", s.write(claude_dir))
    assert transcript.diagnostics.unknown_types == {"hologram": 2}
    assert ex.task.latest_progress == "answer"


def test_rewind_follows_the_active_branch_not_file_order(claude_dir: Path) -> None:
    s = ClaudeSession()
    root = s.user("original request")
    s.assistant("first attempt")
    s.user("abandoned follow-up")
    s.assistant("abandoned answer")
    s.parent = root  # the user rewound to the first message and went another way
    s.assistant("second attempt")
    s.user("kept follow-up")
    s.assistant("kept answer")
    transcript, ex = _read("claude", s.write(claude_dir))
    texts = [e.text for e in ex.task.transcript]
    assert texts == ["original request", "second attempt", "kept follow-up", "kept answer"]
    assert transcript.diagnostics.off_branch_records == 3


def test_leaf_of_the_last_prompt_record_wins(claude_dir: Path) -> None:
    s = ClaudeSession()
    s.user("request")
    kept = s.assistant("kept branch")
    s.user("later abandoned")
    s.assistant("abandoned")
    s.raw(json.dumps({"type": "last-prompt", "leafUuid": kept, "sessionId": s.session_id}).encode())
    _, ex = _read("claude", s.write(claude_dir))
    assert ex.task.latest_progress == "kept branch"


def test_compaction_keeps_summary_and_original_request(claude_dir: Path) -> None:
    s = ClaudeSession()
    s.user("the very first request")
    last = s.assistant("working")
    s.add(
        "system",
        parent=None,
        subtype="compact_boundary",
        logicalParentUuid=last,
        compactMetadata={"trigger": "auto", "preTokens": 150000},
        content="Conversation compacted",
    )
    s.add(
        "user", {"role": "user", "content": "Summary: we were building X."}, isCompactSummary=True
    )
    s.add("user", {"role": "user", "content": "<command-name>/compact</command-name>"})
    s.add(
        "user",
        {
            "role": "user",
            "content": [{"type": "text", "text": "Continue from where you left off."}],
        },
        isMeta=True,
    )
    s.add(
        "assistant",
        {
            "id": "syn",
            "role": "assistant",
            "model": "<synthetic>",
            "content": [{"type": "text", "text": "No response requested."}],
        },
    )
    s.user("real follow-up")
    s.assistant("after compaction")
    _, ex = _read("claude", s.write(claude_dir))
    assert ex.task.original_request == "the very first request"
    assert ex.task.latest_user_message == "real follow-up"
    assert ex.task.compactions == 1
    assert ex.task.compaction_summary == "Summary: we were building X."
    texts = [e.text for e in ex.task.transcript]
    assert (
        "No response requested." not in texts and "Continue from where you left off." not in texts
    )


def test_sidechain_records_are_not_the_main_session(claude_dir: Path) -> None:
    s = ClaudeSession()
    s.user("main request")
    s.add(
        "assistant",
        {
            "id": "sc",
            "role": "assistant",
            "content": [{"type": "text", "text": "sidechain chatter"}],
        },
        isSidechain=True,
        parent=None,
    )
    s.parent = "u0001"
    s.assistant("main answer")
    transcript, ex = _read("claude", s.write(claude_dir))
    assert [e.text for e in ex.task.transcript] == ["main request", "main answer"]
    assert transcript.diagnostics.sidechain_records == 1


def test_thinking_is_never_exported(claude_dir: Path) -> None:
    s = ClaudeSession()
    s.user("request")
    s.add(
        "assistant",
        {
            "id": "m",
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "SECRET-REASONING", "signature": "x"},
                {"type": "text", "text": "visible"},
            ],
        },
    )
    _, ex = _read("claude", s.write(claude_dir))
    assert "SECRET-REASONING" not in ex.task.model_dump_json()


def test_non_utf8_bytes_are_replaced_not_fatal(claude_dir: Path) -> None:
    s = ClaudeSession()
    s.user("request")
    s.raw(
        b'{"type":"assistant","uuid":"u0002","parentUuid":"u0001","cwd":"/tmp/passdown-edge/ws",'
        b'"message":{"id":"x","role":"assistant","content":[{"type":"text","text":"bad \xff\xfe bytes"}]}}'
    )
    transcript, ex = _read("claude", s.write(claude_dir))
    assert ex.task.latest_progress is not None and "bytes" in ex.task.latest_progress
    assert transcript.diagnostics.bad_lines == 0


def test_a_50_mb_line_is_read_with_bounded_effort(claude_dir: Path) -> None:
    s = ClaudeSession()
    s.user("request")
    big = "x" * (50 * 1024 * 1024)
    tid = "toolu_big"
    s.add(
        "assistant",
        {
            "id": "a",
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": tid,
                    "name": "Write",
                    "input": {"file_path": f"{WS}/big.txt", "content": big},
                }
            ],
        },
    )
    s.add(
        "user",
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": "ok"}]},
        toolUseResult={"type": "create", "filePath": f"{WS}/big.txt", "content": big},
    )
    s.assistant("wrote the big file")
    del big
    _, ex = _read("claude", s.write(claude_dir))
    assert [f.path for f in ex.state.files_touched] == ["big.txt"]
    assert ex.task.latest_progress == "wrote the big file"


def test_oversized_lines_are_skipped(claude_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import passdown._jsonl

    monkeypatch.setattr(passdown._jsonl, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(passdown._jsonl, "CHUNK", 256)
    s = ClaudeSession()
    s.user("request")
    s.assistant("y" * 5000)
    s.parent = "u0001"
    s.assistant("small answer")
    transcript, ex = _read("claude", s.write(claude_dir))
    assert transcript.diagnostics.oversized_lines >= 1
    assert ex.task.latest_progress == "small answer"


def test_empty_session_file(claude_dir: Path) -> None:
    s = ClaudeSession()
    path = s.write(claude_dir)
    path.write_bytes(b"")
    _, ex = _read("claude", path)
    assert ex.task.original_request is None and ex.task.transcript == []


def test_zstd_compressed_claude_session(claude_dir: Path) -> None:
    s = ClaudeSession()
    s.user("compressed request")
    s.assistant("compressed answer")
    path = s.write(claude_dir, compress=True)
    agent = get_agent("claude")
    assert [r.session_id for r in agent.sessions(Path(WS))] == [s.session_id]
    _, ex = _read("claude", path)
    assert ex.task.latest_progress == "compressed answer"


def test_missing_store_means_no_sessions(claude_dir: Path, codex_dir: Path) -> None:
    for name in ("claude", "codex"):
        agent = get_agent(name)
        assert agent.sessions(Path(WS)) == []
        assert agent.sessions(None) == []


def test_path_traversal_session_id_is_refused(claude_dir: Path, codex_dir: Path) -> None:
    ClaudeSession().write(claude_dir)
    for name in ("claude", "codex"):
        agent = get_agent(name)
        with pytest.raises((UsageError, SessionNotFound)):
            agent.resolve("../../etc/passwd", Path(WS))
        with pytest.raises((UsageError, SessionNotFound)):
            agent.resolve("/etc/passwd", Path(WS))


def test_path_outside_the_store_is_a_clear_error(claude_dir: Path, tmp_path: Path) -> None:
    ClaudeSession().write(claude_dir)
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("{}\n")
    with pytest.raises(UsageError, match="outside"):
        get_agent("claude").resolve(str(outside), Path(WS))


def test_id_prefix_and_ambiguity(claude_dir: Path) -> None:
    ClaudeSession("abcd1111-0000-4000-8000-000000000001").write(claude_dir)
    ClaudeSession("abcd2222-0000-4000-8000-000000000002").write(claude_dir)
    agent = get_agent("claude")
    assert agent.resolve("abcd1", Path(WS)).session_id.startswith("abcd1111")
    with pytest.raises(AmbiguousSession):
        agent.resolve("abcd", Path(WS))
    with pytest.raises(SessionNotFound):
        agent.resolve("ffff", Path(WS))


# -- Codex ----------------------------------------------------------------------------
def _codex_file(
    codex_dir: Path,
    lines: list[Any],
    *,
    name: str = "rollout-2026-11-29T10-00-00-bbbbbbbb-0000-4000-8000-000000000001.jsonl",
) -> Path:
    folder = codex_dir / "sessions" / "2026" / "11" / "29"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(
        b"".join(
            (line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n"
            for line in lines
        )
    )
    return path


def _item(payload: dict[str, Any], kind: str = "response_item") -> dict[str, Any]:
    return {"timestamp": "2026-11-29T10:00:00.000Z", "type": kind, "payload": payload}


def _msg(role: str, text: str) -> dict[str, Any]:
    part = "input_text" if role == "user" else "output_text"
    return _item({"type": "message", "role": role, "content": [{"type": part, "text": text}]})


META = _item(
    {"id": "bbbbbbbb-0000-4000-8000-000000000001", "cwd": WS, "cli_version": "0.171.0"},
    "session_meta",
)


def test_codex_filters_injected_context_and_duplicate_prompts(codex_dir: Path) -> None:
    path = _codex_file(
        codex_dir,
        [
            META,
            _msg("developer", "system rules"),
            _msg("user", "<environment_context>\n<cwd>/x</cwd>\n</environment_context>"),
            _msg("user", "# AGENTS.md instructions for /x\n..."),
            _msg("user", "the real request"),
            _item({"type": "user_message", "message": "the real request"}, "event_msg"),
            _msg("user", "the real request"),
            _item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "HIDDEN"}]}),
            _msg("assistant", "on it"),
            _item({"type": "agent_message", "message": "on it"}, "event_msg"),
        ],
    )
    _, ex = _read("codex", path)
    assert [(e.role, e.text) for e in ex.task.transcript] == [
        ("user", "the real request"),
        ("assistant", "on it"),
    ]
    assert "HIDDEN" not in ex.task.model_dump_json()


def test_codex_commands_plan_and_failures(codex_dir: Path) -> None:
    path = _codex_file(
        codex_dir,
        [
            META,
            _msg("user", "do it"),
            _item(
                {
                    "type": "function_call",
                    "name": "update_plan",
                    "call_id": "p1",
                    "arguments": json.dumps(
                        {
                            "plan": [
                                {"step": "a", "status": "completed"},
                                {"step": "b", "status": "in_progress"},
                            ]
                        }
                    ),
                }
            ),
            _item({"type": "function_call_output", "call_id": "p1", "output": "Plan updated"}),
            _item(
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "call_id": "c1",
                    "arguments": json.dumps({"cmd": "make test"}),
                }
            ),
            _item(
                {
                    "type": "function_call_output",
                    "call_id": "c1",
                    "output": "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 2\nOutput:\nmake: *** [test] Error 2\n",
                }
            ),
            _item(
                {
                    "type": "function_call",
                    "name": "shell",
                    "call_id": "c2",
                    "arguments": json.dumps({"command": ["bash", "-lc", "ls"]}),
                }
            ),
            _item(
                {
                    "type": "function_call_output",
                    "call_id": "c2",
                    "output": json.dumps({"output": "a b", "metadata": {"exit_code": 0}}),
                }
            ),
        ],
    )
    _, ex = _read("codex", path)
    assert [(p.subject, p.status) for p in ex.state.plan] == [
        ("a", "completed"),
        ("b", "in_progress"),
    ]
    assert [(c.command, c.exit_code) for c in ex.state.commands] == [("make test", 2), ("ls", 0)]
    assert ex.state.last_failure is not None and "Error 2" in (ex.state.last_failure.error or "")


def test_codex_legacy_file(codex_dir: Path) -> None:
    path = _codex_file(
        codex_dir,
        [
            {
                "id": "bbbbbbbb-0000-4000-8000-000000000001",
                "timestamp": "2025-03-01T10:00:00Z",
                "instructions": None,
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "legacy request"}],
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "legacy answer"}],
            },
        ],
    )
    transcript, ex = _read("codex", path)
    assert ex.task.original_request == "legacy request"
    assert ex.task.latest_progress == "legacy answer"
    assert transcript.info.session_id == "bbbbbbbb-0000-4000-8000-000000000001"


def test_codex_zst_and_plain_prefers_plain(codex_dir: Path) -> None:
    plain = _codex_file(codex_dir, [META, _msg("user", "plain")])
    compressed = plain.with_name(plain.name + ".zst")
    compressed.write_bytes(
        zstandard.ZstdCompressor().compress(plain.read_bytes().replace(b"plain", b"zsted"))
    )
    refs = get_agent("codex").sessions(Path(WS))
    assert [r.path for r in refs] == [plain]
    plain.unlink()
    refs = get_agent("codex").sessions(Path(WS))
    assert [r.path for r in refs] == [compressed]
    _, ex = _read("codex", compressed)
    assert ex.task.original_request == "zsted"


def test_codex_garbage_lines_do_not_stop_reading(codex_dir: Path) -> None:
    path = _codex_file(
        codex_dir,
        [META, b"not json at all", b"\xff\xfe\x00", _msg("user", "still read"), b'{"type":"respo'],
    )
    path.write_bytes(path.read_bytes().rstrip(b"\n"))  # the writer died mid-line
    transcript, ex = _read("codex", path)
    assert ex.task.original_request == "still read"
    assert transcript.diagnostics.bad_lines == 2
    assert transcript.diagnostics.torn_last_line


# -- the CLI on bad input: a message and an exit code, never a traceback -----------------
def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "passdown", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["export", "--from", "claude"], 3),
        (["export", "--from", "auto"], 3),
        (["export", "--from", "nope"], 13),
        (["export", "--from", "claude", "--session", "../../etc/passwd"], 2),
        (["export", "--from", "claude", "--max-messages", "1"], 2),
        (["switch", "--from", "claude"], 2),
        (["inspect", "--from", "codex", "--session", "zzzz"], 3),
    ],
)
def test_cli_errors_have_exit_codes_and_no_traceback(
    args: list[str], code: int, tmp_path: Path, claude_dir: Path
) -> None:
    proc = _cli(args, tmp_path)
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip()


def test_cli_never_overwrites_a_previous_handoff(tmp_path: Path, claude_dir: Path) -> None:
    s = ClaudeSession()
    s.user("first")
    s.assistant("answer")
    path = s.write(claude_dir)
    out = tmp_path / "out"
    args = [
        "export",
        "--from",
        "claude",
        "--session",
        str(path),
        "--workspace",
        ".",
        "--out",
        str(out),
    ]
    assert _cli(args, tmp_path).returncode == 0
    first = (out / "handoff.json").read_text()
    s.assistant("one more answer")  # the session moved on: a new handoff replaces the first
    s.write(claude_dir)
    assert _cli(args, tmp_path).returncode == 0
    assert (out / "handoff.json").read_text() != first
    kept = [p.read_text() for p in (out / "history").iterdir() if p.name.endswith("handoff.json")]
    assert first in kept


def test_budget_keeps_first_request_and_latest_exchange() -> None:
    events = [Message(role="user", text="FIRST " + "a" * 100)]
    for i in range(60):
        events.append(Message(role="assistant", text=f"reply {i} " + "b" * 3000))
        events.append(Message(role="user", text=f"follow-up {i}"))
    events.append(Message(role="assistant", text="LAST reply"))
    ex = extract(iter(events), workspace=None, max_messages=10, max_chars=5000)
    entries = ex.task.transcript
    real = [e for e in entries if e.role != "cut"]
    assert real[0].text.startswith("FIRST")
    assert real[-1].text == "LAST reply" and real[-2].text == "follow-up 59"
    assert len(real) <= 10
    assert any(e.role == "cut" for e in entries)
    assert sum(len(e.text) for e in real) <= 5000 + 200 * len(real)
    assert ex.task.messages_total == 122
    assert ex.task.messages_omitted == 122 - len(real)


def test_codex_goal_tools_become_a_plan_item(codex_dir: Path) -> None:
    path = _codex_file(
        codex_dir,
        [
            META,
            _msg("user", "make the build green"),
            _item(
                {
                    "type": "function_call",
                    "name": "create_goal",
                    "call_id": "g1",
                    "arguments": json.dumps({"objective": "All tests pass"}),
                }
            ),
            _item({"type": "function_call_output", "call_id": "g1", "output": "Goal created"}),
            _item(
                {
                    "type": "function_call",
                    "name": "update_goal",
                    "call_id": "g2",
                    "arguments": json.dumps({"status": "blocked"}),
                }
            ),
            _item({"type": "function_call_output", "call_id": "g2", "output": "Goal updated"}),
        ],
    )
    _, ex = _read("codex", path)
    assert [(p.subject, p.status) for p in ex.state.plan] == [("Goal: All tests pass", "blocked")]
    assert ex.state.blockers == ["Goal: All tests pass (blocked)"]
