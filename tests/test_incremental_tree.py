"""Incremental export of tree-shaped sessions (Claude Code, Qwen Code, pi): exporting
through the checkpoint after every append gives exactly the handoff a full read gives,
also when the appended records rewind to an older node, compact, or end in a torn line.

The sessions are built from the recorded sessions in tests/fixtures/sessions/<agent>/:
slices of their real turns with every id refreshed, each slice re-parented onto the
current leaf (or, for a rewind, onto an older record), plus real-shaped compactions,
the records outside the conversation tree (Claude's snapshots, leaf hints, sidechain
and API-error records; Qwen's fragments) and an unreadable line.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passdown import _checkpoint as checkpoint
from test_incremental import READINGS, _env, _export_and_compare, _saved
from workspace_probe import workspace_probed_once

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
# uuids and prefixed tool-call / message ids, as benchmarks/realshape.py finds them
ID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|(?:toolu|call|msg|req|fc)_[A-Za-z0-9]{8,}"
)


@dataclass(frozen=True)
class Fixture:
    agent: str
    root: Path  # the recorded store
    session: str  # the session file, relative to the store
    env_var: str  # where the agent finds its store
    key: str  # id field
    parent: str  # parent id field
    header: slice  # the lines kept as the session's start
    turns: tuple[slice, ...]  # slices of whole turns to append

    @property
    def lines(self) -> list[bytes]:
        return (self.root / self.session).read_bytes().splitlines()


CLAUDE = Fixture(
    "claude",
    FIXTURES / "claude" / "full",
    "projects/-tmp-passdown-rec-claude-full/5e551011-0000-4000-8000-00000000c1a0.jsonl",
    "CLAUDE_CONFIG_DIR",
    "uuid",
    "parentUuid",
    slice(0, 2),
    (slice(2, 35), slice(35, 47), slice(47, 57), slice(72, 82)),
)
QWEN = Fixture(
    "qwen",
    FIXTURES / "qwen" / "full",
    ".qwen/projects/-tmp-passdown-rec-qwen-full/chats/a7009620-95ec-4e3e-a63e-12b825d73380.jsonl",
    "HOME",
    "uuid",
    "parentUuid",
    slice(0, 1),
    (slice(1, 15), slice(15, 28), slice(28, 55), slice(55, 72)),
)
PI = Fixture(
    "pi",
    FIXTURES / "pi" / "full",
    ".pi/agent/sessions/--tmp-passdown-rec-pi-full--/"
    "2026-11-29T21-24-12-063Z_01a22931-b09e-7261-98e7-c4ddd63af5d8.jsonl",
    "HOME",
    "id",
    "parentId",
    slice(0, 3),
    (slice(3, 11), slice(11, 19), slice(19, 25)),
)
SESSION_IDS = {
    "5e551011-0000-4000-8000-00000000c1a0",
    "a7009620-95ec-4e3e-a63e-12b825d73380",
    "01a22931-b09e-7261-98e7-c4ddd63af5d8",
}


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


class TreeMaker:
    """Appends real-shaped records to one tree session, keeping track of its leaf."""

    def __init__(self, fixture: Fixture) -> None:
        self.fx = fixture
        self.lines = fixture.lines
        self.serial = itertools.count(1)
        self.nodes: list[str] = []  # tree records written, in file order
        self.leaf: str | None = None
        self.last: dict[str, Any] | None = None  # the newest tree record

    def _fresh(self, token: str) -> str:
        tag = f"{next(self.serial):x}"
        return token[: len(token) - len(tag)] + tag

    def _remap(self, lines: list[bytes]) -> list[dict[str, Any]]:
        """The records of `lines` with every id they define replaced by a fresh one."""
        text = b"\n".join(lines).decode()
        mapping: dict[str, str] = {}

        def fresh(match: re.Match[str]) -> str:
            token = match.group()
            if token in SESSION_IDS:
                return token
            if token not in mapping:
                mapping[token] = self._fresh(token)
            return mapping[token]

        return [json.loads(line) for line in ID.sub(fresh, text).splitlines()]

    def _is_node(self, record: dict[str, Any]) -> bool:
        return bool(record.get(self.fx.key)) and record.get("type") != "session"

    def _emit(self, records: list[dict[str, Any]], attach_to: str | None) -> bytes:
        first = True
        for record in records:
            if not self._is_node(record):
                continue
            if first and self.fx.key in record:
                record[self.fx.parent] = attach_to
                first = False
            self.nodes.append(record[self.fx.key])
            self.leaf = record[self.fx.key]
            self.last = record
        return b"".join(_line(r) for r in records)

    def header(self) -> bytes:
        records = [json.loads(line) for line in self.lines[self.fx.header]]
        for record in records:
            if self._is_node(record):
                self.nodes.append(record[self.fx.key])
                self.leaf = record[self.fx.key]
                self.last = record
        return b"".join(_line(r) for r in records)

    def turn(self, which: int) -> bytes:
        part = self.fx.turns[which % len(self.fx.turns)]
        return self._emit(self._remap(self.lines[part]), self.leaf)

    def rewind(self, which: int, back: int) -> bytes:
        """A turn attached to an older record: the records after it become a dead branch."""
        if len(self.nodes) > 1:
            self.leaf = self.nodes[-1 - back % len(self.nodes)]
        return self.turn(which)

    def garbage(self) -> bytes:
        return b'{"type":"user","message":{not json\n'

    def node(self, record: dict[str, Any]) -> bytes:
        record[self.fx.key] = self._fresh("00000000-0000-4000-8000-000000000000")
        record[self.fx.parent] = self.leaf
        return self._emit([record], self.leaf)


class ClaudeMaker(TreeMaker):
    def compaction(self) -> bytes:
        boundary, summary = self._remap(self.lines[61:63])
        boundary["parentUuid"] = None
        boundary["logicalParentUuid"] = self.leaf
        summary["parentUuid"] = boundary["uuid"]
        self.nodes += [boundary["uuid"], summary["uuid"]]
        self.leaf = summary["uuid"]
        return _line(boundary) + _line(summary)

    def outside(self, kind: int) -> bytes:
        """Records outside the conversation tree: pass 1 skips or only reads a hint."""
        uuid = self._fresh("00000000-0000-4000-8000-000000000000")
        records = [
            {"type": "file-history-snapshot", "messageId": uuid, "snapshot": {}},
            {"type": "last-prompt", "leafUuid": self.leaf, "sessionId": next(iter(SESSION_IDS))},
            {"type": "summary", "summary": f"Title {uuid[-4:]}", "leafUuid": self.leaf},
            {"type": "custom-title", "customTitle": f"Custom {uuid[-4:]}"},
            # a leaf hint naming an older record: while it is last, the branch ends there
            {"type": "last-prompt", "leafUuid": self.nodes[-1 - kind % len(self.nodes)]},
            {
                "type": "assistant",
                "uuid": uuid,
                "parentUuid": self.leaf,
                "isSidechain": True,
                "message": {"role": "assistant", "content": [{"type": "text", "text": "side"}]},
            },
        ]
        if kind % (len(records) + 1) == len(records):  # a progress record on the chain
            return self.node({"type": "progress", "data": {"type": "hook_progress"}})
        return _line(records[kind % (len(records) + 1)])

    def api_error(self) -> bytes:
        return self.node(
            {
                "type": "assistant",
                "isApiErrorMessage": True,
                "error": "rate_limit",
                "timestamp": "2026-11-29T21:20:00.000Z",
                "message": {
                    "role": "assistant",
                    "model": "<synthetic>",
                    "content": [{"type": "text", "text": "API Error: Request rejected (429)"}],
                },
            }
        )


class QwenMaker(TreeMaker):
    def compaction(self) -> bytes:
        return self.node(
            {
                "type": "system",
                "subtype": "chat_compression",
                "sessionId": "a7009620-95ec-4e3e-a63e-12b825d73380",
                "timestamp": "2026-11-29T21:20:00.000Z",
                "systemPayload": {
                    "info": {"trigger": "auto"},
                    "compressedHistory": [
                        {"role": "user", "parts": [{"text": f"Summary {next(self.serial)}"}]},
                        {"role": "model", "parts": [{"text": "Got it."}]},
                    ],
                },
            }
        )

    def outside(self, kind: int) -> bytes:
        """A fragment: the newest record written again under its own uuid."""
        if self.last is None:
            return b""
        fragment = copy.deepcopy(self.last)
        fragment["message"] = {"role": "model", "parts": [{"text": f"More {kind}."}]}
        return _line(fragment)

    def api_error(self) -> bytes:
        return self.node(
            {
                "type": "system",
                "subtype": "ui_telemetry",
                "timestamp": "2026-11-29T21:20:00.000Z",
                "systemPayload": {
                    "uiEvent": {
                        "event.name": "qwen-code.api_error",
                        "error_message": "429 Too Many Requests",
                        "status_code": 429,
                    }
                },
            }
        )


class PiMaker(TreeMaker):
    def compaction(self) -> bytes:
        return self.node(
            {
                "type": "compaction",
                "timestamp": "2026-11-29T21:20:00.000Z",
                "summary": f"Summary {next(self.serial)}: add() fixed.",
                "firstKeptEntryId": self.leaf,
                "tokensBefore": 1200,
            }
        )

    def outside(self, kind: int) -> bytes:
        return self.node(
            {"type": "session_info", "name": f"Title {kind}", "timestamp": "2026-11-29T21:21Z"}
        )

    def api_error(self) -> bytes:
        return self.node(
            {
                "type": "message",
                "timestamp": "2026-11-29T21:20:00.000Z",
                "message": {
                    "role": "assistant",
                    "content": [],
                    "stopReason": "error",
                    "errorMessage": "429 rate limit",
                },
            }
        )


MAKERS: dict[str, tuple[Fixture, type[TreeMaker]]] = {
    "claude": (CLAUDE, ClaudeMaker),
    "qwen": (QWEN, QwenMaker),
    "pi": (PI, PiMaker),
}
STEPS: list[Callable[[Any, int], bytes]] = [
    lambda m, k: m.turn(k),
    lambda m, k: m.turn(k),
    lambda m, k: m.rewind(k, k // 7),
    lambda m, k: m.compaction(),
    lambda m, k: m.outside(k),
    lambda m, k: m.api_error(),
    lambda m, k: m.garbage(),
]


@contextmanager
def _store(agent: str) -> Iterator[tuple[Path, Path]]:
    """A copy of the recorded store with the session file emptied, the agent pointed at
    it: (session file, workspace)."""
    fixture = MAKERS[agent][0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        # Qwen's todo file and Claude's task files come along: side files that count
        shutil.copytree(
            fixture.root, root / "store", ignore=shutil.ignore_patterns("expected.json")
        )
        path = root / "store" / fixture.session
        path.write_bytes(b"")
        workspace = root / "ws"
        workspace.mkdir()
        with _env(fixture.env_var, str(root / "store")):
            yield path, workspace


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


@settings(
    max_examples=int(os.environ.get("PASSDOWN_TREE_CASES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    agent=st.sampled_from(sorted(MAKERS)),
    steps=st.lists(st.tuples(st.integers(0, len(STEPS) - 1), st.integers(0, 50)), max_size=10),
    cuts=st.lists(st.tuples(st.booleans(), st.floats(0.0, 1.0)), min_size=1, max_size=8),
)
def test_tree_incremental_export_equals_full_read(
    agent: str, steps: list[tuple[int, int]], cuts: list[tuple[bool, float]]
) -> None:
    fixture, maker_class = MAKERS[agent]
    maker = maker_class(fixture)
    body = maker.header() + maker.turn(0)
    body += b"".join(STEPS[step](maker, k) for step, k in steps)
    line_ends = [i + 1 for i, byte in enumerate(body) if byte == 0x0A]
    ends = sorted(
        {
            line_ends[int(f * (len(line_ends) - 1))] if at_line_end else int(f * len(body))
            for at_line_end, f in cuts
        }
        | {len(body)}
    )
    with _store(agent) as (path, workspace), workspace_probed_once():
        written = 0
        for end in ends:
            if end <= written:
                continue
            _append(path, body[written:end])
            written = end
            handoff = _export_and_compare(path, workspace, agent)
        assert isinstance(handoff, dict)
        assert handoff["source"]["agent"] == agent
        assert handoff["task"]["original_request"]


@pytest.mark.parametrize("agent", sorted(MAKERS))
def test_appended_turns_are_read_from_the_checkpoint(agent: str) -> None:
    fixture, maker_class = MAKERS[agent]
    maker = maker_class(fixture)
    with _store(agent) as (path, workspace):
        _append(path, maker.header() + maker.turn(0))
        _export_and_compare(path, workspace, agent)
        READINGS.clear()
        _append(path, maker.turn(1) + maker.compaction() + maker.turn(2))
        handoff = _export_and_compare(path, workspace, agent)
        assert READINGS["resumed"] == 1 and READINGS["full"] == 0
        assert _saved(path, agent).offset == path.stat().st_size
        assert isinstance(handoff, dict)
        assert handoff["task"]["compaction_summary"]


@pytest.mark.parametrize("agent", sorted(MAKERS))
def test_a_rewind_to_an_older_node_is_read_in_full(agent: str) -> None:
    fixture, maker_class = MAKERS[agent]
    maker = maker_class(fixture)
    with _store(agent) as (path, workspace):
        _append(path, maker.header() + maker.turn(0) + maker.turn(1))
        _export_and_compare(path, workspace, agent)
        READINGS.clear()
        _append(path, maker.rewind(2, 5))
        handoff = _export_and_compare(path, workspace, agent)
        assert READINGS["refused"] == 1 and READINGS["resumed"] == 0
        assert isinstance(handoff, dict)
        # the next append continues the new branch from a fresh checkpoint
        READINGS.clear()
        _append(path, maker.turn(3))
        _export_and_compare(path, workspace, agent)
        assert READINGS["resumed"] == 1


@pytest.mark.parametrize("agent", sorted(MAKERS))
def test_a_truncated_session_is_read_in_full(agent: str) -> None:
    fixture, maker_class = MAKERS[agent]
    maker = maker_class(fixture)
    with _store(agent) as (path, workspace):
        _append(path, maker.header() + maker.turn(0) + maker.turn(1))
        _export_and_compare(path, workspace, agent)
        data = path.read_bytes()
        path.write_bytes(data[: data.rfind(b"\n", 0, len(data) // 2) + 1])
        READINGS.clear()
        _export_and_compare(path, workspace, agent)
        assert READINGS["resumed"] == 0
        assert _saved(path, agent).offset == path.stat().st_size


@pytest.mark.parametrize("agent", sorted(MAKERS))
def test_a_torn_last_line_that_starts_a_new_branch_is_never_checkpointed(agent: str) -> None:
    """The last line, complete but for its newline, attaches to an older record: the
    branch of the complete lines is not the handoff's, so nothing is saved from it."""
    fixture, maker_class = MAKERS[agent]
    maker = maker_class(fixture)
    with _store(agent) as (path, workspace):
        _append(path, maker.header() + maker.turn(0) + maker.turn(1))
        _export_and_compare(path, workspace, agent)
        key = f'"{fixture.key}":'.encode()
        rewound = next(line for line in maker.rewind(2, 5).splitlines() if key in line)
        _append(path, rewound)
        READINGS.clear()
        handoff = _export_and_compare(path, workspace, agent)
        assert READINGS["refused"] == 1 and READINGS["resumed"] == 0
        assert isinstance(handoff, dict)
        assert not checkpoint.checkpoint_path(agent, path).exists()
        _append(path, b"\n")
        _export_and_compare(path, workspace, agent)
        assert _saved(path, agent).offset == path.stat().st_size


def test_a_changed_subagent_transcript_means_a_full_read() -> None:
    """A sub-agent read from the checkpointed part is stamped: its files changing
    later (without the session file changing) makes the next export read in full."""
    root = FIXTURES / "claude" / "subagent"
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        shutil.copytree(root, store, ignore=shutil.ignore_patterns("expected.json"))
        path = next((store / "projects").glob("*/*.jsonl"))
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        with _env("CLAUDE_CONFIG_DIR", str(store)):
            first = _export_and_compare(path, workspace, "claude")
            assert isinstance(first, dict) and first["state"]["subagents"]
            meta = next(store.rglob("agent-*.meta.json"))
            data = json.loads(meta.read_text())
            data["description"] = "A changed description"
            meta.write_text(json.dumps(data))
            os.utime(meta, ns=(1, 1))
            READINGS.clear()
            second = _export_and_compare(path, workspace, "claude")
            assert READINGS["refused"] == 1
            assert isinstance(second, dict)
            assert second["state"]["subagents"][0]["task"] == "A changed description"


def test_a_qwen_fragment_of_the_leaf_continues_the_checkpoint() -> None:
    """Qwen writes one record in pieces under one uuid: a piece of the leaf appended
    after the checkpoint continues it (its text joins the same reply)."""
    maker = QwenMaker(QWEN)
    with _store("qwen") as (path, workspace):
        _append(path, maker.header() + maker.turn(0))
        _export_and_compare(path, workspace, "qwen")
        READINGS.clear()
        _append(path, maker.outside(1))
        _export_and_compare(path, workspace, "qwen")
        assert READINGS["resumed"] == 1 and READINGS["refused"] == 0


def test_a_claude_leaf_hint_naming_the_leaf_continues_and_one_naming_an_older_record_not() -> None:
    maker = ClaudeMaker(CLAUDE)
    with _store("claude") as (path, workspace):
        _append(path, maker.header() + maker.turn(0))
        _export_and_compare(path, workspace, "claude")
        READINGS.clear()
        _append(path, maker.outside(0) + maker.outside(1))  # a snapshot, a hint at the leaf
        _export_and_compare(path, workspace, "claude")
        assert READINGS["resumed"] == 1
        READINGS.clear()
        older = maker.nodes[-4]
        _append(path, _line({"type": "last-prompt", "leafUuid": older}))
        handoff = _export_and_compare(path, workspace, "claude")
        assert READINGS["refused"] == 1 and READINGS["resumed"] == 0
        assert isinstance(handoff, dict)
