"""Gemini CLI's log replay (passdown.agents.gemini._replay) keeps no Python object per
message: its compact live list must give, on any log, exactly the live messages (and
their lines) that the plain dict replay it replaced gives. The reference below is that
replay, verbatim in what it decides: updates keep a message's position, `$rewindTo`
drops the target and everything after it (everything for an unknown target), a
`$set.messages` with an unseen `<state_snapshot>` appends, any other replaces (records
win over the API-shaped copies, `<id>_response` copies of recorded results are dropped),
a header's `messages` are live at their index.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passdown.agents.gemini._live import LiveList
from passdown.agents.gemini._replay import (
    _CONTROL,
    Replay,
    _Brief,
    _Control,
    _injected,
    _is_snapshot,
)
from passdown.transcript import Diagnostics, SessionInfo


class ReferenceReplay:
    """The replay as it was written with two dicts (id -> (offset, index), id -> best)."""

    def __init__(self) -> None:
        self.live: dict[str, tuple[int, int]] = {}
        self.best: dict[str, int] = {}
        self.off_branch = 0

    def record(self, rec: _Control, offset: int) -> None:
        if isinstance(rec.rewind, str):
            keys = list(self.live)
            dropped = keys[keys.index(rec.rewind) :] if rec.rewind in self.live else keys
            for key in dropped:
                del self.live[key]
                self.best.pop(key, None)
            self.off_branch += len(dropped)
        elif isinstance(rec.id, str):
            self.best[rec.id] = offset
            self.live[rec.id] = (offset, -1)
        elif rec.set is not None:
            if rec.set.messages is not None:
                self.replace(rec.set.messages, offset)
        elif isinstance(rec.sessionId, str) and isinstance(rec.projectHash, str):
            for index, brief in enumerate(rec.messages or ()):
                if isinstance(brief.id, str) and not _injected(brief):
                    self.live[brief.id] = (offset, index)

    def replace(self, messages: list[_Brief], offset: int) -> None:
        old, best = self.live, self.best
        compaction = any(_is_snapshot(m) and m.id not in old and m.id not in best for m in messages)
        new: dict[str, tuple[int, int]] = dict(old) if compaction else {}
        for index, brief in enumerate(messages):
            mid = brief.id
            if not isinstance(mid, str) or _injected(brief) or (compaction and mid in new):
                continue
            if mid in best:
                new[mid] = (best[mid], -1)
            elif mid in old:
                new[mid] = old[mid]
            elif mid.endswith("_response") and mid[: -len("_response")] in best:
                continue
            else:
                new[mid] = (offset, index)
        self.live = new


IDS = [f"m{n}" for n in range(8)] + [f"m{n}_response" for n in range(3)]
_id = st.sampled_from(IDS)
_brief = st.one_of(
    st.builds(
        lambda i, t: {"id": i, "type": t, "content": "text"},
        _id,
        st.sampled_from(["user", "gemini"]),
    ),
    st.builds(lambda i: {"id": i, "type": "user", "content": "<state_snapshot>summary"}, _id),
    st.builds(lambda i: {"id": i, "type": "user", "content": "<session_context>os"}, _id),
    st.just({"type": "user", "content": "<state_snapshot>no id"}),
)
_record = st.one_of(
    st.builds(lambda i: {"id": i, "type": "gemini", "content": "answer"}, _id),
    st.builds(lambda i: {"id": i, "type": "user", "content": "ask"}, _id),
    st.builds(lambda i: {"$rewindTo": i}, st.one_of(_id, st.just("unknown"))),
    st.builds(lambda ms: {"$set": {"messages": ms}}, st.lists(_brief, max_size=6)),
    st.just({"$set": {"lastUpdated": "2026-11-30T00:00:00Z"}}),
    st.builds(
        lambda ms: {"sessionId": "s", "projectHash": "h", "messages": ms},
        st.lists(_brief, max_size=4),
    ),
    st.just("{not json"),
)


def _write(tmp: Path, records: list[Any]) -> tuple[Path, list[int]]:
    path = tmp / "session.jsonl"
    offsets, data = [], bytearray()
    for record in records:
        offsets.append(len(data))
        data += (record if isinstance(record, str) else json.dumps(record)).encode() + b"\n"
    path.write_bytes(bytes(data))
    return path, offsets


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(records=st.lists(_record, max_size=40))
def test_compact_replay_matches_the_dict_replay(tmp_path: Path, records: list[Any]) -> None:
    path, offsets = _write(tmp_path, records)
    reference = ReferenceReplay()
    for record, offset in zip(records, offsets, strict=True):
        line = (record if isinstance(record, str) else json.dumps(record)).encode()
        try:
            rec = _CONTROL.decode(line)
        except Exception:
            continue
        reference.record(rec, offset)
    diag = Diagnostics()
    replay = Replay(path, SessionInfo(agent="gemini", session_id="s", path=path), diag)
    replay.run()
    live = replay.live
    got = [(live.offsets[s], live.index(s)) for s in range(len(live))]
    assert got == list(reference.live.values())
    assert diag.off_branch_records == reference.off_branch


def test_live_list_survives_growth_and_truncation() -> None:
    """Thousands of ids (the id table rebuilt several times), a rewind to the middle,
    then the dropped ids written again: each is found at its new position."""
    live = LiveList()
    keys = [hash(f"id-{n}") for n in range(5000)]
    for n, key in enumerate(keys):
        live.append(key, n * 10)
    assert all(live.find(key) == n for n, key in enumerate(keys))
    live.truncate(2500)
    assert live.find(keys[2499]) == 2499 and live.find(keys[2500]) == -1
    for key in reversed(keys[2500:]):
        live.append(key, 7)
    assert live.find(keys[4999]) == 2500 and live.find(keys[2500]) == 4999
    assert len(live) == 5000 and live.offsets[4999] == 7


def test_live_list_widens_offsets_past_4_gib() -> None:
    """A file under 4 GiB keeps 4-byte offsets; one that grows past it while being read
    switches to 8 bytes without losing what it holds."""
    live = LiveList("I")
    live.append(hash("a"), 2**32 - 1)
    assert live.max_offset == 2**32 - 1
    live.widen()
    live.upsert(hash("b"), 2**40)
    assert list(live.offsets) == [2**32 - 1, 2**40]
    assert live.find(hash("b")) == 1
