"""Grow a recorded session by repeating ONE kind of slice: the whole middle, only plan
operations, only a failing command, only file edits, only sub-agent spawns, only
compactions, only user prompts, only API errors.

A slice is the smallest run of lines around the first record of its kind (in the
recordings under tests/fixtures/sessions/) that holds every tool call with its result and,
for tree-shaped logs, hangs off the record before it. The grown file is the recording with
that slice repeated in place until the file reaches the wanted size. Ids are refreshed
where the agent would write new ones (record uuids, tool-call ids, message ids, sub-agent
ids: realshape.Grower does that) and kept where the agent keeps them: Claude Code's task
ids "1", "2", .. (a forked or resumed session numbers again from 1), todo ids, the command
text, the file path, the prompt text. opencode keeps its session in SQLite: its slice is a
run of message rows with their part rows, copied with new row ids that sort in place.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import realshape
from realshape import FIXTURES, Fixture, Grower

KINDS = (
    "middle",
    "plan",
    "failing",
    "edits",
    "subagents",
    "compactions",
    "prompts",
    "errors",
    "sameids",  # the edit slice with its tool-call ids kept: one call id used again and again
)
_FAIL = rb"FAIL: test_add"


@dataclass(frozen=True, slots=True)
class Slice:
    """Which lines to repeat: around the first line matching `anchor` (or the line that
    holds the latest user prompt when `anchor` is "prompt"), through the first match of
    `until` after it."""

    anchor: bytes
    until: bytes | None = None
    scenario: str = "full"


SLICES: dict[str, dict[str, Slice]] = {
    "claude": {
        "plan": Slice(rb'"name":"TaskCreate"', rb'"name":"TaskUpdate"'),
        "failing": Slice(rb'"is_error":true[^\n]*Exit code 1|Exit code 1[^\n]*"is_error":true'),
        "edits": Slice(rb'"name":"Edit"'),
        "subagents": Slice(rb'"name":"Agent"', scenario="subagent"),
        "compactions": Slice(rb'"compact_boundary"', rb"local-command-stdout"),
        "prompts": Slice(b"prompt"),
        "errors": Slice(b"inserted"),
    },
    "codex": {
        "plan": Slice(rb'"name":"update_plan"'),
        "failing": Slice(rb'"exit_code":1\b'),
        "edits": Slice(rb'"type":"FileChange"'),
        "prompts": Slice(b"prompt"),
        "compactions": Slice(b"inserted"),
        "errors": Slice(b"inserted"),
    },
    "gemini": {
        "plan": Slice(rb'^\{"id"[^\n]*"name":"write_todos"'),
        "failing": Slice(rb'^\{"id"[^\n]*"type":"gemini"[^\n]*' + _FAIL),
        "edits": Slice(rb'^\{"id"[^\n]*"type":"gemini"[^\n]*"name":"replace"'),
        "prompts": Slice(b"prompt"),
        "errors": Slice(b"inserted"),
    },
    "qwen": {
        "plan": Slice(rb'"type":"assistant"[^\n]*"name":"todo_write"'),
        "failing": Slice(rb'"type":"tool_result"[^\n]*' + _FAIL),
        "edits": Slice(rb'"type":"assistant"[^\n]*"name":"edit"'),
        "prompts": Slice(b"prompt"),
        "compactions": Slice(b"inserted"),
        "errors": Slice(b"inserted"),
    },
    "pi": {
        "failing": Slice(rb'"role":"toolResult"[^\n]*' + _FAIL),
        "edits": Slice(rb'"toolCall"[^\n]*"name":"edit"'),
        "prompts": Slice(b"prompt"),
        "compactions": Slice(b"inserted"),
        "errors": Slice(b"inserted"),
    },
    "copilot": {
        "plan": Slice(rb'"toolName":"sql"'),
        "failing": Slice(rb'"tool.execution_complete"[^\n]*' + _FAIL),
        "edits": Slice(rb'"tool.execution_start"[^\n]*"toolName":"edit"'),
        "prompts": Slice(b"prompt"),
        "errors": Slice(b"inserted"),
    },
    # opencode: a message's parts (SQLite rows), chosen by what a part holds
    "opencode": {
        "plan": Slice(rb'"tool":"todowrite"'),
        "failing": Slice(rb'"tool":"bash"[^\n]*' + _FAIL),
        "edits": Slice(rb'"tool":"edit","callID":"[^"]*","state":\{"status":"completed"'),
        "prompts": Slice(b"prompt"),
        "errors": Slice(b"inserted"),
    },
    "droid": {
        "failing": Slice(rb'"is_error":true[^\n]*' + _FAIL),
        "edits": Slice(rb'"tool_use"[^\n]*"name":"Edit"'),
        "prompts": Slice(b"prompt"),
    },
}
# gptme: a markdown `todo write` block and its result, a tool-form call and its result
SLICES["gptme"] = {
    "plan": Slice(rb"```todo write", rb'"role": "system"'),
    "failing": Slice(rb"@shell\(", rb"Return code: 2"),
    "edits": Slice(rb"@save\(", rb"Saved to"),
    "prompts": Slice(b"prompt"),
}
# Hermes Agent: message rows of its state.db, an assistant row with its tool rows
# (`_grow_hermes` picks them by the call's name; the anchors are the tool_calls JSON)
SLICES["hermes"] = {
    "plan": Slice(rb'"name": "todo"'),
    "failing": Slice(rb'"name": "terminal"'),
    "edits": Slice(rb'"name": "write_file"'),
    "prompts": Slice(b"prompt"),
}
SLICES["kilo"] = SLICES["opencode"]  # Kilo keeps opencode's tables: the same rows repeat
# The agents whose session is SQLite rows (opencode's schema): the database, under HOME
DATABASES = {
    "opencode": ".local/share/opencode/opencode.db",
    "kilo": ".local/share/kilo/kilo.db",
}
TREES = {
    "claude": ("uuid", "parentUuid"),
    "qwen": ("uuid", "parentUuid"),
    "pi": ("id", "parentId"),
    "copilot": ("id", "parentId"),
    "droid": ("id", "parentId"),
}
ENV_VARS = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME"}


# Sessions that are one JSON document, not lines to repeat (tests/test_agent_cline.py grows
# Cline's; benchmarks/growdoc.py and tests/test_growth_documents.py Auggie's and Continue's).
# Vibe's content-addressed chunks and OpenHands' event files are folders of documents:
# tests/test_agent_{vibe,openhands}.py grow them, benchmarks/bench_folder_growth.py times them.
ONE_DOCUMENT = frozenset({"cline", "auggie", "continue", "vibe", "openhands"})


def agents() -> list[str]:
    found = (p.parent.parent.name for p in FIXTURES.glob("*/full/expected.json"))
    return sorted(name for name in found if name not in ONE_DOCUMENT)


def kinds_for(agent: str) -> list[str]:
    """The slice kinds this agent's recordings hold (plus the whole middle)."""
    held = SLICES.get(agent, {})
    return ["middle", *(k for k in KINDS if k in held or (k == "sameids" and "edits" in held))]


@dataclass(frozen=True, slots=True)
class Source(Fixture):
    """A recording (realshape.Fixture) of any scenario, not only `full`."""

    scenario: str = "full"

    @property
    def root(self) -> Path:
        return FIXTURES / self.agent / self.scenario


def fixture(agent: str, scenario: str = "full") -> Source:
    root = FIXTURES / agent / scenario
    data = json.loads((root / "expected.json").read_text())
    files = [f for f in data["session_files"] if f.endswith(".jsonl") and "/subagents/" not in f]
    return Source(
        agent, ENV_VARS.get(agent, "HOME"), files[0] if files else "", TREES.get(agent), scenario
    )


def expected(agent: str, scenario: str = "full") -> dict[str, object]:
    data: dict[str, object] = json.loads(
        (FIXTURES / agent / scenario / "expected.json").read_text()
    )
    return data


def _record(line: bytes) -> dict[str, object] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _prompt_needle(agent: str, scenario: str) -> bytes:
    text = str(expected(agent, scenario)["latest_user_message"])
    return json.dumps(text)[1:-1].encode()


_LEAD_ID = re.compile(rb'^\{"id":"([^"]+)"')


def find_window(
    lines: list[bytes], anchor_at: int, until_at: int, tree: tuple[str, str] | None
) -> tuple[int, int]:
    """The smallest [start, end) holding lines anchor_at..until_at in which no tool call is
    cut from its result and (for a tree) whose first record is the child of the record
    before it and whose last record is the parent of the record after it."""
    n = len(lines)
    # tool-call ids, and the ids of records written more than once as they progress
    # (Gemini CLI rewrites a message under its id when its tool results come in)
    calls = [set(realshape.CALL_ID.findall(line)) | set(_LEAD_ID.findall(line)) for line in lines]
    recs = [_record(line) for line in lines]

    def whole(start: int, end: int) -> bool:
        inside: set[bytes] = set().union(*calls[start:end])
        outside: set[bytes] = set().union(*calls[:start], *calls[end:])
        return not inside & outside

    def linked(start: int, end: int) -> bool:
        if tree is None:
            return True
        key, parent = tree
        ids = [r.get(key) if r else None for r in recs]
        before = [i for i in range(start) if ids[i]]
        inside = [i for i in range(start, end) if ids[i]]
        after = [i for i in range(end, n) if ids[i]]
        if not before or not inside:
            return False
        first, last = recs[inside[0]], recs[inside[-1]]
        assert first is not None and last is not None
        link = first.get(parent) or first.get("logicalParentUuid")
        if link != ids[before[-1]]:
            return False
        if not after:
            return True
        nxt = recs[after[0]]
        assert nxt is not None
        return (nxt.get(parent) or nxt.get("logicalParentUuid")) == last.get(key)

    low = until_at - anchor_at + 1
    for width in range(low, low + 40):
        for start in range(anchor_at, max(anchor_at - (width - low), 1) - 1, -1):
            end = start + width
            if end > n or end <= until_at:
                continue
            if whole(start, end) and linked(start, end):
                return start, end
    raise ValueError(f"no repeatable slice around line {anchor_at}")


def slice_window(agent: str, kind: str, lines: list[bytes]) -> tuple[int, int]:
    spec = SLICES[agent][kind]
    if spec.anchor == b"inserted":  # the lines `_with_inserted` put after the prompt
        marked = [i for i, ln in enumerate(lines) if _LATER.encode() in ln]
        return find_window(lines, marked[0], marked[-1], TREES.get(agent))
    if spec.anchor == b"prompt":
        needle = _prompt_needle(agent, spec.scenario)
        at = next(
            i
            for i, ln in enumerate(lines)
            if needle in ln and not ln.startswith(b'{"$') and b'"queue-operation"' not in ln
        )
        until = at
        while until + 1 < len(lines) and needle in lines[until + 1]:
            until += 1  # Codex writes the prompt twice, one line after the other
    else:
        pattern = re.compile(spec.anchor)
        at = next(i for i, ln in enumerate(lines) if pattern.search(ln))
        until = at
        if spec.until is not None:
            stop = re.compile(spec.until)
            until = next(i for i in range(at, len(lines)) if stop.search(lines[i]))
    return find_window(lines, at, until, TREES.get(agent))


class SliceGrower(Grower):
    """realshape.Grower repeating one slice; `extra_ids` are ids the ID pattern does not
    know (Claude's sub-agent ids) that are refreshed in every copy too."""

    def __init__(
        self,
        fx: Source,
        window: tuple[int, int],
        replace: Callable[[bytes], bytes] = lambda b: b,
        extra_ids: list[bytes] | None = None,
        on_copy: Callable[[int, dict[bytes, bytes]], None] | None = None,
    ) -> None:
        super().__init__(fx, replace, window)
        self.extra_ids = extra_ids or []
        self.on_copy = on_copy

    def _copy(self, copy: int) -> tuple[bytes, dict[bytes, bytes]]:
        block, mapping = super()._copy(copy)
        if copy and self.extra_ids:
            for token in self.extra_ids:
                fresh = self._fresh(token, copy, len(self.tokens))
                block = block.replace(token, fresh)
                mapping[token] = fresh
        if self.on_copy is not None:
            self.on_copy(copy, mapping)
        return block, mapping


@dataclass
class Grown:
    """A grown session installed under a store root."""

    agent: str
    kind: str
    root: Path  # the store root (CLAUDE_CONFIG_DIR, CODEX_HOME or HOME)
    env_var: str
    session: Path  # the file passed to --session
    copies: int
    scenario: str = "full"
    session_arg: str = ""  # what --session gets: the file, or opencode's session id

    def __post_init__(self) -> None:
        self.session_arg = self.session_arg or str(self.session)

    @property
    def size(self) -> int:
        return self.session.stat().st_size


def install(agent: str, scenario: str, target: Path) -> Path:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(
        FIXTURES / agent / scenario, target, ignore=shutil.ignore_patterns("expected.json")
    )
    return target


def grow(agent: str, kind: str, size: int, target: Path) -> Grown:
    """Install the agent's recording under `target` and grow its session to `size` bytes
    by repeating slices of `kind`."""
    if agent in DATABASES:
        return _grow_opencode(agent, kind, size, target)
    if agent == "hermes":
        return _grow_hermes(kind, size, target)
    keep_calls = kind == "sameids"
    kind = "edits" if keep_calls else kind
    scenario = "full" if kind == "middle" else SLICES[agent][kind].scenario
    fx = fixture(agent, scenario)
    install(agent, scenario, target)
    path = target / fx.session
    if kind == "middle":
        grower: Grower = realshape.Grower(fx)
        copies = grower.write(path, size)
        return Grown(agent, kind, target, fx.env_var, path, copies, scenario)
    replace = _first_run if agent == "gemini" and kind not in ("prompts", "errors") else _same
    if spec_anchor(agent, kind) == b"inserted":
        replace = _with_inserted(agent, kind)
    lines = replace((fx.root / fx.session).read_bytes()).splitlines()
    window = slice_window(agent, kind, lines)
    extra: list[bytes] = []
    on_copy = None
    if kind == "subagents":
        extra, on_copy = _subagent_files(path, lines[window[0] : window[1]])
    grower = SliceGrower(fx, window, replace, extra_ids=extra, on_copy=on_copy)
    if keep_calls:
        grower.tokens = [t for t in grower.tokens if not realshape.CALL_ID.fullmatch(t)]
    copies = grower.write(path, size)
    return Grown(
        agent, "sameids" if keep_calls else kind, target, fx.env_var, path, copies, scenario
    )


def spec_anchor(agent: str, kind: str) -> bytes:
    spec = SLICES.get(agent, {}).get(kind)
    return spec.anchor if spec else b""


def _same(raw: bytes) -> bytes:
    return raw


# Records the recordings lack, written as each CLI writes them (shapes from the pinned
# CLIs' files, as tests/test_error_endings_readers.py and tests/test_incremental*.py
# write them): a failed model request (every copy a retry that failed) and a compaction
# (Codex, Qwen, pi: every copy one more). Their timestamp, _LATER, marks them.
_ERROR_MARK = b"Rate limit reached for scripted-model"
_RATE_LIMIT = _ERROR_MARK.decode() + " (TPM): Limit 30000, Used 30000. Please try again in 20s."
_ERROR_ID = "e1e1e1e1-0000-4000-8000-000000000001"
_LATER = "2026-11-30T18:30:00.000Z"


def _api_error_record(agent: str, before: dict[str, Any]) -> dict[str, Any]:
    if agent == "claude":
        return {
            "parentUuid": before["uuid"],
            "isSidechain": False,
            "type": "assistant",
            "uuid": _ERROR_ID,
            "timestamp": _LATER,
            "sessionId": before.get("sessionId"),
            "isApiErrorMessage": True,
            "error": "rate_limit",
            "message": {
                "role": "assistant",
                "model": "<synthetic>",
                "content": [{"type": "text", "text": f"API Error: 429 {_RATE_LIMIT}"}],
            },
        }
    if agent == "codex":
        return {
            "timestamp": _LATER,
            "type": "event_msg",
            "payload": {"type": "error", "message": f"429 {_RATE_LIMIT}"},
        }
    if agent == "gemini":
        return {
            "id": _ERROR_ID,
            "timestamp": _LATER,
            "type": "error",
            "content": f"[API Error: {_RATE_LIMIT}]",
        }
    if agent == "qwen":
        event = {
            "event.name": "qwen-code.api_error",
            "event.timestamp": _LATER,
            "response_id": "",
            "model": "scripted-model",
            "duration_ms": 3009,
            "auth_type": "openai",
            "error_message": _RATE_LIMIT,
            "error_type": "RateLimitError",
            "status_code": 429,
        }
        return {
            "uuid": _ERROR_ID,
            "parentUuid": before["uuid"],
            "sessionId": before.get("sessionId"),
            "timestamp": _LATER,
            "type": "system",
            "provenance": "system",
            "cwd": before.get("cwd"),
            "version": "0.24.4",
            "gitBranch": "main",
            "subtype": "ui_telemetry",
            "systemPayload": {"uiEvent": event},
        }
    if agent == "pi":
        return {
            "type": "message",
            "id": "e1e1e1e1",
            "parentId": before["id"],
            "timestamp": _LATER,
            "message": {
                "role": "assistant",
                "content": [],
                "api": "openai-completions",
                "provider": "scripted",
                "model": "scripted-model",
                "stopReason": "error",
                "timestamp": 1796063030687,
                "errorMessage": _RATE_LIMIT,
            },
        }
    if agent == "copilot":
        return {
            "type": "session.error",
            "data": {
                "errorType": "rate_limit",
                "statusCode": 429,
                "message": "Failed to get response from the AI model; retried 5 "
                f"times Last error: {_RATE_LIMIT}",
            },
            "id": _ERROR_ID,
            "timestamp": _LATER,
            "parentId": before.get("id"),
        }
    raise ValueError(f"no API error record for {agent}")


def _compaction_records(agent: str, before: dict[str, Any]) -> list[dict[str, Any]]:
    summary = "Summary: calc.py and its test written, greet() says Hi; next: the README."
    if agent == "codex":
        from passdown._extract import CODEX_SUMMARY_PREFIX

        return [
            {
                "timestamp": _LATER,
                "type": "compacted",
                "payload": {"message": f"{CODEX_SUMMARY_PREFIX}\n{summary}"},
            },
            {"timestamp": _LATER, "type": "event_msg", "payload": {"type": "context_compacted"}},
        ]
    if agent == "qwen":
        return [
            {
                "uuid": _ERROR_ID,
                "parentUuid": before["uuid"],
                "sessionId": before.get("sessionId"),
                "timestamp": _LATER,
                "type": "system",
                "subtype": "chat_compression",
                "systemPayload": {
                    "info": {"trigger": "auto"},
                    "compressedHistory": [
                        {"role": "user", "parts": [{"text": summary}]},
                        {"role": "model", "parts": [{"text": "Got it."}]},
                    ],
                },
            }
        ]
    if agent == "pi":
        return [
            {
                "type": "compaction",
                "id": "c0c0c0c0",
                "parentId": before["id"],
                "timestamp": _LATER,
                "summary": summary,
                "firstKeptEntryId": before["id"],
                "tokensBefore": 1200,
            }
        ]
    raise ValueError(f"no compaction record for {agent}")


def _with_inserted(agent: str, kind: str) -> Callable[[bytes], bytes]:
    """The recording with the kind's records right after the latest prompt (for a tree:
    the prompt's child, and the prompt's next child re-parented onto the last of them)."""

    def insert(raw: bytes) -> bytes:
        lines = raw.splitlines()
        needle = _prompt_needle(agent, "full")
        at = next(
            i
            for i, ln in enumerate(lines)
            if needle in ln and not ln.startswith(b'{"$') and b'"queue-operation"' not in ln
        )
        before = _record(lines[at]) or {}
        if kind == "errors":
            records = [_api_error_record(agent, before)]
        else:
            records = _compaction_records(agent, before)
        tree = TREES.get(agent)
        if tree is not None:
            key, parent = tree
            link = f'"{parent}":"{before[key]}"'.encode()
            new_link = f'"{parent}":"{records[-1][key]}"'.encode()
            nxt = next(i for i in range(at + 1, len(lines)) if link in lines[i])
            lines[nxt] = lines[nxt].replace(link, new_link, 1)
        for offset, record in enumerate(records, 1):
            lines.insert(at + offset, json.dumps(record, separators=(",", ":")).encode())
        return b"\n".join(lines) + b"\n"

    return insert


def _first_run(raw: bytes) -> bytes:
    """Gemini CLI's log up to its resume: the resume rewrites the history (`$set`) with
    the ids it knows, so copies placed before it would need listing there too."""
    resume = raw.find(b'\n{"sessionId"', 1)
    return raw if resume < 0 else raw[: resume + 1]


_AGENT_ID = re.compile(rb'"agentId":"([0-9a-f]{8,})"')


def _subagent_files(
    session: Path, block: list[bytes]
) -> tuple[list[bytes], Callable[[int, dict[bytes, bytes]], None]]:
    """Claude Code writes each spawned sub-agent's transcript and meta file under a fresh
    agent id: every copy of the spawn gets its own pair, the meta file naming the copy's
    tool-use id."""
    ids = sorted({m.group(1) for line in block for m in _AGENT_ID.finditer(line)})
    folder = session.with_suffix("") / "subagents"

    def write(copy: int, mapping: dict[bytes, bytes]) -> None:
        if copy == 0:
            return
        for old in ids:
            new = mapping[old].decode()
            for suffix in (".jsonl", ".meta.json"):
                source = (folder / f"agent-{old.decode()}{suffix}").read_bytes()
                for token, fresh in mapping.items():
                    if suffix == ".meta.json" or token == old:
                        source = source.replace(token, fresh)
                (folder / f"agent-{new}{suffix}").write_bytes(source)

    return ids, write


# --- opencode: rows, not lines -------------------------------------------------------


def _grow_opencode(agent: str, kind: str, size: int, target: Path) -> Grown:
    keep_calls = kind == "sameids"
    install(agent, "full", target)
    db = target / DATABASES[agent]
    conn = sqlite3.connect(db)
    try:
        (session_id,) = conn.execute("SELECT id FROM session").fetchone()
        messages = conn.execute(
            "SELECT id, time_created, time_updated, data FROM message "
            "WHERE session_id = ? ORDER BY time_created, id",
            (session_id,),
        ).fetchall()
        parts = {
            m[0]: conn.execute(
                "SELECT id, time_created, time_updated, data FROM part WHERE message_id = ? "
                "ORDER BY id",
                (m[0],),
            ).fetchall()
            for m in messages
        }
        chosen = _opencode_slice(agent, "edits" if keep_calls else kind, messages, parts)
        copies = _insert_copies(conn, session_id, chosen, parts, size, keep_calls)
        conn.commit()
    finally:
        conn.close()
    return Grown(agent, kind, target, "HOME", db, copies, session_arg=session_id)


def _opencode_slice(
    agent: str,
    kind: str,
    messages: list[tuple[str, int, int, str]],
    parts: dict[str, list[tuple[str, int, int, str]]],
) -> list[tuple[str, int, int, str]]:
    if kind == "middle":
        users = [i for i, m in enumerate(messages) if '"role":"user"' in m[3]]
        first_turn = messages[users[0] + 1 : users[1]] if len(users) > 1 else messages[1:]
        n = len(first_turn)
        return first_turn[int(n * 0.3) : int(n * 0.7)]
    spec = SLICES[agent][kind]
    if kind == "errors":  # a failed request: an assistant message with an `error`
        prompt = _opencode_slice(agent, "prompts", messages, parts)[0]
        after = next(m for m in messages if m[1] > prompt[1])
        data = json.loads(after[3])
        data["error"] = {
            "name": "APIError",
            "data": {"message": _RATE_LIMIT, "statusCode": 429, "isRetryable": True},
        }
        parts[after[0] + "e"] = []
        return [(after[0] + "e", after[1], after[2], json.dumps(data))]
    if spec.anchor == b"prompt":
        needle = _prompt_needle(agent, "full").decode()
        return [m for m in messages if any(needle in p[3] for p in parts[m[0]])][:1]
    pattern = re.compile(spec.anchor.decode())
    return [m for m in messages if any(pattern.search(p[3]) for p in parts[m[0]])][:1]


def _insert_copies(
    conn: sqlite3.Connection,
    session_id: str,
    chosen: list[tuple[str, int, int, str]],
    parts: dict[str, list[tuple[str, int, int, str]]],
    size: int,
    keep_calls: bool = False,
) -> int:
    """Copies of the chosen messages right after the last of them (same time_created, ids
    that extend the last one's, so they sort after it and before the next message), with
    tool-call ids refreshed."""
    last_id, last_time = chosen[-1][0], chosen[-1][1]
    block_bytes = sum(len(m[3]) + sum(len(p[3]) for p in parts[m[0]]) for m in chosen)
    copies = max(1, size // max(block_bytes, 1))
    calls = sorted(
        {t for m in chosen for p in parts[m[0]] for t in realshape.CALL_ID.findall(p[3].encode())}
    )
    if keep_calls:
        calls = []
    msg_rows, part_rows = [], []
    for copy in range(1, copies + 1):
        for index, (mid, _created, updated, data) in enumerate(chosen):
            new_id = f"{last_id}{copy:08d}{index:03d}"
            msg_rows.append((new_id, session_id, last_time, updated, data))
            for pid, pcreated, pupdated, pdata in parts[mid]:
                fresh = pdata.encode()
                for token in calls:
                    fresh = fresh.replace(token, _fresh_call(token, copy))
                part_rows.append(
                    (f"{pid}{copy:08d}", new_id, session_id, pcreated, pupdated, fresh.decode())
                )
        if len(msg_rows) > 5000:
            _flush(conn, msg_rows, part_rows)
    _flush(conn, msg_rows, part_rows)
    return copies


def _fresh_call(token: bytes, copy: int) -> bytes:
    """`call_0000..0003` -> `call_0000..c000000001`: the `c` never occurs in a recorded id."""
    head, _, body = token.partition(b"_")
    return head + b"_" + body[:-10] + f"c{copy:09x}".encode()


def _flush(
    conn: sqlite3.Connection, msgs: list[tuple[object, ...]], parts: list[tuple[object, ...]]
) -> None:
    conn.executemany(
        "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?,?,?,?,?)",
        msgs,
    )
    conn.executemany(
        "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) "
        "VALUES (?,?,?,?,?,?)",
        parts,
    )
    msgs.clear()
    parts.clear()


# -- Hermes Agent: rows of the `messages` table ------------------------------------------------
_HERMES_DB = ".hermes/state.db"
_HERMES_COLUMNS = "role, content, tool_call_id, tool_calls, tool_name, timestamp, finish_reason"


def _grow_hermes(kind: str, size: int, target: Path) -> Grown:
    """The recording's session with one slice of its message rows repeated in place (the
    rows after it renumbered to follow the copies, as Hermes's autoincrement ids would),
    tool-call ids refreshed in every copy unless `kind` is "sameids"."""
    keep_calls = kind == "sameids"
    install("hermes", "full", target)
    db = target / _HERMES_DB
    conn = sqlite3.connect(db)
    try:
        (session_id,) = conn.execute("SELECT id FROM sessions").fetchone()
        rows = conn.execute(
            f"SELECT {_HERMES_COLUMNS} FROM messages WHERE session_id = ? ORDER BY id",
            (session_id,),
        ).fetchall()
        start, end = _hermes_slice("edits" if keep_calls else kind, rows)
        block = rows[start:end]
        block_bytes = sum(len(str(c)) for row in block for c in row)
        copies = max(1, size // max(block_bytes, 1))
        calls = sorted({t for row in block for t in realshape.CALL_ID.findall(repr(row).encode())})
        grown = rows[:end]
        for copy in range(1, copies + 1):
            for row in block:
                fresh = [c.encode() if isinstance(c, str) else c for c in row]
                for token in [] if keep_calls else calls:
                    fresh = [
                        c.replace(token, _fresh_call(token, copy)) if isinstance(c, bytes) else c
                        for c in fresh
                    ]
                grown.append(tuple(c.decode() if isinstance(c, bytes) else c for c in fresh))
        grown += rows[end:]
        conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
        conn.executemany(
            f"INSERT INTO messages (session_id, {_HERMES_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)",
            [(session_id, *row) for row in grown],
        )
        conn.commit()
    finally:
        conn.close()
    return Grown("hermes", kind, target, "HOME", db, copies, session_arg=session_id)


def _hermes_slice(kind: str, rows: list[tuple[Any, ...]]) -> tuple[int, int]:
    """[start, end) of the rows to repeat: an assistant row whose call the kind names with
    its tool rows; the first turn's calls ("middle"); the latest prompt ("prompts")."""
    if kind == "prompts":
        needle = str(expected("hermes")["latest_user_message"])
        at = next(i for i, r in enumerate(rows) if r[0] == "user" and r[1] == needle)
        return at, at + 1
    if kind == "middle":
        users = [i for i, r in enumerate(rows) if r[0] == "user"]
        last_tool = max(i for i, r in enumerate(rows) if r[0] == "tool")
        return users[0] + 1, last_tool + 1
    name = {"plan": "todo", "failing": "terminal", "edits": "write_file"}[kind]
    at = next(
        i for i, r in enumerate(rows) if r[0] == "assistant" and f'"name": "{name}"' in (r[3] or "")
    )
    end = at + 1
    while end < len(rows) and rows[end][0] == "tool":
        end += 1
    return at, end


# -- the editors' chats (issue 24): built from their public shapes, not recorded ---------
# copilot-chat grows its .jsonl log (requests pushed, or one field set over and over);
# cline-ext and roo grow ui_messages.json, one JSON array, by repeating its middle.
EDITOR_KINDS: dict[str, tuple[str, ...]] = {
    "copilot-chat": ("middle", "mutations", "errors"),
    "cline-ext": ("middle", "plan", "errors"),
    "roo": ("middle", "plan", "errors"),
}


def grow_editor(agent: str, kind: str, size: int, target: Path) -> Grown:
    """A store of `agent` (tests/editor_chats.py) under `target`, its session grown to about
    `size` bytes by repeating slices of `kind`; the workspace is `target/ws`."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import editor_chats as ec

    if target.exists():
        shutil.rmtree(target)
    user, workspace = target / "User", target / "ws"
    workspace.mkdir(parents=True)
    if agent == "copilot-chat":
        path = ec.write_copilot(user, workspace, jsonl=True)
        copies = _grow_chat_log(path, kind, size)
    else:
        writer = ec.write_cline if agent == "cline-ext" else ec.write_roo
        path = writer(user, workspace)
        copies = _grow_messages(path, kind, size)
    return Grown(agent, kind, user, "PASSDOWN_EDITOR_USER_DIRS", path, copies)


def _grow_chat_log(path: Path, kind: str, size: int) -> int:
    lines = path.read_bytes().splitlines()
    state = json.loads(lines[0])["v"]
    request = state["requests"][0]
    copies = 0
    with path.open("ab") as log:
        written = path.stat().st_size
        while written < size:
            copies += 1
            if kind == "mutations":  # one field set again and again: 100k tiny lines
                entry: dict[str, Any] = {
                    "kind": 1,
                    "k": ["requests", 0, "result", "timings"],
                    "v": {"firstProgress": copies},
                }
            else:
                fresh = json.loads(json.dumps(request))
                fresh["requestId"] = f"request_grown_{copies}"
                fresh["message"] = {"text": f"and again, round {copies}", "parts": []}
                if kind == "errors":
                    fresh["response"] = []
                    fresh["result"] = {"errorDetails": {"message": "Rate limit exceeded (429)"}}
                    fresh["modelState"] = {"value": 3}
                entry = {"kind": 2, "k": ["requests"], "v": [fresh]}
            line = json.dumps(entry, separators=(",", ":")).encode() + b"\n"
            log.write(line)
            written += len(line)
    return copies


def _grow_messages(path: Path, kind: str, size: int) -> int:
    messages = json.loads(path.read_text())
    head, middle, tail = messages[:2], messages[2:-2], messages[-2:]
    if kind == "plan":
        middle = [
            m
            for m in middle
            if m.get("say") == "task_progress" or '"updateTodoList"' in m.get("text", "")
        ]
    elif kind == "errors":
        middle = [dict(tail[1], ts=tail[1]["ts"] - 1), {**head[1]}]
    slice_bytes = max(len(json.dumps(middle)), 1)
    copies = max(size // slice_bytes, 1)
    grown = [*head]
    for copy in range(copies):
        grown += [dict(m, ts=m["ts"] + copy * 1000) for m in middle]
    grown += [dict(m, ts=m["ts"] + copies * 1000) for m in messages[2:-2] + tail]
    path.write_text(json.dumps(grown, separators=(",", ":")))
    return copies
