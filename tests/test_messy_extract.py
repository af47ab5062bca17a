"""Extraction on messy sessions: failures fixed later, compaction summaries with the CLI's
own instructions, next steps stated in prose, and sessions that end on an API error."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from passdown._extract import (
    CODEX_SUMMARY_PREFIX,
    OPEN_FAILURES,
    extract,
    strip_compaction_instructions,
)
from passdown._test_runs import covers
from passdown.agents import get_agent
from passdown.agents._endings import classify_api_error
from passdown.transcript import Compaction, Event, Message, SessionEnding, ToolCall, ToolResult

WS = "/tmp/passdown-messy/ws"


def _run(call_id: str, command: str, code: int, error: str | None = None) -> list[Event]:
    return [
        ToolCall(call_id=call_id, name="Bash", action="command", command=command),
        ToolResult(
            call_id=call_id,
            is_error=code != 0,
            exit_code=code,
            error=(error or f"{command} failed") if code else None,
        ),
    ]


def _extract(*runs: tuple[str, int]) -> Any:
    events: list[Event] = [Message(role="user", text="fix the tests")]
    for n, (command, code) in enumerate(runs):
        events += _run(f"c{n}", command, code)
    return extract(iter(events), workspace=WS)


# failures fixed later ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("passed", "failed", "expected"),
    [
        ("pytest tests/test_a.py::test_x", "pytest tests/test_a.py::test_x", True),
        ("pytest tests/test_a.py", "pytest tests/test_a.py::test_x", True),
        ("pytest -q", "pytest tests/test_a.py::test_x", True),
        (
            "cd /ws && python -m pytest -x tests 2>&1 | tail -20",
            "pytest tests/test_a.py::test_x",
            True,
        ),
        ("uv run pytest tests/", "python3 -m pytest tests/test_a.py", True),
        ("pytest tests/test_b.py", "pytest tests/test_a.py::test_x", False),
        ("pytest tests/test_a.py::test_y", "pytest tests/test_a.py::test_x", False),
        ("pytest -k other", "pytest tests/test_a.py::test_x", False),
        ("pytest tests/test_a.py::test_x", "pytest", False),  # a part passing is not the suite
        (
            "python3 -B -m unittest -q test_calc",
            "python3 -B -m unittest test_calc.TestAdd.test_add",
            True,
        ),
        ("cargo test", "cargo test parser::tests::bad_input", True),
        ("ruff check src", "pytest tests/test_a.py", False),
        ("make lint", "make  lint", True),  # the same command, spacing aside
        ("make lint", "make build", False),
    ],
)
def test_which_passing_run_covers_which_failure(passed: str, failed: str, expected: bool) -> None:
    assert covers(passed, failed) is expected


def test_a_failure_fixed_by_a_wider_test_run_is_resolved_and_not_a_blocker() -> None:
    ex = _extract(("pytest tests/test_a.py::test_x", 1), ("pytest tests/test_a.py", 0))
    fail = ex.state.last_failure
    assert fail is not None and fail.command == "pytest tests/test_a.py::test_x"
    assert fail.resolved_later is True
    assert not [b for b in ex.state.blockers if "failed" in b]


def test_the_blocker_is_the_latest_unresolved_failure() -> None:
    # ruff fails and stays failing; the test failure after it is fixed later
    ex = _extract(
        ("ruff check src", 1),
        ("pytest tests/test_a.py::test_x", 1),
        ("pytest", 0),
        ("git status", 0),
    )
    fail = ex.state.last_failure
    assert fail is not None and fail.command == "ruff check src" and not fail.resolved_later
    assert ex.state.blockers == [
        "last command failed (exit 1): ruff check src — ruff check src failed"
    ]


def test_an_unresolved_failure_stays_the_blocker_after_other_commands() -> None:
    ex = _extract(("pytest tests/test_a.py", 1), ("git diff --stat", 0), ("ls", 0))
    assert ex.state.last_failure is not None and not ex.state.last_failure.resolved_later
    assert any("pytest tests/test_a.py" in b for b in ex.state.blockers)


def test_a_grep_without_matches_is_an_answer_not_a_failure() -> None:
    ex = _extract(("pytest", 1), ("pytest", 0), ("grep -rn TODO src", 1))
    assert ex.state.commands_failed == 2
    assert ex.state.last_failure is not None and ex.state.last_failure.command == "pytest"
    assert ex.state.last_failure.resolved_later and not ex.state.blockers


def test_open_failures_are_bounded_and_the_newest_one_wins() -> None:
    runs = [(f"pytest tests/test_{n}.py", 1) for n in range(5000)]
    ex = _extract(*runs, ("pytest tests/test_4999.py", 0))
    fail = ex.state.last_failure
    assert fail is not None and fail.command == "pytest tests/test_4998.py"
    assert not fail.resolved_later and ex.state.commands_failed == 5000
    assert OPEN_FAILURES <= 64  # bounded memory, whatever the session's length


# compaction summaries ----------------------------------------------------------------
CLAUDE_SUMMARY = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\nSummary:\n"
    "1. Primary Request and Intent: add a CSV importer.\n2. Current work: tests fail on "
    "empty rows.\n\nIf you need specific details from before compaction (like exact code "
    "snippets, error messages, or content you generated), read the full transcript at: "
    "/root/.claude/projects/-ws/abc.jsonl\nContinue the conversation from where it left off "
    "without asking the user any further questions. Resume directly — do not acknowledge the "
    "summary, do not recap what was happening."
)


def test_codex_summary_prefix_is_stripped() -> None:
    summary = "## Progress\n- calc.py added\n## Next\n- fix add()"
    assert strip_compaction_instructions(f"{CODEX_SUMMARY_PREFIX}\n{summary}") == summary
    assert strip_compaction_instructions(summary) == summary


def test_claude_opening_and_resume_instructions_are_stripped() -> None:
    assert strip_compaction_instructions(CLAUDE_SUMMARY) == (
        "1. Primary Request and Intent: add a CSV importer.\n"
        "2. Current work: tests fail on empty rows."
    )


def test_extraction_keeps_the_summary_without_the_instructions() -> None:
    events: list[Event] = [
        Message(role="user", text="go"),
        Compaction(summary=f"{CODEX_SUMMARY_PREFIX}\nThe importer is half done."),
    ]
    ex = extract(iter(events), workspace=WS)
    assert ex.task.compaction_summary == "The importer is half done."
    assert ex.task.compactions == 1


# next steps in prose -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("final", "steps"),
    [
        (
            "All tests pass.\n\nNext: run the full suite with coverage and update the README.",
            ["run the full suite with coverage and update the README."],
        ),
        ("Done with the parser.\n\n**Next:** run the full suite.", ["run the full suite."]),
        (
            "Next:\n- run the full suite\n- bump the version",
            ["run the full suite", "bump the version"],
        ),
        # the label is not part of the step (issue 21: "**Next step:** Next: run ...")
        ("Parser fixed. Next: run the full suite. Then ship.", ["run the full suite."]),
        ("Next, I'll wire the CLI.", ["Next, I'll wire the CLI."]),
        (
            "Parser done.\n\n## Next\n- run the full suite\n- tag the release",
            ["run the full suite", "tag the release"],
        ),
    ],
)
def test_next_steps_from_prose(final: str, steps: list[str]) -> None:
    events: list[Event] = [Message(role="user", text="go"), Message(role="assistant", text=final)]
    assert extract(iter(events), workspace=WS).state.next_steps == steps


def test_a_sentence_starting_with_next_is_not_a_header() -> None:
    events: list[Event] = [
        Message(role="user", text="go"),
        Message(role="assistant", text="Next to the parser I found a bug."),
    ]
    assert extract(iter(events), workspace=WS).state.next_steps == []


# Codex rollouts ----------------------------------------------------------------------
@pytest.fixture
def codex_dir(isolated_homes: Path) -> Path:
    return Path(os.environ["CODEX_HOME"])


def _rollout(codex_dir: Path, lines: list[dict[str, Any]]) -> Any:
    folder = codex_dir / "sessions" / "2026" / "11" / "30"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "rollout-2026-11-30T10-00-00-cccccccc-0000-4000-8000-000000000001.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    agent = get_agent("codex")
    return extract(agent.read(agent.ref_for_path(path)).events(), workspace=WS)


def _line(kind: str, payload: dict[str, Any], second: int = 0) -> dict[str, Any]:
    return {"timestamp": f"2026-11-30T10:00:{second:02d}.000Z", "type": kind, "payload": payload}


def _text(role: str, text: str) -> dict[str, Any]:
    part = "input_text" if role == "user" else "output_text"
    return _line(
        "response_item",
        {"type": "message", "role": role, "content": [{"type": part, "text": text}]},
    )


CODEX_HEAD = [
    _line(
        "session_meta",
        {"id": "cccccccc-0000-4000-8000-000000000001", "cwd": WS, "cli_version": "0.171.0"},
    ),
    _text("user", "Add the importer"),
]


def test_codex_final_message_next_prose_gives_next_steps(codex_dir: Path) -> None:
    ex = _rollout(
        codex_dir,
        [
            *CODEX_HEAD,
            _text(
                "assistant",
                "The importer works on the sample.\n\nNext: run the full suite and fix what breaks.",
            ),
            _line(
                "event_msg",
                {"type": "agent_message", "message": "The importer works on the sample."},
            ),
            _line(
                "event_msg", {"type": "task_complete", "last_agent_message": "The importer works."}
            ),
        ],
    )
    assert ex.state.next_steps == ["run the full suite and fix what breaks."]
    assert ex.ended.reason == "normal"


# What Codex 0.171 wrote against the scripted server (sticky 429, 500, 503, 401, usage
# limit, context length): task_complete with an error, nothing else.
@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (
            {
                "message": "exceeded retry limit, last status: 429 Too Many Requests",
                "codex_error_info": {
                    "response_too_many_failed_attempts": {"http_status_code": 429}
                },
            },
            "rate_limit",
        ),
        (
            {
                "message": "We’re currently experiencing high demand, which may cause temporary errors.",
                "codex_error_info": "internal_server_error",
            },
            "overloaded",
        ),
        (
            {
                "message": "unexpected status 503 Service Unavailable: The engine is currently overloaded",
                "codex_error_info": {"http_connection_failed": {"http_status_code": 503}},
            },
            "overloaded",
        ),
        (
            {
                "message": "unexpected status 401 Unauthorized: Incorrect API key provided",
                "codex_error_info": {"http_connection_failed": {"http_status_code": 401}},
            },
            "auth",
        ),
        (
            {
                "message": "You’ve hit your usage limit. Upgrade to Pro or try again at 7:16 PM.",
                "codex_error_info": "usage_limit_exceeded",
            },
            "usage_limit",
        ),
        (
            {
                "message": "Codex ran out of room in the model's context window.",
                "codex_error_info": "context_window_exceeded",
            },
            "context_length",
        ),
        (
            {
                "message": "unexpected status 400 Bad Request: bad tool schema",
                "codex_error_info": "bad_request",
            },
            "error",
        ),
    ],
)
def test_codex_turn_errors_end_the_session(
    codex_dir: Path, error: dict[str, Any], reason: str
) -> None:
    ex = _rollout(
        codex_dir,
        [
            *CODEX_HEAD,
            _text("assistant", "Turn one done."),
            _line("event_msg", {"type": "task_complete", "last_agent_message": "Turn one done."}),
            _text("user", "Now continue please"),
            _line(
                "event_msg",
                {"type": "task_complete", "last_agent_message": None, "error": error},
                9,
            ),
        ],
    )
    assert ex.ended.reason == reason
    assert ex.ended.message == error["message"]
    assert ex.ended.at == "2026-11-30T10:00:09.000Z"


def test_codex_interrupted_turn_and_recovery(codex_dir: Path) -> None:
    aborted = _line("event_msg", {"type": "turn_aborted", "reason": "interrupted"}, 5)
    ex = _rollout(codex_dir, [*CODEX_HEAD, aborted])
    assert ex.ended.reason == "interrupted"
    failed = _line(
        "event_msg",
        {
            "type": "task_complete",
            "error": {
                "message": "exceeded retry limit, last status: 429 Too Many Requests",
                "codex_error_info": {
                    "response_too_many_failed_attempts": {"http_status_code": 429}
                },
            },
        },
    )
    recovered = _rollout(
        codex_dir, [*CODEX_HEAD, failed, _text("user", "again"), _text("assistant", "Done now.")]
    )
    assert recovered.ended.reason == "normal"


def test_a_session_ending_is_dropped_once_the_agent_answers() -> None:
    events: list[Event] = [
        Message(role="user", text="go"),
        SessionEnding(reason="rate_limit", message="429"),
        Message(role="assistant", text="back"),
    ]
    assert extract(iter(events), workspace=WS).ended.reason == "normal"


@pytest.mark.parametrize(
    ("message", "status", "kind", "reason"),
    [
        ("Resource has been exhausted (e.g. check quota).", 429, None, "rate_limit"),
        (
            "You exceeded your current quota, please check your plan and billing details.",
            429,
            None,
            "usage_limit",
        ),
        ("429 Too Many Requests", None, None, "rate_limit"),
        ("Overloaded", 529, None, "overloaded"),
        ("API key not valid. Please pass a valid API key.", 400, None, "auth"),
        ("This model's maximum context length is 128000 tokens.", 400, None, "context_length"),
        ("Internal error encountered.", 500, None, "error"),
        ("boom", None, "RateLimitError", "rate_limit"),
        ("Request was aborted.", None, None, "interrupted"),
        (None, None, None, "error"),
    ],
)
def test_api_errors_are_classified(
    message: str | None, status: int | None, kind: str | None, reason: str
) -> None:
    assert classify_api_error(message, status=status, kind=kind) == reason
