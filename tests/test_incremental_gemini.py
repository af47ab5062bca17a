"""Incremental export of Gemini CLI sessions (passdown.agents.gemini._resume): exporting
after every append through the session's checkpoint gives exactly the handoff a full
read gives.

The sessions are built from the recorded Gemini CLI session (tests/fixtures/sessions/
gemini): its real turns (a prompt, then the model's message written once and rewritten
with its tool calls' results), with fresh ids in every copy, and records of the shapes
the CLI writes for `/rewind` (`$rewindTo`), a compression (a `$set.messages` with a new
`<state_snapshot>` summary), a resume (a new header, the history emptied and written
again), a history cut to its last messages, an API error notice, a cancelled request, a rewritten old message and an
unreadable line, appended in chunks that cut lines anywhere (a torn last line is read
for the handoff but never checkpointed past).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from passdown import _checkpoint as checkpoint
from passdown import _pipeline as pipeline
from passdown.agents import get_agent
from passdown.agents.gemini import _replay, _resume
from passdown.errors import SessionReadError
from workspace_probe import workspace_probed_once

FIXTURE = next(
    (Path(__file__).parent / "fixtures" / "sessions" / "gemini" / "full").rglob("session-*.jsonl")
)
LINES = FIXTURE.read_bytes().splitlines(keepends=True)
HEADER = b"".join(LINES[:2])  # the header and the session context `$set`
# the recorded turns: a prompt, `lastUpdated`, the model's message, `lastUpdated`, the
# same message rewritten with its tool calls' results
REAL_TURNS = [b"".join(LINES[start : start + 5]) for start in range(2, 52, 5)]
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_CALL_ID = re.compile(rb"[a-z_]+__[a-z_]+_[0-9]{10,}_[0-9]+")


class GeminiTurns:
    """Real-shaped Gemini CLI records; every copy of a turn gets fresh ids."""

    def __init__(self) -> None:
        self.n = 0
        self.messages: list[tuple[str, str]] = []  # (id, type) in the order written
        self.prompts: list[str] = []  # the user messages' ids

    def _next(self) -> int:
        self.n += 1
        return self.n

    def _note(self, record: dict[str, Any]) -> None:
        if (message_id := record.get("id")) and (message_id, record["type"]) not in self.messages:
            self.messages.append((message_id, record["type"]))
            if record["type"] == "user":
                self.prompts.append(message_id)

    def real_turn(self, which: int) -> bytes:
        n = self._next()
        turn = REAL_TURNS[which % len(REAL_TURNS)]
        turn = _UUID.sub(lambda m: m.group()[:-8] + b"%08x" % n, turn)
        turn = _CALL_ID.sub(lambda m: m.group() + b"-%d" % n, turn)
        for line in turn.splitlines():
            self._note(json.loads(line))
        return turn

    def _record(self, kind: str, content: str) -> bytes:
        record = {
            "id": f"m-{self._next()}",
            "timestamp": f"2026-11-30T10:{self.n % 60:02d}:00.000Z",
            "type": kind,
            "content": content,
        }
        self._note(record)
        return _line(record)

    def prompt(self) -> bytes:
        return self._record("user", f"Prompt {self.n}: keep going.")

    def reply(self) -> bytes:
        return self._record("gemini", f"Reply {self.n}.\nNext steps:\n- run the suite")

    def rewind(self, back: int) -> bytes:
        """`/rewind` to the prompt `back` turns ago (an unknown id if there is none)."""
        target = self.prompts[-back] if len(self.prompts) >= back else "not-a-message"
        return _line({"$rewindTo": target})

    def compression(self) -> bytes:
        n = self._next()
        summary = {
            "id": f"snap-{n}",
            "type": "user",
            "content": [{"text": f"<state_snapshot>Summary {n}: add() fixed.</state_snapshot>"}],
        }
        ack = {
            "id": f"ack-{n}",
            "type": "gemini",
            "content": [{"text": "Got it. Thanks for the additional context!"}],
        }
        return _line({"$set": {"messages": [summary, ack]}})

    def resume(self) -> bytes:
        """What `gemini --resume` writes: a header, the history emptied to the session
        context, then the whole history again (as API-shaped briefs)."""
        header, context = LINES[0], LINES[1]
        history = [{"id": i, "type": t, "content": [{"text": "..."}]} for i, t in self.messages]
        return header + context + _line({"$set": {"messages": history}})

    def history_tail(self, keep: int) -> bytes:
        """A `$set.messages` that keeps only the last messages (after an aborted turn
        the CLI writes the history it keeps)."""
        kept = self.messages[-keep:]
        return _line({"$set": {"messages": [{"id": i, "type": t} for i, t in kept]}})

    def rewrite_old(self) -> bytes:
        """An update of an early message (the CLI never does it; a log may)."""
        if not self.messages:
            return b""
        message_id, kind = self.messages[0]
        return _line({"id": message_id, "type": kind, "content": f"rewritten {self._next()}"})

    def api_error(self) -> bytes:
        return self._record("error", "[API Error: 429 Too Many Requests. Quota exceeded.]")

    def cancelled(self) -> bytes:
        return self._record("info", "Request cancelled.")

    def touch(self) -> bytes:
        return _line({"$set": {"lastUpdated": f"2026-11-30T11:{self._next() % 60:02d}:00.000Z"}})

    def garbage(self) -> bytes:
        return b'{"id":"broken","type":"gemini",not json\n'


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


TURNS: list[Callable[[GeminiTurns], bytes]] = [
    *[lambda m, i=i: m.real_turn(i) for i in range(len(REAL_TURNS))],
    lambda m: m.prompt(),
    lambda m: m.reply(),
    lambda m: m.rewind(1),
    lambda m: m.rewind(3),
    lambda m: m.rewind(99),
    lambda m: m.compression(),
    lambda m: m.resume(),
    lambda m: m.history_tail(3),
    lambda m: m.rewrite_old(),
    lambda m: m.api_error(),
    lambda m: m.cancelled(),
    lambda m: m.touch(),
    lambda m: m.garbage(),
]


def _layout(root: Path) -> tuple[Path, Path]:
    chats = root / ".gemini" / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    workspace = root / "ws"
    workspace.mkdir()
    return chats / FIXTURE.name, workspace


def _outcome(path: Path, workspace: Path, *, incremental: bool) -> dict[str, Any] | str:
    agent = get_agent("gemini")
    selection = pipeline.Selection(agent=agent, ref=agent.ref_for_path(path), workspace=workspace)
    try:
        with pytest.MonkeyPatch.context() as env:
            if incremental:
                env.delenv(checkpoint.DISABLE_ENV, raising=False)
            else:
                env.setenv(checkpoint.DISABLE_ENV, "1")
            data = pipeline.build_handoff(selection).model_dump(mode="json")
    except SessionReadError as exc:  # nothing readable yet (a torn first line)
        return exc.message
    del data["id"], data["created_at"]
    return data


def _export_and_compare(path: Path, workspace: Path) -> dict[str, Any] | str:
    incremental = _outcome(path, workspace, incremental=True)
    full = _outcome(path, workspace, incremental=False)
    assert incremental == full
    return incremental


def _saved(path: Path) -> checkpoint.Checkpoint | None:
    store = checkpoint.checkpoint_path("gemini", path)
    if not store.exists():
        return None
    return msgspec.msgpack.decode(store.read_bytes(), type=checkpoint.Checkpoint)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.integers(0, 1000), min_size=1, max_size=14),
    cuts=st.lists(st.tuples(st.booleans(), st.floats(0.0, 1.0)), min_size=1, max_size=8),
    tail=st.sampled_from([1, 3, _resume.TAIL]),
)
@example(
    picks=[656],
    cuts=[(False, 0.9999999999999999)],
    tail=1,
)  # a torn last line read while the checkpoint's views of the arrays lived
@example(
    picks=[654],
    cuts=[(False, 0.9999999999999999)],
    tail=1,
)  # a torn last line read while the checkpoint's views of the arrays lived
def test_incremental_export_equals_full_read(
    picks: list[int], cuts: list[tuple[bool, float]], tail: int
) -> None:
    """`tail`: how many messages the reader keeps back (fewer: more is handed on early,
    so more of the appended records change what was handed on)."""
    kept_back, _resume.TAIL = _resume.TAIL, tail
    try:
        _appended_in_chunks(picks, cuts)
    finally:
        _resume.TAIL = kept_back


def _appended_in_chunks(picks: list[int], cuts: list[tuple[bool, float]]) -> None:
    maker = GeminiTurns()
    body = HEADER + b"".join(TURNS[p % len(TURNS)](maker) for p in picks)
    line_ends = [i + 1 for i, byte in enumerate(body) if byte == 0x0A]
    ends = sorted(
        {
            line_ends[int(f * (len(line_ends) - 1))] if at_line_end else int(f * len(body))
            for at_line_end, f in cuts
        }
        | {len(body)}
    )
    with tempfile.TemporaryDirectory() as tmp, workspace_probed_once():
        path, workspace = _layout(Path(tmp))
        written = 0
        for end in ends:
            if end <= written:
                continue
            with open(path, "ab") as handle:
                handle.write(body[written:end])
            written = end
            handoff = _export_and_compare(path, workspace)
            saved = _saved(path)
            # a checkpoint, when the export kept one, ends at the last complete line
            assert saved is None or saved.offset == body[:end].rfind(b"\n") + 1
        if isinstance(handoff, str):  # only records nothing can read (the garbage line)
            assert "holds no readable gemini record" in handoff
        else:
            assert handoff["source"]["agent"] == "gemini"


@pytest.fixture
def session(tmp_path: Path) -> tuple[Path, Path, GeminiTurns]:
    path, workspace = _layout(tmp_path)
    maker = GeminiTurns()
    path.write_bytes(HEADER + maker.real_turn(0) + maker.real_turn(1))
    return path, workspace, maker


@pytest.fixture
def windows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The offsets each replay of the session started at (0: from the start)."""
    seen: list[int] = []
    run = _replay.Replay.run

    def spy(self: _replay.Replay, stream: Any = None, base: int = 0) -> None:
        if stream is not None:
            seen.append(base)
        run(self, stream, base)

    monkeypatch.setattr(_replay.Replay, "run", spy)
    return seen


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def test_appended_turns_are_read_from_the_checkpoint(
    session: tuple[Path, Path, GeminiTurns], windows: list[int]
) -> None:
    """After real turns are appended, the export replays only the appended bytes, and
    its handoff has the new turn's prompt, plan and files as a full read has them."""
    path, workspace, maker = session
    _export_and_compare(path, workspace)
    size = path.stat().st_size
    _append(path, maker.real_turn(3) + maker.real_turn(4))
    windows.clear()
    handoff = _export_and_compare(path, workspace)
    assert windows[0] == size  # the incremental export started at the old end
    assert isinstance(handoff, dict)
    assert "greet" in handoff["task"]["latest_user_message"]
    saved = _saved(path)
    assert saved is not None and saved.offset == path.stat().st_size


def test_a_resume_keeps_the_checkpoint(
    session: tuple[Path, Path, GeminiTurns], windows: list[int]
) -> None:
    """`gemini --resume` empties the history and writes it again: the messages handed
    on are all still there, from the same lines, so the checkpoint is followed."""
    path, workspace, maker = session
    _export_and_compare(path, workspace)
    size = path.stat().st_size
    _append(path, maker.resume() + maker.real_turn(2))
    windows.clear()
    _export_and_compare(path, workspace)
    assert windows == [size, path.stat().st_size]  # the new lines, then the empty tail
    assert _saved(path) is not None


@pytest.mark.parametrize("change", ["rewind", "rewrite_old", "history_tail"])
def test_a_change_to_what_was_handed_on_reads_the_file_anew(
    session: tuple[Path, Path, GeminiTurns], windows: list[int], change: str
) -> None:
    """A rewind to the first prompt, an update of the first message, or a history cut
    to its last messages changes what the checkpoint handed on: the export reads the whole file and the handoff is the
    full read's (the rewound turns are gone); the next export starts a checkpoint anew."""
    path, workspace, maker = session
    for which in range(2, 14):  # more messages than the reader keeps back
        _append(path, maker.real_turn(which))
    _export_and_compare(path, workspace)
    first_prompt = maker.prompts[0]
    appended = {
        "rewind": lambda: maker.rewind(len(maker.prompts)),
        "rewrite_old": maker.rewrite_old,
        "history_tail": lambda: maker.history_tail(3),
    }[change]()
    _append(path, appended)
    windows.clear()
    handoff = _export_and_compare(path, workspace)
    assert windows and windows[0] > 0  # the checkpoint was tried first, then refused
    assert _saved(path) is None
    assert isinstance(handoff, dict)
    if change == "rewind":  # nothing is left of the conversation but the refusal shows
        assert handoff["task"]["messages_total"] == 0
    windows.clear()
    _append(path, maker.prompt())
    _export_and_compare(path, workspace)
    assert windows[0] == 0 and _saved(path) is not None
    assert first_prompt in maker.prompts


@pytest.mark.parametrize(
    "spoil",
    [
        {"offset_code": "b"},  # offsets that would overflow at the first append
        {"keys": b"\x00" * 7},  # not whole 8-byte keys
        {"frozen": 10**6},  # more messages handed on than the list holds
        {"pending": [{"no": "call"}]},
    ],
)
def test_a_spoilt_reader_state_means_a_full_read(
    session: tuple[Path, Path, GeminiTurns], windows: list[int], spoil: dict[str, Any]
) -> None:
    """A checkpoint whose Gemini state does not hold together is not used: the export
    reads the file from its start and gives the full read's handoff."""
    path, workspace, maker = session
    _export_and_compare(path, workspace)
    store = checkpoint.checkpoint_path("gemini", path)
    saved = msgspec.msgpack.decode(store.read_bytes(), type=checkpoint.Checkpoint)
    state = msgspec.msgpack.decode(saved.reader)
    state.update(spoil)
    saved.reader = msgspec.Raw(msgspec.msgpack.encode(state))
    store.write_bytes(msgspec.msgpack.encode(saved))
    _append(path, maker.real_turn(5))
    windows.clear()
    _export_and_compare(path, workspace)
    assert windows[0] == 0  # from the start of the file
