"""VS Code's chat replay log (agents/_chat_log.ChatLogReplay): a long log holds a few bytes
a request in memory, its finished requests spilled to a private temporary file."""

from __future__ import annotations

import json

import msgspec

from passdown.agents._chat_log import ChatLogReplay
from passdown.transcript import Diagnostics


def _line(entry: dict[str, object]) -> bytes:
    return json.dumps(entry).encode()


def _request(n: int) -> dict[str, object]:
    return {"requestId": f"r{n}", "message": {"text": f"ask {n}"}, "response": ["w" * 500]}


def test_finished_requests_are_spilled_and_read_back_in_order() -> None:
    """Every request but the last leaves memory as it is finished (the list keeps an int
    saying where it was written); a later change into an early one still applies, and
    `requests()` gives them all back, then closes the spill file."""
    replay = ChatLogReplay(Diagnostics())
    replay.apply_line(_line({"kind": 0, "v": {"requests": [], "customTitle": "T"}}))
    for n in range(2000):
        replay.apply_line(_line({"kind": 2, "k": ["requests"], "v": [_request(n)]}))
    replay.apply_line(_line({"kind": 1, "k": ["requests", 3, "message", "text"], "v": "edited"}))
    replay.apply_line(_line({"kind": 2, "k": ["requests", 5, "response"], "v": ["more"]}))
    held = replay.state["requests"]
    as_objects = [r for r in held if isinstance(r, (dict, msgspec.Raw))]
    assert len(held) == 2000 and len(as_objects) == 3  # the last, and the two unpacked
    assert len({id(r) for r in held[6:-1]}) == 1  # one shared mark: 8 bytes a request
    requests = list(replay.requests())
    assert [r["requestId"] for r in requests] == [f"r{n}" for n in range(2000)]  # type: ignore[index]
    assert requests[3]["message"]["text"] == "edited"  # type: ignore[index]
    assert requests[5]["response"] == ["w" * 500, "more"]  # type: ignore[index]
    assert requests[1999]["message"]["text"] == "ask 1999"  # type: ignore[index]
    assert replay._spill is None  # closed once read


def test_a_compaction_starts_over_and_the_old_spill_is_not_read() -> None:
    replay = ChatLogReplay(Diagnostics())
    replay.apply_line(_line({"kind": 0, "v": {"requests": [_request(0), _request(1)]}}))
    replay.apply_line(_line({"kind": 2, "k": ["requests"], "v": [_request(2)]}))
    replay.apply_line(_line({"kind": 0, "v": {"requests": [_request(7), _request(8)]}}))
    replay.apply_line(_line({"kind": 2, "k": ["requests"], "v": [_request(9)]}))
    ids = [r["requestId"] for r in replay.requests()]  # type: ignore[index]
    assert ids == ["r7", "r8", "r9"]
