"""Gemini CLI: sessions under `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-*.jsonl`.

`<project>` is a short name registered in `~/.gemini/projects.json` (`{"projects": {root:
name}}`, the root also written to `tmp/<name>/.project_root`); builds before the registry
used the sha256 of the project root. The project root is the folder Gemini ran in, so a
workspace matches its own project and every registered project below it (a hash-named
folder can only be matched to the workspace itself: a hash cannot be reversed).

A session file is an append-only log the CLI replays: a header `{sessionId, projectHash,
startTime, ...}`; message records `{id, type: user|gemini|info|error|warning, content,
toolCalls, thoughts, model}` where a repeated id updates the earlier message in place;
`{"$set": {...}}` patches metadata and, with `messages`, replaces the whole history (on
resume, after a compression, after an aborted turn); `{"$rewindTo": id}` drops that
message and every later one. Builds before 0.2x wrote one pretty-printed JSON object per
session (`session-*.json`); those are streamed message by message.

The reading is split along its seams: `_replay` replays the log into the live message
list, `_emitter` turns those messages into events, `_legacy` streams the old files,
`_live` holds the live message list in arrays, `_resume` continues the replay from a
checkpoint (incremental export).
Hidden reasoning (`thoughts`, `thought: true` parts) is never decoded. The session files
carry no CLI version, so `agent_version` stays unknown. What Gemini CLI shares with Qwen
Code, its fork (tool tables, content parts, tool results), is in
`passdown.agents._gemini_family`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from passdown._jsonl import read_side_file
from passdown._lazy_re import lazy_compile
from passdown.agents._common import file_mtime, is_dir, is_file, list_folder, read_head
from passdown.agents.base import Agent, CannotResume, LaunchSpec, cwd_in_workspace
from passdown.transcript import (
    Diagnostics,
    Event,
    SessionInfo,
    SessionRef,
    SubagentNote,
    ToolCall,
    Transcript,
)

if TYPE_CHECKING:
    from passdown.agents.gemini._resume import ResumableReplay

_HASH_NAME = lazy_compile(r"[0-9a-f]{64}")
_REGISTRY_LIMIT = 16 * 1024 * 1024


class GeminiCLI(Agent):
    name = "gemini"
    display_name = "Gemini CLI"
    program = "gemini"
    store_env = ("GEMINI_CLI_HOME",)

    def gemini_dir(self) -> Path:
        configured = os.environ.get("GEMINI_CLI_HOME")  # the CLI's own home override
        home = Path(configured).expanduser() if configured else Path.home()
        if os.environ.get("SANDBOX") == "sandbox-exec":  # macOS seatbelt runs keep state here
            return home / ".cache" / ".gemini"
        return home / ".gemini"

    def store_roots(self) -> list[Path]:
        return [self.gemini_dir() / "tmp"]

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for folder, root in self._projects(workspace):
            for path in _session_files(folder / "chats"):
                yield self._ref(path, root)

    def _projects(self, workspace: Path | None) -> Iterator[tuple[Path, str | None]]:
        tmp = self.gemini_dir() / "tmp"
        roots = {name: root for root, name in _registry(self.gemini_dir()).items()}
        folders = [p for p in list_folder(tmp) if is_dir(p)]
        ws_hash = hashlib.sha256(str(workspace).encode()).hexdigest() if workspace else None
        for folder in folders:
            root = _marker(folder) or roots.get(folder.name)
            if root is None and _HASH_NAME.fullmatch(folder.name):
                if workspace is not None and folder.name != ws_hash:
                    continue
                root = str(workspace) if workspace is not None else None
            elif root is None:
                continue  # not a project folder (bin/, ...)
            if workspace is None or cwd_in_workspace(root, workspace):
                yield folder, root

    def ref_for_path(self, path: Path) -> SessionRef:
        project = path.parent.parent
        root = _marker(project) or {n: r for r, n in _registry(self.gemini_dir()).items()}.get(
            project.name
        )
        return self._ref(path, root)

    def _ref(self, path: Path, root: str | None) -> SessionRef:
        mtime, size = file_mtime(path)
        fields = _head_fields(path)
        session_id = fields.get("sessionId") or path.name.split(".")[0]
        return SessionRef(
            agent=self.name,
            session_id=session_id,
            path=path,
            cwd=root,
            started_at=fields.get("startTime"),
            updated_at=mtime,
            size=size,
        )

    # -- reading ------------------------------------------------------------------
    def read(self, ref: SessionRef) -> Transcript:
        return self.stream(ref, lambda info, diag: self._events(ref, info, diag))

    def _events(self, ref: SessionRef, info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
        # the readers load here: an export that only asks where sessions live needs none
        from passdown.agents.gemini._emitter import Emitter
        from passdown.agents.gemini._legacy import read_legacy
        from passdown.agents.gemini._replay import Replay

        emitter = Emitter(info, diag)
        if ref.path.name.endswith(".json"):
            yield from read_legacy(ref.path, emitter)
        else:
            replay = Replay(ref.path, info, diag)
            replay.spill()
            replay.run()
            yield from replay.messages(emitter)
            replay.close()
            emitter.apply_times(replay.header_started)
        yield from _subagents(ref.session_id, ref.path)

    # JSON Lines sessions are read incrementally (`_resume`); a legacy .json never is.
    supports_checkpoint = True

    def resumable_reader(
        self,
        info: SessionInfo,
        diagnostics: Diagnostics,
        state: object | None,
        pending: dict[str, ToolCall],
    ) -> ResumableReplay:
        from passdown.agents.gemini._resume import ResumableReplay

        if info.path.name.endswith(".json"):
            raise CannotResume("a legacy session file is one JSON object")
        return ResumableReplay(info, diagnostics, state, pending, _subagents)

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # "--flag=value" keeps a prompt that starts with "-" one value (yargs would read
        # "-p -x" as two flags). auto_edit approves edits, as Claude's acceptEdits does.
        if interactive:
            return LaunchSpec(argv=[self.program, f"--prompt-interactive={prompt}"], cwd=workspace)
        argv = [self.program, "--approval-mode", "auto_edit", f"--prompt={prompt}"]
        return LaunchSpec(argv=argv, cwd=workspace)


# -- discovery helpers -----------------------------------------------------------------
def _registry(gemini_dir: Path) -> dict[str, str]:
    """projects.json: {project root: short name}; missing or broken gives {}."""
    raw = read_side_file(gemini_dir / "projects.json", _REGISTRY_LIMIT)
    try:
        data = json.loads(raw) if raw is not None else None
    except (ValueError, RecursionError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return {}
    return {
        str(k): str(v) for k, v in projects.items() if isinstance(v, str) and isinstance(k, str)
    }


def _marker(folder: Path) -> str | None:
    """The project root a folder belongs to (`.project_root`, written by 0.2x+)."""
    raw = read_side_file(folder / ".project_root", 8192)
    root = raw.decode("utf-8", "replace").strip() if raw is not None else ""
    return root or None


def _session_files(chats: Path) -> list[Path]:
    entries = [p for p in list_folder(chats) if p.name.startswith("session-") and is_file(p)]
    names = {p.name for p in entries}
    # A resumed legacy session.json is continued as session.jsonl next to it.
    return [
        p
        for p in entries
        if p.name.endswith(".jsonl") or (p.name.endswith(".json") and p.name + "l" not in names)
    ]


def _head_fields(path: Path) -> dict[str, str]:
    """sessionId and startTime from the first bytes (a header line, or the top of a
    pretty-printed legacy file), without reading on."""
    from passdown.agents.gemini._legacy import HEAD_FIELD  # with the reader it serves

    found: dict[str, str] = {}
    for match in HEAD_FIELD.finditer(read_head(path, 8192)):
        key = match.group(1).decode()
        found.setdefault(key, match.group(2).decode("utf-8", "replace"))
        if len(found) == 2:
            break
    return found


def _subagents(session_id: str, path: Path) -> Iterator[SubagentNote]:
    """Sub-agent transcripts live in chats/<parent session id>/<id>.jsonl."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", session_id)
    try:
        files = sorted((path.parent / safe).glob("*.jsonl"))
    except OSError:
        return
    for path in files:
        yield SubagentNote(agent_id=path.stem, path=str(path))


__all__ = ["GeminiCLI"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
GeminiCLI.integration = "passdown.integrations._settings_json:GeminiHooks"  # type: ignore[attr-defined]
