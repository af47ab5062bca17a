"""Grow a real recorded session into a large file of the same shape.

The sessions under tests/fixtures/sessions/<agent>/full/ were recorded from the real
CLIs: many small lines (mostly 450-1,100 bytes) of every record kind the agent writes.
A grown file keeps the recording's head (session header, first request) and tail (last
turn, final progress message) and repeats its middle until the file reaches the wanted
size. Every id the middle defines (uuids, tool-call ids, message ids, short hex ids) is
replaced in each copy by a fresh unique id of the same shape, and for tree-shaped
sessions (Claude, Qwen, pi) the first record of each copy is re-parented onto the last
record of the copy before, so the active branch runs through every copy, dead branches
included, and the tail hangs off the last copy. The export of a grown file must say
what the export of the recording says (first request, last progress, plan, files).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "sessions"

# uuids, prefixed ids (toolu_..., call_..., msg_...), Gemini's tool-call ids
# (<tool>__<tool>_<ms>_<n>), and bare 8/32-hex ids in quotes
ID = re.compile(
    rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    rb"|(?:toolu|call|msg|req|fc)_[A-Za-z0-9]{8,}"
    rb"|[a-z_]+__[a-z_]+_[0-9]{10,}_[0-9]+"
    rb'|(?<=")[0-9a-f]{32}(?=")|(?<=")[0-9a-f]{8}(?=")'
)
# records that happen once or rarely in a session and would not repeat every few KB
_ONCE = (
    b'"session_meta"',
    b'"compact_boundary"',
    b'"isCompactSummary":true',
    b'"session.start"',
    b'"type":"session"',
)
CALL_ID = re.compile(rb"(?:toolu|call|fc)_[A-Za-z0-9]{8,}|[a-z_]+__[a-z_]+_[0-9]{10,}_[0-9]+")
_PREFIX = re.compile(rb"^[A-Za-z_]*_")
_HEX = frozenset(b"0123456789abcdef")


@dataclass(frozen=True, slots=True)
class Fixture:
    agent: str
    env_var: str  # where the agent finds its store: CLAUDE_CONFIG_DIR, CODEX_HOME or HOME
    session: str  # the session file, relative to the fixture root
    tree: tuple[str, str] | None = None  # (id field, parent field) of a tree-shaped log

    @property
    def root(self) -> Path:
        return FIXTURES / self.agent / "full"


def fixtures() -> dict[str, Fixture]:
    found: dict[str, Fixture] = {}
    trees = {
        "claude": ("uuid", "parentUuid"),
        "qwen": ("uuid", "parentUuid"),
        "pi": ("id", "parentId"),
    }
    env_vars = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME"}
    for expected in sorted(FIXTURES.glob("*/full/expected.json")):
        agent = expected.parent.parent.name
        data = json.loads(expected.read_text())
        files = [f for f in data["session_files"] if f.endswith(".jsonl")]
        if not files:
            continue  # opencode keeps SQLite, not JSON Lines
        found[agent] = Fixture(agent, env_vars.get(agent, "HOME"), files[0], trees.get(agent))
    return found


def _record(line: bytes) -> dict | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def choose_middle(lines: list[bytes], tree: tuple[str, str] | None) -> tuple[int, int]:
    """[start, end) of the block to repeat: about the middle 40% of the recording, cut
    where repeating is sound: no tool call is cut from its result. For a tree: the block's first record is the child of the
    record just before it, and the first tree record after the block is the child of the
    block's last tree record (so copies chain). Control records that rewrite history
    (Gemini's `$set`/`$rewindTo`), compactions and session headers stay out of it."""
    n = len(lines)
    recs = [_record(line) for line in lines]
    calls = [set(CALL_ID.findall(line)) for line in lines]

    def calls_in(start: int, end: int) -> set[bytes]:
        return set().union(*calls[start:end])

    def whole_calls(start: int, end: int) -> bool:
        """No tool call has its call on one side of a cut and its result on the other
        (each copy would leave one call without a result)."""
        inside = calls_in(start, end)
        return not (inside & calls_in(0, start)) and not (inside & calls_in(end, n))

    def plain(i: int) -> bool:
        line = lines[i]
        if line.startswith(b'{"$'):  # Gemini control records: only metadata patches
            return line.startswith(b'{"$set":{"lastUpdated"')
        return not any(mark in line for mark in _ONCE)

    def tree_ok(start: int, end: int) -> bool:
        if tree is None:
            return True
        key, parent = tree
        ids = [r.get(key) if r else None for r in recs]
        before = [i for i in range(start) if ids[i]]
        inside = [i for i in range(start, end) if ids[i]]
        after = [i for i in range(end, n) if ids[i]]
        if not before or not inside or not after:
            return False
        first, last, nxt = recs[inside[0]], recs[inside[-1]], recs[after[0]]
        assert first is not None and last is not None and nxt is not None
        return first.get(parent) == ids[before[-1]] and nxt.get(parent) == last.get(key)

    for width in range(int(n * 0.4), 3, -1):
        for start in range(int(n * 0.3), n - width):
            end = start + width
            if (
                all(plain(i) for i in range(start, end))
                and tree_ok(start, end)
                and whole_calls(start, end)
            ):
                return start, end
    raise ValueError("no repeatable middle found")


class Grower:
    """Writes grown copies of one recording's session file."""

    def __init__(
        self,
        fixture: Fixture,
        replace: Callable[[bytes], bytes] = lambda b: b,
        window: tuple[int, int] | None = None,
    ):
        """`window`: the [start, end) lines to repeat (default: the middle)."""
        self.fixture = fixture
        raw = replace((fixture.root / fixture.session).read_bytes())
        self.lines = raw.splitlines()
        self.start, self.end = window or choose_middle(self.lines, fixture.tree)
        head, middle = self.lines[: self.start], self.lines[self.start : self.end]
        outside = set(ID.findall(b"\n".join(head)))
        defined = dict.fromkeys(t for t in ID.findall(b"\n".join(middle)) if t not in outside)
        self.tokens = list(defined)  # ids the middle defines: fresh in every copy
        self.head = b"\n".join(head) + b"\n"
        self.middle = b"\n".join(middle) + b"\n"
        self.tail = b"\n".join(self.lines[self.end :]) + b"\n"
        self.entry: tuple[bytes, bytes] | None = None  # (line pattern, exit id)
        if fixture.tree is not None:
            key, parent = fixture.tree
            first = next(r for r in map(_record, middle) if r and r.get(key))
            last = [r for r in map(_record, middle) if r and r.get(key)][-1]
            # a compaction boundary starts a new root: its link back is logicalParentUuid
            link = parent if first.get(parent) else "logicalParentUuid"
            self.entry = (
                f'"{link}":"{first[link]}"'.encode(),
                str(last[key]).encode(),
            )

    def _fresh(self, token: bytes, copy: int, index: int) -> bytes:
        """A unique id shaped like `token`: a prefix such as `call_` or `toolu_` is kept,
        and its hex digits end with a serial number unique to (copy, token), the digits
        before it coming from a hash so the ids look as random as the real ones."""
        prefix = _PREFIX.match(token)
        head = prefix.group() if prefix else b""
        body = token[len(head) :]
        serial = f"{copy * len(self.tokens) + index + 1:x}".encode()
        positions = [i for i, char in enumerate(body) if char in _HEX]
        if len(positions) < len(serial):
            raise ValueError(f"id {token!r} too short for {copy} copies")
        filler = hashlib.blake2b(token + serial, digest_size=32).hexdigest().encode()
        digits = (filler + serial)[-len(positions) :]
        out = bytearray(body)
        for pos, digit in zip(positions, digits, strict=True):
            out[pos] = digit
        return head + bytes(out)

    def _copy(self, copy: int) -> tuple[bytes, dict[bytes, bytes]]:
        if copy == 0:
            return self.middle, {}
        mapping = {t: self._fresh(t, copy, i) for i, t in enumerate(self.tokens)}
        return ID.sub(lambda m: mapping.get(m.group(), m.group()), self.middle), mapping

    def write(self, path: Path, size: int) -> int:
        """Grow into `path` until at least `size` bytes; returns the number of copies."""
        copies = 0
        exit_id: bytes | None = None
        mapping: dict[bytes, bytes] = {}
        with open(path, "wb") as out:
            out.write(self.head)
            budget = size - len(self.head) - len(self.tail)
            written = 0
            while written < budget or copies == 0:
                block, mapping = self._copy(copies)
                if self.entry is not None and exit_id is not None:
                    pattern, _ = self.entry
                    parent = pattern.rsplit(b":", 1)[0]
                    block = block.replace(pattern, parent + b':"' + exit_id + b'"', 1)
                if self.entry is not None:
                    exit_id = mapping.get(self.entry[1], self.entry[1])
                out.write(block)
                written += len(block)
                copies += 1
            tail = ID.sub(lambda m: mapping.get(m.group(), m.group()), self.tail)
            out.write(tail)
        return copies


def install(fixture: Fixture, target: Path) -> Path:
    """Copy the recorded store to `target` (like tests/recorded.py); returns the session
    file's path there."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(fixture.root, target, ignore=shutil.ignore_patterns("expected.json"))
    return target / fixture.session
