"""Claude Code's sub-agents: where their transcripts and meta files are, each read once
and only when the active branch spawned it."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import msgspec

from passdown._jsonl import read_side_file
from passdown._lazy_json import LazyDecoder
from passdown.agents._common import DECODE_ERRORS

_AGENT_ID = re.compile(r"\bagentId:\s*([A-Za-z0-9_-]+)")
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def agent_id_in(text: str | None) -> str | None:
    match = _AGENT_ID.search(text or "")
    return match.group(1) if match else None


class SubagentMeta(msgspec.Struct):
    agentType: str | None = None
    description: str | None = None
    toolUseId: str | None = None


_META = LazyDecoder(SubagentMeta)


class Subagents:
    """Where a session's sub-agent transcripts are (`<session>/subagents/agent-<id>.jsonl`
    with a `.meta.json`; older builds: `agent-<id>.jsonl` beside the session), read only
    when the active branch spawned them, each once."""

    def __init__(self, folder: Path, legacy_folder: Path) -> None:
        self.folder = folder
        self.legacy_folder = legacy_folder
        self.read: set[str] = set()
        # tool-use id -> agent id of every meta file, built only when a spawn's result
        # does not name its agent (a session stopped while its sub-agents ran)
        self._by_call: dict[str, str] | None = None

    def claim(self, agent_id: str) -> bool:
        if not _SAFE_ID.match(agent_id) or agent_id in self.read:
            return False
        self.read.add(agent_id)
        return True

    def meta(self, agent_id: str) -> SubagentMeta | None:
        """The sub-agent's own meta file, read when it is spawned: one small file per
        spawn, never all of them held at once (a session may spawn thousands)."""
        return _read_meta(self.folder / f"agent-{agent_id}.meta.json")

    def stamp(self, agent_id: str) -> str:
        """Size and mtime of a sub-agent's transcript and meta file, as one short digest."""
        names = [f"agent-{agent_id}{suffix}" for suffix in (".jsonl", ".jsonl.zst")]
        paths = [folder / name for folder in (self.folder, self.legacy_folder) for name in names]
        parts = []
        for path in [*paths, self.folder / f"agent-{agent_id}.meta.json"]:
            try:
                st = path.stat()
            except OSError:
                continue
            parts.append(f"{path.name}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}")
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

    def agent_for_call(self, call_id: str) -> str | None:
        if self._by_call is None:
            self._by_call = {}
            try:
                files = list(self.folder.glob("agent-*.meta.json"))
            except OSError:
                files = []
            for path in files:
                meta = _read_meta(path)
                if meta is not None and meta.toolUseId:
                    agent_id = path.name.removeprefix("agent-").removesuffix(".meta.json")
                    self._by_call.setdefault(meta.toolUseId, agent_id)
        return self._by_call.get(call_id)

    def transcript(self, agent_id: str) -> Path | None:
        for folder in (self.folder, self.legacy_folder):
            for suffix in (".jsonl", ".jsonl.zst"):
                path = folder / f"agent-{agent_id}{suffix}"
                if path.is_file():
                    return path
        return None


def _read_meta(path: Path) -> SubagentMeta | None:
    data = read_side_file(path)  # regular files only, size-bounded
    if data is None:
        return None
    try:
        return _META.decode(data)
    except DECODE_ERRORS:
        return None
