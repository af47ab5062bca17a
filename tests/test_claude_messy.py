"""Claude Code sessions that went messy (issue 10), hand-made after what Claude Code
2.1.197 wrote against the scripted server (see tests/e2e/test_messy_claude.py for the
real CLI): rewinds and forks against the CLI's task files, API-error and interrupted
endings, compaction summaries with the CLI's resume instructions, sub-agents."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from passdown._extract import Extracted, extract
from passdown.agents import get_agent
from passdown.agents.claude import api_error_reason, clean_compact_summary, encode_cwd
from passdown.transcript import SessionEnding, SubagentNote, ToolCall

WS = "/tmp/passdown-messy/ws"
SID = "bbbbbbbb-0000-4000-8000-000000000010"


class Session:
    """A Claude Code session file built record by record, shaped like 2.1.197's."""

    def __init__(self, session_id: str = SID, cwd: str = WS) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.records: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.calls = 0

    def add(self, kind: str, message: dict[str, Any] | None = None, **extra: Any) -> str:
        uid = f"u{len(self.records) + 1:04d}"
        record = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.1.197",
            "type": kind,
            "uuid": uid,
            "timestamp": f"2026-11-30T10:{len(self.records) // 60:02d}:"
            f"{len(self.records) % 60:02d}.000Z",
            **extra,
        }
        if message is not None:
            record["message"] = message
        self.records.append(record)
        self.parent = uid
        return uid

    def user(self, text: str, **extra: Any) -> str:
        return self.add("user", {"role": "user", "content": text}, **extra)

    def assistant(self, text: str) -> str:
        return self.add(
            "assistant",
            {
                "id": f"m{len(self.records)}",
                "role": "assistant",
                "model": "claude-test",
                "content": [{"type": "text", "text": text}],
            },
        )

    def tool(
        self,
        name: str,
        args: dict[str, Any],
        result: str = "ok",
        *,
        outcome: Any = None,
        is_error: bool = False,
    ) -> str:
        """A tool call and its result; returns the call's id."""
        self.calls += 1
        call_id = f"toolu_{self.calls:04d}"
        self.add(
            "assistant",
            {
                "id": f"m{len(self.records)}",
                "role": "assistant",
                "model": "claude-test",
                "content": [{"type": "tool_use", "id": call_id, "name": name, "input": args}],
            },
        )
        extra = {"toolUseResult": outcome} if outcome is not None else {}
        self.add(
            "user",
            {
                "role": "user",
                "content": [
                    {
                        "tool_use_id": call_id,
                        "type": "tool_result",
                        "content": result,
                        "is_error": is_error,
                    }
                ],
            },
            **extra,
        )
        return call_id

    def task_create(self, number: int, subject: str, **fields: str) -> None:
        self.tool(
            "TaskCreate",
            {"subject": subject, **fields},
            f"Task #{number} created successfully: {subject}",
            outcome={"task": {"id": str(number), "subject": subject}},
        )

    def task_update(self, number: int, status: str) -> None:
        self.tool(
            "TaskUpdate",
            {"taskId": str(number), "status": status},
            f"Updated task #{number} status",
        )

    def api_error(self, text: str, error: str, **extra: Any) -> str:
        return self.add(
            "assistant",
            {
                "id": f"m{len(self.records)}",
                "role": "assistant",
                "model": "<synthetic>",
                "content": [{"type": "text", "text": text}],
            },
            isApiErrorMessage=True,
            error=error,
            **extra,
        )

    def folder(self, config_dir: Path) -> Path:
        return config_dir / "projects" / encode_cwd(self.cwd)

    def write(self, config_dir: Path) -> Path:
        folder = self.folder(config_dir)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.session_id}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records), encoding="utf-8")
        return path


@pytest.fixture
def claude_dir(isolated_homes: Path) -> Path:
    return Path(os.environ["CLAUDE_CONFIG_DIR"])


def _task_files(claude_dir: Path, session_id: str, tasks: list[dict[str, Any]]) -> None:
    folder = claude_dir / "tasks" / session_id
    folder.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        full = {
            "description": "",
            "activeForm": "",
            "status": "pending",
            "blocks": [],
            "blockedBy": [],
            **task,
        }
        (folder / f"{task['id']}.json").write_text(json.dumps(full), encoding="utf-8")


def _events(path: Path) -> list[Any]:
    agent = get_agent("claude")
    return list(agent.read(agent.ref_for_path(path)).events())


def _extract(path: Path) -> Extracted:
    return extract(iter(_events(path)), workspace=WS)


def _plan(ex: Extracted) -> list[tuple[str, str, str]]:
    return [(p.id, p.subject, p.status) for p in ex.state.plan]


# -- rewinds and forks ------------------------------------------------------------------
def _rewound(s: Session) -> None:
    """Turn 1 leaves task 1 in progress; turn 2 (abandoned by a rewind to turn 1's last
    message) creates task 2 and completes task 1; the new branch creates task 3."""
    s.user("Write a.txt")
    s.task_create(1, "Write a.txt", description="the a file")
    s.task_update(1, "in_progress")
    resume_at = s.assistant("a.txt written.")
    s.user("Now write b.txt")
    s.task_create(2, "Abandoned task B")
    s.task_update(1, "completed")
    s.assistant("b.txt written.\n\nNext steps:\n- polish the abandoned b.txt")
    s.parent = resume_at
    s.user("Instead write c.txt")
    s.task_create(3, "Write c.txt")
    s.assistant("c.txt written.\n\nNext steps:\n- review c.txt")


def test_rewind_plan_is_the_active_branch_replay(claude_dir: Path) -> None:
    s = Session()
    _rewound(s)
    # the CLI's task store after the rewind: what ran last, the abandoned task included
    _task_files(
        claude_dir,
        SID,
        [
            {"id": "1", "subject": "Write a.txt", "status": "completed", "activeForm": "Writing a"},
            {"id": "2", "subject": "Abandoned task B"},
            {"id": "3", "subject": "Write c.txt", "blockedBy": ["1"]},
        ],
    )
    ex = _extract(s.write(claude_dir))
    assert _plan(ex) == [("1", "Write a.txt", "in_progress"), ("3", "Write c.txt", "pending")]
    first, third = ex.state.plan
    # gaps filled from task files that agree with the branch, statuses never
    assert (first.description, first.active_form) == ("the a file", "Writing a")
    assert third.blocked_by == ["1"]
    assert "review c.txt" in ex.state.next_steps
    assert not any("abandoned" in step.lower() for step in ex.state.next_steps)
    assert ex.task.latest_user_message == "Instead write c.txt"


def test_task_file_that_disagrees_with_the_branch_is_ignored(claude_dir: Path) -> None:
    s = Session()
    s.user("go")
    s.task_create(1, "Write a.txt")
    s.assistant("started")
    _task_files(
        claude_dir,
        SID,
        [
            {"id": "1", "subject": "Something else", "description": "from another branch"},
            {"id": "7", "subject": "Never created on this branch"},
        ],
    )
    ex = _extract(s.write(claude_dir))
    assert _plan(ex) == [("1", "Write a.txt", "pending")]
    assert ex.state.plan[0].description is None


def test_task_files_alone_do_not_make_a_plan(claude_dir: Path) -> None:
    s = Session()
    s.user("go")
    s.assistant("nothing planned")
    _task_files(claude_dir, SID, [{"id": "1", "subject": "From some other run"}])
    assert _extract(s.write(claude_dir)).state.plan == []


def test_fork_reusing_task_ids_keeps_the_new_task_and_counts_the_earlier(claude_dir: Path) -> None:
    """--fork-session copies the prefix into a new file; the fork's task store starts
    empty, so its first new task is #1 again. Later updates of #1 mean the new task; the
    earlier #1 belongs to an earlier plan: counted, not listed (issue 20)."""
    fork = Session(session_id="cccccccc-0000-4000-8000-000000000011")
    fork.user("Write a.txt")
    fork.task_create(1, "Write a.txt")
    fork.task_update(1, "in_progress")
    fork.assistant("a.txt written.")
    fork.user("Instead write c.txt")
    fork.task_create(1, "Write c.txt")
    fork.task_update(1, "completed")
    fork.assistant("c.txt written.")
    _task_files(
        claude_dir, fork.session_id, [{"id": "1", "subject": "Write c.txt", "status": "completed"}]
    )
    ex = _extract(fork.write(claude_dir))
    assert _plan(ex) == [("1", "Write c.txt", "completed")]
    assert ex.state.omitted.plan_set_aside == 1


def test_todowrite_plan_on_the_branch(claude_dir: Path) -> None:
    s = Session()
    s.user("go")
    s.tool(
        "TodoWrite", {"todos": [{"content": "one", "status": "in_progress", "activeForm": "One"}]}
    )
    resume_at = s.assistant("working")
    s.tool(
        "TodoWrite", {"todos": [{"content": "abandoned", "status": "pending", "activeForm": "A"}]}
    )
    s.parent = resume_at
    s.user("go on")
    s.assistant("still on one")
    assert [(p.subject, p.status) for p in _extract(s.write(claude_dir)).state.plan] == [
        ("one", "in_progress")
    ]


# -- API errors and interruptions -------------------------------------------------------
@pytest.mark.parametrize(
    ("error", "text", "reason"),
    [
        # as 2.1.197 wrote them against the scripted server
        (
            "rate_limit",
            "API Error: Request rejected (429) · Number of request tokens has "
            "exceeded your per-minute rate limit",
            "rate_limit",
        ),
        ("rate_limit", "API Error: Request rejected (429) · You've hit your limit", "usage_limit"),
        (
            "server_error",
            "API Error: 529 Overloaded. This is a server-side issue, usually "
            "temporary — try again in a moment.",
            "overloaded",
        ),
        (
            "server_error",
            "API Error: Repeated 529 Overloaded errors. The API is at capacity",
            "overloaded",
        ),
        (
            "server_error",
            "API Error: 500 Internal server error. This is a server-side issue",
            "error",
        ),
        ("authentication_failed", "Invalid API key · Fix external API key", "auth"),
        ("invalid_request", "Prompt is too long", "context_length"),
        # older and other wordings
        (None, "Claude AI usage limit reached|1767225600", "usage_limit"),
        ("rate_limit", "You've hit your weekly limit · resets Mon 9am", "usage_limit"),
        ("billing_error", "Credit balance is too low", "usage_limit"),
        ("unknown", 'API Error: 401 {"type":"error"}', "auth"),
        ("invalid_request", "input length and max_tokens exceed context limit", "context_length"),
        ("unknown", "API Error: Connection error.", "error"),
    ],
)
def test_api_error_reasons(error: str | None, text: str, reason: str) -> None:
    assert api_error_reason(error, text) == reason


def test_session_ending_on_a_rate_limit(claude_dir: Path) -> None:
    s = Session()
    s.user("Write hello.py")
    s.tool("Write", {"file_path": f"{WS}/hello.py", "content": "x"})
    s.assistant("hello.py is written.")
    s.user("Now add the test")
    s.api_error("API Error: Request rejected (429) · rate limited", "rate_limit")
    path = s.write(claude_dir)
    endings = [e for e in _events(path) if isinstance(e, SessionEnding)]
    assert [(e.reason, e.timestamp) for e in endings] == [
        ("rate_limit", s.records[-1]["timestamp"])
    ]
    ex = _extract(path)
    assert ex.ended.reason == "rate_limit"
    assert ex.ended.message == "API Error: Request rejected (429) · rate limited"
    assert ex.task.latest_progress == "hello.py is written."  # never the CLI's error text
    assert ex.task.latest_user_message == "Now add the test"


def test_context_length_uses_error_details(claude_dir: Path) -> None:
    s = Session()
    s.user("go")
    s.api_error(
        "Request failed",
        "invalid_request",
        errorDetails='400 {"type":"error","error":'
        '{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens"}}',
    )
    assert _extract(s.write(claude_dir)).ended.reason == "context_length"


def test_a_later_answer_means_the_session_recovered(claude_dir: Path) -> None:
    s = Session()
    s.user("go")
    s.api_error("API Error: 529 Overloaded.", "server_error")
    s.user("try again")
    s.assistant("done now")
    ex = _extract(s.write(claude_dir))
    assert ex.ended.reason == "normal"
    assert ex.task.latest_progress == "done now"


def test_api_error_on_an_abandoned_branch_does_not_count(claude_dir: Path) -> None:
    s = Session()
    s.user("go")
    kept = s.assistant("first answer")
    s.user("more")
    s.api_error("API Error: Request rejected (429)", "rate_limit")
    s.parent = kept
    s.user("something else")
    s.assistant("fine")
    assert _extract(s.write(claude_dir)).ended.reason == "normal"


def test_interrupted_turn(claude_dir: Path) -> None:
    s = Session()
    s.user("Refactor greet.py")
    s.assistant("Starting the refactor.")
    s.user("[Request interrupted by user]")
    ex = _extract(s.write(claude_dir))
    assert ex.ended.reason == "interrupted"
    assert ex.task.latest_user_message == "Refactor greet.py"  # the marker is not the user


# -- compaction summaries -----------------------------------------------------------------
SUMMARY_2_1_197 = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\nSummary:\n"
    "1. Primary Request and Intent: build the parser.\n2. Current work: tokenizer done.\n\n"
    "If you need specific details from before compaction (like exact code snippets, error "
    "messages, or content you generated), read the full transcript at: /home/u/.claude/"
    "projects/-ws/x.jsonl\nRecent messages are preserved verbatim.\nContinue the conversation "
    "from where it left off without asking the user any further questions. Resume directly "
    "— do not acknowledge the summary, do not recap what was happening, do not preface with "
    '"I\'ll continue" or similar. Pick up the last task as if the break never happened.'
)
SUMMARY_OLDER = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\nAnalysis: the user wants a parser.\n\n"
    "Please continue the conversation from where we left it off without asking the user any "
    "further questions. Continue with the last task that you were asked to work on."
)


def test_compaction_summary_without_the_cli_instructions() -> None:
    assert clean_compact_summary(SUMMARY_2_1_197) == (
        "1. Primary Request and Intent: build the parser.\n2. Current work: tokenizer done."
    )
    older = clean_compact_summary(SUMMARY_OLDER) or ""
    assert older.endswith("Analysis: the user wants a parser.")
    assert "Please continue" not in older
    assert clean_compact_summary("just a summary") == "just a summary"
    assert clean_compact_summary(None) is None


def _compact(s: Session, summary: str) -> None:
    boundary_parent = s.parent
    s.parent = None
    s.add(
        "system",
        subtype="compact_boundary",
        logicalParentUuid=boundary_parent,
        compactMetadata={"trigger": "manual", "preTokens": 1000},
        content="Conversation compacted",
    )
    s.add(
        "user",
        {"role": "user", "content": summary},
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
    )
    s.user("<local-command-stdout>Compacted</local-command-stdout>")


def test_three_compactions_keep_plan_and_request(claude_dir: Path) -> None:
    s = Session()
    s.user("Build the parser in three steps")
    s.task_create(1, "Tokenize")
    s.task_create(2, "Parse")
    s.task_update(1, "in_progress")
    s.assistant("Tokenizing first.")
    _compact(s, SUMMARY_2_1_197)
    s.user("Go on")
    s.task_update(1, "completed")
    s.task_update(2, "in_progress")
    s.assistant("Parsing now.")
    _compact(s, SUMMARY_2_1_197)
    s.user("Add an evaluator")
    s.task_create(3, "Evaluate")
    s.task_update(2, "completed")
    s.assistant("Parser done.")
    _compact(s, SUMMARY_2_1_197.replace("tokenizer done", "parser done"))
    ex = _extract(s.write(claude_dir))
    assert ex.task.compactions == 3
    assert ex.task.original_request == "Build the parser in three steps"
    assert ex.task.latest_user_message == "Add an evaluator"
    assert _plan(ex) == [
        ("1", "Tokenize", "completed"),
        ("2", "Parse", "completed"),
        ("3", "Evaluate", "pending"),
    ]
    assert ex.task.compaction_summary == (
        "1. Primary Request and Intent: build the parser.\n2. Current work: parser done."
    )


# -- sub-agents -----------------------------------------------------------------------------
def _subagent_file(
    s: Session,
    claude_dir: Path,
    agent_id: str,
    call_id: str | None,
    records: list[dict[str, Any]],
    meta: bool = True,
) -> None:
    folder = s.folder(claude_dir) / s.session_id / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({**r, "isSidechain": True, "agentId": agent_id}) for r in records]
    (folder / f"agent-{agent_id}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if meta:
        (folder / f"agent-{agent_id}.meta.json").write_text(
            json.dumps(
                {
                    "agentType": "general-purpose",
                    "description": "Write helper.py",
                    "toolUseId": call_id,
                    "spawnDepth": 1,
                }
            ),
            encoding="utf-8",
        )


def _subagent_work(agent_id: str) -> list[dict[str, Any]]:
    sub = Session()
    sub.user("SUB-AGENT PROMPT: create helper.py")
    sub.tool("Write", {"file_path": f"{WS}/helper.py", "content": "x"})
    sub.tool(
        "Bash",
        {"command": "make check"},
        "Error: Exit code 2\nmake: *** check failed",
        is_error=True,
    )
    sub.assistant("SUB-AGENT ANSWER")
    for r in sub.records:  # ids that cannot collide with the main session's
        r["uuid"] = f"{agent_id}-{r['uuid']}"
        if r["parentUuid"]:
            r["parentUuid"] = f"{agent_id}-{r['parentUuid']}"
        for block in (r.get("message") or {}).get("content") or []:
            if isinstance(block, dict):
                for key in ("id", "tool_use_id"):
                    if key in block:
                        block[key] = f"{agent_id}-{block[key]}"
    return sub.records


def test_subagent_work_is_read_and_attributed(claude_dir: Path) -> None:
    s = Session()
    s.user("Have a helper write helper.py")
    call_id = s.tool(
        "Agent",
        {
            "description": "Write helper.py",
            "prompt": "SUB-AGENT PROMPT",
            "subagent_type": "general-purpose",
        },
        "helper.py written\nagentId: a1b2c3 (use SendMessage ...)",
        outcome={"status": "completed", "agentId": "a1b2c3", "prompt": "SUB-AGENT PROMPT"},
    )
    s.assistant("The helper wrote helper.py; its check failed.")
    _subagent_file(s, claude_dir, "a1b2c3", call_id, _subagent_work("a1b2c3"))
    path = s.write(claude_dir)
    events = _events(path)
    notes = [e for e in events if isinstance(e, SubagentNote)]
    assert [(n.agent_id, n.agent_type, n.description) for n in notes] == [
        ("a1b2c3", "general-purpose", "Write helper.py")
    ]
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.name, c.by) for c in calls] == [
        ("Agent", None),
        ("Write", "a1b2c3"),
        ("Bash", "a1b2c3"),
    ]
    # the sub-agent's work comes before the Agent call's result (it ran in between)
    ex = _extract(path)
    assert ex.task.original_request == "Have a helper write helper.py"
    assert ex.task.latest_user_message == "Have a helper write helper.py"
    assert "SUB-AGENT" not in json.dumps([e.text for e in ex.task.transcript])
    assert [(f.path, f.by) for f in ex.state.files_touched] == [("helper.py", "a1b2c3")]
    assert ex.state.last_failure is not None
    assert (ex.state.last_failure.command, ex.state.last_failure.by) == ("make check", "a1b2c3")
    assert ex.state.last_failure.exit_code == 2
    assert [(sa.id, sa.agent_type, sa.task) for sa in ex.state.subagents] == [
        ("a1b2c3", "general-purpose", "Write helper.py")
    ]


def test_subagent_found_through_its_meta_when_the_result_never_came(claude_dir: Path) -> None:
    s = Session()
    s.user("Have a helper write helper.py")
    s.add(
        "assistant",
        {
            "id": "mx",
            "role": "assistant",
            "model": "claude-test",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_open",
                    "name": "Agent",
                    "input": {"description": "Write helper.py", "prompt": "p"},
                }
            ],
        },
    )
    _subagent_file(s, claude_dir, "d4e5f6", "toolu_open", _subagent_work("d4e5f6"))
    ex = _extract(s.write(claude_dir))
    assert [(f.path, f.by) for f in ex.state.files_touched] == [("helper.py", "d4e5f6")]


def test_subagents_of_an_abandoned_branch_are_not_read(claude_dir: Path) -> None:
    s = Session()
    s.user("go")
    kept = s.assistant("thinking")
    call_id = s.tool(
        "Agent",
        {"description": "abandoned helper", "prompt": "p"},
        "done",
        outcome={"agentId": "dead01"},
    )
    s.parent = kept
    s.user("do it yourself")
    s.assistant("ok")
    _subagent_file(s, claude_dir, "dead01", call_id, _subagent_work("dead01"))
    ex = _extract(s.write(claude_dir))
    assert ex.state.subagents == [] and ex.state.files_touched == []
    assert ex.state.commands == []


def test_subagent_id_from_the_result_text_without_meta(claude_dir: Path) -> None:
    s = Session()
    s.user("go")
    s.tool(
        "Task",
        {"description": "look", "prompt": "p", "subagent_type": "Explore"},
        "found it\nagentId: 0ld1d (use SendMessage ...)",
    )
    _subagent_file(s, claude_dir, "0ld1d", None, _subagent_work("0ld1d"), meta=False)
    ex = _extract(s.write(claude_dir))
    assert [(sa.id, sa.agent_type, sa.task) for sa in ex.state.subagents] == [
        ("0ld1d", "Explore", "look")
    ]
    assert [c.by for c in ex.state.commands] == ["0ld1d"]


# -- a session started in a subdirectory --------------------------------------------------
def test_session_in_a_subdirectory_is_found_with_repo_relative_files(claude_dir: Path) -> None:
    s = Session(cwd=f"{WS}/pkg")
    s.user("add mod.py")
    s.tool("Write", {"file_path": f"{WS}/pkg/mod.py", "content": "x"})
    s.assistant("added")
    s.write(claude_dir)
    agent = get_agent("claude")
    refs = agent.sessions(Path(WS))
    assert [r.session_id for r in refs] == [SID]
    assert agent.sessions(Path(f"{WS}/pkg")) == refs
    ex = extract(agent.read(refs[0]).events(), workspace=WS)
    assert [f.path for f in ex.state.files_touched] == ["pkg/mod.py"]
