"""Pass 1's view of a Claude Code record (`passdown.agents.claude`): its place in the
tree, a leaf hint, or nothing, and the session title it may carry. The forward pass
(`_claude_reader.feed_straight`) takes the same view of a line outside the common case.
"""

from __future__ import annotations

import msgspec

from passdown.agents._claude_records import (
    _ENVELOPE,
    _LOOSE_RECORD,
    _RECORD,
    _Envelope,
    _Record,
)
from passdown.agents._common import DECODE_ERRORS, decode_line
from passdown.agents._tree import LeafHint, Node
from passdown.transcript import Diagnostics, SessionInfo

# Records that belong to the conversation tree.
_CHAIN_TYPES = frozenset({"user", "assistant", "system", "attachment", "progress"})
# Records we know and deliberately ignore (everything else is counted as unknown).
_KNOWN_OTHER = frozenset(
    {
        "summary",
        "last-prompt",
        "file-history-snapshot",
        "queue-operation",
        "permission-mode",
        "custom-title",
        "ai-title",
        "agent-name",
        "tag",
        "pr-link",
        "mode",
        "worktree-state",
    }
)


def _node(
    env: _Envelope | _Record, info: SessionInfo, diag: Diagnostics, *, forward: bool = False
) -> Node | LeafHint | None:
    """Pass 1's view of a record: its place in the tree, a leaf hint, or nothing. Pass 1
    reads backwards and keeps the first title it meets; `forward` (the forward pass)
    keeps the last one, the same newest title."""
    kind = env.type
    if kind not in _CHAIN_TYPES:
        _note_title(env, info, forward)
        if kind in ("last-prompt", "summary"):
            return LeafHint(env.leafUuid)
        if kind not in _KNOWN_OTHER:
            diag.unknown(kind or "(no type)")
        return None
    if env.isSidechain:
        diag.sidechain_records += 1
        return None
    if not env.uuid:
        return None
    parent = env.parentUuid
    if parent is None and kind == "system" and env.logicalParentUuid:
        parent = env.logicalParentUuid  # across a compaction
    return Node(env.uuid, parent)


def _note_title(env: _Envelope | _Record, info: SessionInfo, forward: bool) -> None:
    if info.title is None or forward:
        title = (
            env.customTitle
            or env.aiTitle
            or env.title
            or (env.summary if env.type == "summary" else None)
        )
        if title or not forward:
            info.title = title


def _quiet_record(line: bytes) -> _Record | None:
    """A line the typed decode refused, decoded as pass 2 decodes it, without noting a
    bad line (the forward pass then reads it as pass 1 does)."""
    for decoder in (_RECORD, _LOOSE_RECORD):
        try:
            record: _Record = decoder.decode(line)
            return record
        except (msgspec.ValidationError, *DECODE_ERRORS):
            continue
    return None


def _pass1_view(
    line: bytes, offset: int, tail: int, info: SessionInfo, diag: Diagnostics
) -> Node | LeafHint | None:
    """What pass 1 makes of a line (`claude._node_reader`), titles noted forwards."""
    env = decode_line(_ENVELOPE, line, offset, tail, diag)
    if not isinstance(env, _Envelope):
        return None
    if env.type in _CHAIN_TYPES and not env.isSidechain and env.parentUuid is not None:
        return Node(env.uuid, env.parentUuid) if env.uuid else None
    return _node(env, info, diag, forward=True)
