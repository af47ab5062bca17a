"""Each reader turns what its CLI writes about a failed model request into how the session
ended. The sessions are the real recorded ones (tests/fixtures/sessions/<agent>/full) with
the error records each pinned CLI wrote when its scripted server answered 429/401,
appended as the CLI appends them; an answer after the error means the session recovered."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from passdown._extract import Extracted, extract
from passdown.agents import get_agent
from recorded import FIXTURES, Recorded

RATE_LIMIT = (
    "429 Rate limit reached for gpt-5.5 in organization org-x on tokens per min "
    "(TPM): Limit 30000, Used 30000. Please try again in 20s."
)
LATER = "2026-11-30T18:30:00.000Z"


def _recorded(agent: str) -> Recorded:
    root = FIXTURES / agent / "full"
    return Recorded(agent, "full", root, json.loads((root / "expected.json").read_text()))


def _install(agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Recorded, Path]:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    rec = _recorded(agent)
    main = rec.install(tmp_path / "home", monkeypatch)
    if agent == "copilot":
        main = next((tmp_path / "home" / ".copilot").rglob("events.jsonl"))
    elif agent == "gemini":
        main = next((tmp_path / "home" / ".gemini" / "tmp").rglob("session-*.jsonl"))
    return rec, main


def _read(agent: str, rec: Recorded, path: Path) -> Extracted:
    reader = get_agent(agent)
    transcript = reader.read(reader.ref_for_path(path))
    return extract(transcript.events(), workspace=rec.expected["workspace"])


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _append(path: Path, *records: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record) + "\n")


# what each CLI appends (shapes copied from the files the pinned CLIs wrote) ------------
def _qwen_error(
    path: Path, status: int = 429, kind: str = "RateLimitError", message: str = RATE_LIMIT
) -> None:
    last = _lines(path)[-1]
    event = {
        "event.name": "qwen-code.api_error",
        "event.timestamp": LATER,
        "response_id": "",
        "model": "scripted-model",
        "duration_ms": 3009,
        "auth_type": "openai",
        "error_message": message,
        "error_type": kind,
        "status_code": status,
    }
    _append(
        path,
        {
            "uuid": "e0000000-0000-4000-8000-000000000001",
            "parentUuid": last["uuid"],
            "sessionId": last["sessionId"],
            "timestamp": LATER,
            "type": "system",
            "provenance": "system",
            "cwd": last["cwd"],
            "version": "0.24.4",
            "gitBranch": "main",
            "subtype": "ui_telemetry",
            "systemPayload": {"uiEvent": event},
        },
    )


def _pi_error(path: Path, status: int = 429, kind: str = "", message: str = RATE_LIMIT) -> None:
    last = _lines(path)[-1]
    _append(
        path,
        {
            "type": "message",
            "id": "e1e1e1e1",
            "parentId": last["id"],
            "timestamp": LATER,
            "message": {
                "role": "assistant",
                "content": [],
                "api": "openai-completions",
                "provider": "scripted",
                "model": "scripted-model",
                "stopReason": "error",
                "timestamp": 1796063030687,
                "errorMessage": message,
            },
        },
    )


def _copilot_error(
    path: Path, status: int = 429, kind: str = "rate_limit", message: str = RATE_LIMIT
) -> None:
    last = _lines(path)[-1]
    _append(
        path,
        {
            "type": "session.error",
            "data": {
                "errorType": kind,
                "statusCode": status,
                "message": "Failed to get response from the AI model; retried 5 times (total retry "
                f"wait time: 52.36 seconds) Last error: {message}",
            },
            "id": "e1e1e1e1-0000-4000-8000-000000000001",
            "timestamp": LATER,
            "parentId": last.get("id"),
        },
    )


def _gemini_error(path: Path, status: int = 429, kind: str = "", message: str = "") -> None:
    # the interactive UI's notice (parseAndFormatApiError); `gemini -p` writes none
    text = message or (
        "[API Error: Resource has been exhausted (e.g. check quota).]\nPlease wait "
        "and try again later. To increase your limits, request a quota increase "
        "through AI Studio, or switch to another /auth method"
    )
    _append(
        path,
        {
            "id": "e1e1e1e1-0000-4000-8000-000000000001",
            "timestamp": LATER,
            "type": "error",
            "content": text,
        },
    )


def _opencode_error(
    path: Path, status: int = 429, kind: str = "APIError", message: str = RATE_LIMIT
) -> None:
    with closing(sqlite3.connect(path)) as db:
        row_id, data = db.execute(
            "SELECT id, data FROM message ORDER BY time_created DESC, id DESC LIMIT 1"
        ).fetchone()
        msg = json.loads(data)
        assert msg["role"] == "assistant"
        msg["error"] = {
            "name": kind,
            "data": {
                "message": message.removeprefix("429 "),
                "statusCode": status,
                "isRetryable": status == 429,
                "responseBody": json.dumps({"error": {"message": message, "code": "x"}}),
            },
        }
        db.execute("UPDATE message SET data = ? WHERE id = ?", (json.dumps(msg), row_id))
        db.commit()


APPENDERS: dict[str, Callable[..., None]] = {
    "qwen": _qwen_error,
    "pi": _pi_error,
    "copilot": _copilot_error,
    "gemini": _gemini_error,
    "opencode": _opencode_error,
}


@pytest.mark.parametrize("agent", sorted(APPENDERS))
def test_a_rate_limit_the_cli_recorded_ends_the_session(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec, path = _install(agent, tmp_path, monkeypatch)
    assert _read(agent, rec, path).ended.reason == "normal"  # the recorded session as is
    APPENDERS[agent](path)
    ex = _read(agent, rec, path)
    assert ex.ended.reason == "rate_limit", ex.ended
    # when the CLI gave up (opencode: the failed message's completion time)
    assert ex.ended.at and ex.ended.at > rec.expected.get("started_at", "2026-11-29")
    assert ex.ended.message and any(
        w in ex.ended.message for w in ("429", "Rate limit", "exhausted")
    )
    # the rest of the handoff is unchanged by the ending
    assert ex.task.original_request == rec.expected["original_request"]
    assert ex.task.latest_progress == rec.expected["final_assistant_message"]


@pytest.mark.parametrize(
    ("agent", "status", "kind", "message"),
    [
        ("qwen", 401, "AuthenticationError", "401 Incorrect API key provided: sk-test."),
        (
            "copilot",
            401,
            "authentication",
            "Authentication failed with provider at http://127.0.0.1:1/v1 (HTTP 401).",
        ),
        ("pi", 401, "", "401 Incorrect API key provided: sk-test."),
        ("opencode", 401, "APIError", "Incorrect API key provided: sk-test."),
        ("gemini", 401, "", "[API Error: API key not valid. Please pass a valid API key.]"),
    ],
)
def test_an_auth_error_the_cli_recorded(
    agent: str,
    status: int,
    kind: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rec, path = _install(agent, tmp_path, monkeypatch)
    APPENDERS[agent](path, status=status, kind=kind, message=message)
    assert _read(agent, rec, path).ended.reason == "auth"


def test_a_pi_session_that_answered_after_the_error_recovered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec, path = _install("pi", tmp_path, monkeypatch)
    _pi_error(path)
    _append(
        path,
        {
            "type": "message",
            "id": "f2f2f2f2",
            "parentId": "e1e1e1e1",
            "timestamp": "2026-11-30T18:31:00.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "Back again."}],
                "stopReason": "stop",
                "model": "scripted-model",
            },
        },
    )
    ex = _read("pi", rec, path)
    assert ex.ended.reason == "normal"
    assert ex.task.latest_progress == "Back again."


def test_a_pi_turn_the_user_aborted_was_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec, path = _install("pi", tmp_path, monkeypatch)
    last = _lines(path)[-1]
    _append(
        path,
        {
            "type": "message",
            "id": "a1a1a1a1",
            "parentId": last["id"],
            "timestamp": LATER,
            "message": {
                "role": "assistant",
                "content": [],
                "stopReason": "aborted",
                "errorMessage": "Request was aborted",
            },
        },
    )
    assert _read("pi", rec, path).ended.reason == "interrupted"


def test_gemini_request_cancelled_notice_is_an_interruption(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec, path = _install("gemini", tmp_path, monkeypatch)
    _append(path, {"id": "c1", "timestamp": LATER, "type": "info", "content": "Request cancelled."})
    assert _read("gemini", rec, path).ended.reason == "interrupted"
