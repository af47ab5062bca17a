"""Cursor's editor chats (the Composer / Agent panel of the Cursor IDE), as a source to
hand off from.

This is its own agent, not part of `cursor`: that one reads `cursor-agent`'s CLI
transcripts (JSON Lines under `~/.cursor/projects/`), a different program with a
different store, format and launch. Keeping them apart keeps each reader's format
promises separate, lets `--from cursor` keep meaning the CLI, and makes the listing say
which of the two a session came from.

**The format is reverse-engineered by third parties, not documented by Cursor**, and
changes between releases; every value is read defensively (a wrong type or a torn value
skips that value, counted in the diagnostics). Sources: chatrxiv
`docs/cursor/storage-reference.md` (composerData `_v` 10, bubbles `_v` 3, Dec 2025),
cursor-efficiency `docs/vscdbRelation.md` (Cursor 0.50), TalkReplay
`docs/cursor-storage.md`, AgentBase `docs/CURSOR.md`.

Where (the User folder per platform: `_editors`): `~/.config/Cursor/User` (Linux),
`~/Library/Application Support/Cursor/User` (macOS), `%APPDATA%\\Cursor\\User` (Windows).
- Discovery: `workspaceStorage/<id>/workspace.json` names the folder (VS Code's own
  mapping, documented by VS Code's source); that folder's `state.vscdb`, `ItemTable`
  key `composer.composerData`, lists its chats (`allComposers[{composerId, name,
  createdAt, lastUpdatedAt}]`). A chat with no message (opened, never sent) is not listed.
- Content: `globalStorage/state.vscdb`, table `cursorDiskKV` (`_cursor_store`):
  `composerData:<id>` holds `status` (none|generating|completed|error), `modelConfig
  {modelName}`, `fullConversationHeadersOnly[{bubbleId, type: 1 user|2 assistant}]`,
  `originalFileStates` (file URI -> its content before the chat's edits),
  `newlyCreatedFiles`, `todos[{id, content, status}]`, `createdOnBranch`; older builds
  inline `conversation[]` (or `conversationMap`). `bubbleId:<composerId>:<bubbleId>`
  holds one message: `text` (or Lexical `richText`), `createdAt`, `modelInfo`, and
  `toolFormerData {name, rawArgs|params, result, status}` for a tool call (`edit_file`,
  `edit_file_v2`, `search_replace`, `delete_file`, `run_terminal_cmd`, `todo_write`, ...).

Which fields come from where:
- documented (VS Code's own source, which Cursor is a fork of): the User folder per
  platform, `workspaceStorage/<id>/workspace.json` -> folder, `state.vscdb` as SQLite
  with `ItemTable(key, value)`;
- reverse-engineered (the sources above; Cursor documents none of it): the table
  `cursorDiskKV`, the keys `composer.composerData`, `composerData:<id>` and
  `bubbleId:<id>:<bubble>`, and every field read from them: the chat list, `status`,
  `modelConfig`, `createdOnBranch`, the headers and inline `conversation`, `todos`,
  `originalFileStates`, `newlyCreatedFiles`, the bubbles' `type`, `text`/`richText`,
  `createdAt`, `modelInfo`, and `toolFormerData` (tool names, `rawArgs`/`params`,
  `result` with `output`/`exitCode`, `status`).

A `SessionRef` is the workspace's `state.vscdb` plus the chat's id; the transcript's
fingerprint is a sha256 over the values read (the global database holds every chat).
Opening is `_sqlite_readonly`: read-only, no file created beside Cursor's, short
statements only. Cursor's editor cannot be launched on a handoff: `--to cursor-ide`
exits 7 naming the CLI agents to use instead.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown.agents import _editors
from passdown.agents._common import decode_or_none, file_mtime, is_file
from passdown.agents._cursor_events import (
    Bubble,
    Composer,
    bubble_events,
    bubble_ids,
    ending_of,
    file_events,
    model_name,
    raw_dict,
    raw_list,
    todos_plan,
)
from passdown.agents._cursor_store import Chat, GlobalStore, workspace_chats
from passdown.agents.base import Agent, LaunchSpec, SkippedSession, cwd_in_workspace
from passdown.errors import LaunchError, SessionNotFound, SessionReadError
from passdown.transcript import Diagnostics, Event, SessionInfo, SessionRef, Transcript

_COMPOSER = LazyDecoder(Composer)
_BUBBLE = LazyDecoder(Bubble)
KNOWN_COMPOSER_VERSIONS = frozenset(range(1, 11))  # `_v` seen up to 10 (Dec 2025)
KNOWN_BUBBLE_VERSIONS = frozenset({1, 2, 3})
MAX_MESSAGES = 100_000  # headers read per chat: bounds a hostile list


class CursorIDE(Agent):
    name = "cursor-ide"
    display_name = "Cursor (editor chats)"
    program = "cursor"
    store_env = ("PASSDOWN_EDITOR_USER_DIRS", "APPDATA", "XDG_CONFIG_HOME")
    editors: ClassVar[tuple[str, ...]] = ("cursor",)

    def user_dirs(self) -> list[Path]:
        return _editors.user_dirs(self.editors, remote=False)

    def store_roots(self) -> list[Path]:
        return self.user_dirs()

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for user_dir in self.user_dirs():
            yield from self._user_dir_refs(user_dir, workspace)

    def _user_dir_refs(self, user_dir: Path, workspace: Path | None) -> Iterator[SessionRef]:
        """The chats with messages of one User folder's workspaces that ran in
        `workspace` (all when None)."""
        store = _open_global(user_dir / "globalStorage" / "state.vscdb")
        try:
            for storage, folder in _editors.workspace_storages(user_dir):
                if not cwd_in_workspace(folder, workspace):
                    continue
                db = storage / "state.vscdb"
                if not is_file(db):
                    continue
                chats, problem = workspace_chats(db)
                stamp = file_mtime(db)
                if problem is not None and not chats:
                    _report_skipped(db, problem, stamp[0])
                for chat in chats:
                    if store is not None and not _safe_has_messages(store, chat):
                        continue
                    yield _ref(self.name, db, folder, chat, stamp)
        finally:
            if store is not None:
                store.close()

    def ref_for_path(self, path: Path) -> SessionRef:
        """`--session PATH`: a workspace's `state.vscdb` means its newest chat; the global
        `globalStorage/state.vscdb` the newest chat of any workspace of that User folder."""
        if path.parent.name == "globalStorage":
            refs = list(self._user_dir_refs(path.parent.parent, None))
        else:
            folder = _editors.workspace_folder(path.parent)
            chats, _warning = workspace_chats(path) if folder is not None else ([], None)
            refs = [_ref(self.name, path, folder, chat) for chat in chats]
        if not refs:
            raise SessionNotFound(
                f"no {self.display_name} chat found for {path}",
                hint="name a workspaceStorage/<id>/state.vscdb, or pass the chat's id",
            )
        return max(refs, key=lambda r: r.updated_at)

    # -- reading ------------------------------------------------------------------
    def read(self, ref: SessionRef) -> Transcript:
        info = SessionInfo(
            agent=self.name,
            session_id=ref.session_id,
            path=ref.path,
            cwd=ref.cwd,
            title=ref.title,
            started_at=ref.started_at,
        )
        transcript = Transcript(info=info, diagnostics=Diagnostics(), _events=iter(()))
        transcript._events = self._events(ref, transcript)
        return transcript

    def _events(self, ref: SessionRef, transcript: Transcript) -> Iterator[Event]:
        diag = transcript.diagnostics
        global_db = global_db_of(ref.path)
        try:
            store = GlobalStore(global_db)
        except sqlite3.Error as exc:
            raise SessionReadError(
                f"cannot read chat {ref.session_id}: Cursor's chat database {global_db} "
                f"cannot be read ({exc}); nothing was handed off",
                hint="Cursor keeps every chat's messages there; check that the file is there "
                "and readable",
            ) from None
        digest = hashlib.sha256()
        try:
            if store.warning:
                diag.warnings.append(store.warning)
            yield from _chat_events(store, ref.session_id, transcript.info, diag, digest)
            transcript.sha256 = digest.hexdigest()
        except sqlite3.Error as exc:
            diag.warnings.append(f"stopped reading {global_db.name} early: {exc}")
        finally:
            store.close()

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        raise LaunchError(
            "cursor-ide is a source only: passdown reads Cursor's editor chats but cannot "
            "open a chat in the editor on a handoff",
            hint="hand off to a CLI agent instead: --to cursor (cursor-agent), claude, codex, ...",
        )


def _report_skipped(db: Path, problem: str, mtime: float) -> None:
    """A workspace's list of chats that cannot be read is reported as a session file
    discovery could not open (listed by `sessions`, exit 5 when it is all there is),
    never skipped silently."""
    from passdown.agents.base import _skipped_sink

    sink = _skipped_sink.get()
    if sink is not None:
        sink.append(SkippedSession(path=db, reason=problem, updated_at=mtime))


def global_db_of(workspace_db: Path) -> Path:
    """`<User>/workspaceStorage/<id>/state.vscdb` -> `<User>/globalStorage/state.vscdb`."""
    return workspace_db.parent.parent.parent / "globalStorage" / "state.vscdb"


def _open_global(path: Path) -> GlobalStore | None:
    if not is_file(path):
        return None
    try:
        return GlobalStore(path)
    except sqlite3.Error:
        return None  # listed anyway: the read says what is wrong with it


def _safe_has_messages(store: GlobalStore, chat: Chat) -> bool:
    try:
        return store.has_messages(chat.composer_id)
    except sqlite3.Error:
        return True  # cannot tell: list it, the read reports the error


def _ref(
    agent: str, db: Path, folder: str | None, chat: Chat, stamp: tuple[float, int] | None = None
) -> SessionRef:
    mtime, size = stamp or file_mtime(db)
    updated = chat.updated_ms or chat.created_ms
    return SessionRef(
        agent=agent,
        session_id=chat.composer_id,
        path=db,
        cwd=folder,
        started_at=iso_millis(chat.created_ms),
        updated_at=updated / 1000 if updated else mtime,
        size=size,
        title=chat.name,
    )


def iso_millis(millis: float | None) -> str | None:
    if millis is None:
        return None
    try:
        stamp = datetime.fromtimestamp(millis / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _chat_events(
    store: GlobalStore,
    composer_id: str,
    info: SessionInfo,
    diag: Diagnostics,
    digest: hashlib._Hash,
) -> Iterator[Event]:
    data = store.value(f"composerData:{composer_id}")
    composer = decode_or_none(_COMPOSER, data) if data is not None else None
    if data is None or not isinstance(composer, Composer):
        what = "has no content" if data is None else "has content that is not readable JSON"
        raise SessionReadError(
            f"cannot read chat {composer_id}: it {what} in Cursor's chat database "
            f"{store.path} (composerData:{composer_id}); nothing was handed off",
            hint="Cursor may have deleted the chat, or be rewriting it: try again, or pass "
            "--session with another chat",
        )
    digest.update(data)
    del data
    _fill_info(info, composer, diag)
    calls = 0
    for bubble in _bubbles(store, composer_id, composer, diag, digest):
        info.add_model(_model(model_name(bubble.modelInfo)))
        if bubble.v is not None and bubble.v not in KNOWN_BUBBLE_VERSIONS:
            diag.unknown(f"bubble _v {bubble.v}")
        for event in bubble_events(bubble, calls, diag):
            calls += 1
            yield event
    yield from file_events(composer, diag)
    yield from todos_plan(composer)
    ending = ending_of(composer)
    if ending is not None:
        yield ending


def _fill_info(info: SessionInfo, composer: Composer, diag: Diagnostics) -> None:
    if composer.v is not None and composer.v not in KNOWN_COMPOSER_VERSIONS:
        diag.warnings.append(
            f"composerData _v {composer.v!r} is newer than the versions passdown was written "
            "against (up to 10): read as far as its fields match"
        )
    if isinstance(composer.name, str) and composer.name.strip():
        info.title = composer.name
    created = composer.createdAt
    if isinstance(created, int | float) and not isinstance(created, bool):
        info.started_at = iso_millis(float(created)) or info.started_at
    updated = composer.lastUpdatedAt
    if isinstance(updated, int | float) and not isinstance(updated, bool):
        info.updated_at = iso_millis(float(updated))
    info.add_model(_model(model_name(composer.modelConfig)))
    if isinstance(composer.createdOnBranch, str) and composer.createdOnBranch:
        info.git_branch = composer.createdOnBranch[:200]


def _model(name: str | None) -> str | None:
    """Cursor's "default" is its automatic model choice: no model name to show."""
    name = (name or "").strip()
    return None if not name or name == "default" or len(name) > 120 else name


def _bubbles(
    store: GlobalStore,
    composer_id: str,
    composer: Composer,
    diag: Diagnostics,
    digest: hashlib._Hash,
) -> Iterator[Bubble]:
    """The chat's messages in order: split storage (a header list, each bubble its own
    key) when the headers are there, else the inline conversation of older builds."""
    ids = bubble_ids(composer)
    if ids:
        if len(ids) > MAX_MESSAGES:
            diag.warnings.append(f"only the last {MAX_MESSAGES} of {len(ids)} messages read")
            ids = ids[-MAX_MESSAGES:]
        inline = raw_dict(composer.conversationMap)
        missing = 0
        for bubble_id, value in store.bubbles(composer_id, ids):
            raw = value if value is not None else _raw_bytes(inline.get(bubble_id))
            if raw is None:
                missing += 1
                continue
            digest.update(raw)
            bubble = _decode_bubble(raw, diag)
            if bubble is not None:
                yield bubble
        if missing:
            diag.warnings.append(
                f"{missing} message(s) the chat lists are missing from Cursor's database"
            )
        return
    for raw in raw_list(composer.conversation)[-MAX_MESSAGES:]:
        digest.update(bytes(raw))
        bubble = _decode_bubble(bytes(raw), diag)
        if bubble is not None:
            yield bubble


def _raw_bytes(raw: msgspec.Raw | None) -> bytes | None:
    return bytes(raw) if raw is not None and bytes(raw) not in (b"null", b"") else None


def _decode_bubble(raw: bytes, diag: Diagnostics) -> Bubble | None:
    diag.lines += 1
    bubble = decode_or_none(_BUBBLE, raw)
    if not isinstance(bubble, Bubble):
        diag.bad_lines += 1
        return None
    return bubble


__all__ = ["CursorIDE", "global_db_of"]
