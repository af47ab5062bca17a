"""Claude Code's sub-agents: where their transcripts and meta files are, each read once
and only when the active branch spawned it."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import msgspec

from passdown._jsonl import read_side_file
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


_META = msgspec.json.Decoder(SubagentMeta)


class Subagents:
    """Where a session's sub-agent transcripts are (`<session>/subagents/agent-<id>.jsonl`
    with a `.meta.json`; older builds: `agent-<id>.jsonl` beside the session), read only
    when the active branch spawned them, each once."""

    def __init__(self, folder: Path, legacy_folder: Path) -> None:
        self.folder = folder
        self.legacy_folder = legacy_folder
        self.read: set[str] = set()
        self._meta: dict[str, SubagentMeta] | None = None

    def claim(self, agent_id: str) -> bool:
        if not _SAFE_ID.match(agent_id) or agent_id in self.read:
            return False
        self.read.add(agent_id)
        return True

    def meta(self) -> dict[str, SubagentMeta]:
        if self._meta is None:
            self._meta = {}
            try:
                files = list(self.folder.glob("agent-*.meta.json"))
            except OSError:
                files = []
            for path in files:
                data = read_side_file(path)  # regular files only, size-bounded
                try:
                    meta = _META.decode(data) if data is not None else None
                except DECODE_ERRORS:
                    continue
                if meta is None:
                    continue
                agent_id = path.name.removeprefix("agent-").removesuffix(".meta.json")
                self._meta[agent_id] = meta
        return self._meta

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
        return next((a for a, m in self.meta().items() if m.toolUseId == call_id), None)

    def transcript(self, agent_id: str) -> Path | None:
        for folder in (self.folder, self.legacy_folder):
            for suffix in (".jsonl", ".jsonl.zst"):
                path = folder / f"agent-{agent_id}{suffix}"
                if path.is_file():
                    return path
        return None
