"""The task folders the Cline and Roo Code VS Code extensions keep: what both share.

Each extension keeps `globalStorage/<extension id>/tasks/<taskId>/` under every editor's
User folder (`passdown.agents._editors`), holding (github.com/cline/cline
`src/core/storage/disk.ts` GlobalFileNames; github.com/RooCodeInc/Roo-Code
`src/shared/globalFileNames.ts`):
- `ui_messages.json`, `ClineMessage[]` (`src/shared/ExtensionMessage.ts`), what the user
  saw; `api_conversation_history.json`, Anthropic `MessageParam[]`, when it is gone;
- `task_metadata.json` (`src/core/context/context-tracking/ContextTrackerTypes.ts`):
  `files_in_context[{path, record_source: read_tool|user_edited|cline_edited|roo_edited|
  file_mentioned, cline_edit_date, user_edit_date}]`: the files the task edited, and
  those the user edited while it ran.

What the messages say is read by `passdown.agents._ui_messages`.
The agent modules (`cline_ext`, `roo`) add where their index and their plan live.

Times: the history item's `ts` is the task's last activity (`saveClineMessagesAndUpdateHistory`
in Cline's `message-state.ts`, `taskMetadata` in Roo's `taskMetadata.ts`: the last message's
`ts`), so it is the session's `updated_at`; it started with its first message (`started_at`).
A message file that holds no message is no session: its API history is read instead,
and with none there the read fails (exit 5), as for any session file with no record.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown.agents import _editors
from passdown.agents._common import (
    is_dir,
    is_file,
    list_folder,
)
from passdown.agents._document import decode_side_file
from passdown.agents._editors import iso_millis
from passdown.agents._ui_messages import CommandResults, UiMessages, api_history, first_ts
from passdown.agents.base import Agent, LaunchSpec, cwd_in_workspace
from passdown.errors import SessionReadError
from passdown.transcript import (
    Diagnostics,
    Event,
    PlanOp,
    SessionInfo,
    SessionRef,
    ToolCall,
    ToolResult,
    Transcript,
)

MAX_INDEX_BYTES = 64 * 1024 * 1024  # taskHistory.json, _index.json
UI_MESSAGES = "ui_messages.json"
API_HISTORY = "api_conversation_history.json"

_EDITED_SOURCES = {"cline_edited": "files_in_context", "roo_edited": "files_in_context"}


class TaskFacts(msgspec.Struct):
    """What an extension's history says about one task."""

    cwd: str | None = None
    task: str | None = None  # its first prompt
    ts: float | None = None
    model: str | None = None
    status: str | None = None  # Roo: active|completed|delegated


class TaskFolderAgent(Agent):
    """An extension that keeps one folder per task under its globalStorage."""

    extension_id: str  # "saoudrizwan.claude-dev"
    store_env = ("PASSDOWN_EDITOR_USER_DIRS",)

    def store_roots(self) -> list[Path]:
        return [user / "globalStorage" / self.extension_id for user in _editors.user_dirs()]

    def history(self, root: Path) -> dict[str, TaskFacts]:
        """The task index of one store root: task id -> facts."""
        raise NotImplementedError

    def facts(self, task_dir: Path, index: dict[str, TaskFacts]) -> TaskFacts:
        return index.get(task_dir.name) or TaskFacts()

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for root in self.store_roots():
            tasks = list_folder(root / "tasks")
            if not tasks:
                continue
            index = self.history(root)
            for task_dir in tasks:
                if not is_dir(task_dir):
                    continue
                facts = self.facts(task_dir, index)
                if not cwd_in_workspace(facts.cwd, workspace):
                    continue
                ref = self._ref(task_dir, facts)
                if ref is not None:
                    yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        task_dir = path if is_dir(path) else path.parent
        facts = self.facts(task_dir, self.history(task_dir.parent.parent))
        ref = self._ref(task_dir, facts)
        if ref is None:  # neither message file: named as given, reading says so
            ref = SessionRef(agent=self.name, session_id=task_dir.name, path=path, cwd=facts.cwd)
        return ref

    def _ref(self, task_dir: Path, facts: TaskFacts) -> SessionRef | None:
        for name in (UI_MESSAGES, API_HISTORY):
            path = task_dir / name
            if is_file(path):
                st = os.stat(path)
                return SessionRef(
                    agent=self.name,
                    session_id=task_dir.name,
                    path=path,
                    cwd=facts.cwd,
                    started_at=self.started_at(task_dir, path),
                    updated_at=st.st_mtime,
                    size=st.st_size,
                    title=" ".join(facts.task.split())[:200] if facts.task else None,
                )
        return None

    def started_at(self, task_dir: Path, path: Path) -> str | None:
        """When the task started: its first message's `ts`."""
        return first_ts(path)

    # -- reading ------------------------------------------------------------------
    def read(self, ref: SessionRef) -> Transcript:
        return self.stream(ref, lambda info, diag: self._events(ref, info, diag))

    def _events(self, ref: SessionRef, info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
        task_dir = ref.path.parent
        facts = self.facts(task_dir, self.history(task_dir.parent.parent))
        info.cwd = facts.cwd or info.cwd
        info.started_at = ref.started_at  # else the first message read says it
        info.updated_at = iso_millis(facts.ts)
        info.add_model(facts.model)
        if facts.task:
            info.title = " ".join(facts.task.split())[:200]
        yield from files_in_context(task_dir / "task_metadata.json")
        history = task_dir / API_HISTORY
        if ref.path.name == UI_MESSAGES:
            results = CommandResults(history) if is_file(history) else None
            reader = UiMessages(info, diag, results)
            yield from reader.read(ref.path, facts.task)
            yield from reader.close()
            if reader.count == 0:
                yield from self._no_messages(ref.path, history, info, diag)
        else:
            yield from self._no_messages(None, ref.path, info, diag)
        plan = self.final_plan(task_dir, ref.session_id)
        if plan is not None:
            yield plan

    def _no_messages(
        self, empty: Path | None, history: Path, info: SessionInfo, diag: Diagnostics
    ) -> Iterator[Event]:
        """The task from its API history, for a `ui_messages.json` that is gone or holds no
        message (`empty`); refused (exit 5) when that holds none either: the task index's
        entry alone ("Task #1 (No messages)", Roo writes for such a task) is no session."""
        lines = diag.lines
        if is_file(history):
            if empty is not None:
                diag.warnings.append(f"{empty.name} holds no message: read {history.name}")
            yield from api_history(history, info, diag)
        if diag.lines == lines:
            where = empty or history
            raise SessionReadError(
                f"{where} holds no {self.display_name} message"
                + (f", nor does {history.name}" if empty is not None else "")
                + "; nothing was handed off",
                hint="the extension may not have written this task yet; pass --session "
                "with another",
            )

    def final_plan(self, task_dir: Path, task_id: str) -> PlanOp | None:
        """The plan as the task left it, where the extension keeps one beside the
        messages (Cline's focus chain file); None when the messages have the last word."""
        return None

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        raise _editors.not_a_launch_target(self.display_name)


# -- the index files ----------------------------------------------------------------
def read_json(path: Path, limit: int = MAX_INDEX_BYTES) -> object:
    """A small JSON file as plain data; None when missing, unreadable, too large or bad."""
    return decode_side_file(path, _ANY, limit)


_ANY = LazyDecoder()


def history_facts(item: object, *cwd_keys: str) -> tuple[str, TaskFacts] | None:
    """One `HistoryItem` as (task id, facts)."""
    if not isinstance(item, dict):
        return None
    task_id = item.get("id")
    if not isinstance(task_id, str) or not task_id:
        return None
    cwd = next((item[k] for k in cwd_keys if isinstance(item.get(k), str) and item[k]), None)
    ts = item.get("ts")
    return task_id, TaskFacts(
        cwd=cwd,
        task=_str(item.get("task")),
        ts=ts if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None,
        model=_str(item.get("modelId")),
        status=_str(item.get("status")),
    )


def files_in_context(path: Path) -> Iterator[Event]:
    """The files `task_metadata.json` records as edited by the agent or the user."""
    data = read_json(path, 16 * 1024 * 1024)
    entries = data.get("files_in_context") if isinstance(data, dict) else None
    by_source: dict[str, list[str]] = {}
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        source, file = entry.get("record_source"), entry.get("path")
        if (
            isinstance(file, str)
            and file
            and source in ("cline_edited", "roo_edited", "user_edited")
        ):
            by_source.setdefault(str(source), []).append(file)
    for source, paths in by_source.items():
        yield ToolCall(
            call_id=f"files_in_context:{source}",
            name=_EDITED_SOURCES.get(source, source),
            action="edit",
            paths=tuple(dict.fromkeys(paths)),
        )
        yield ToolResult(call_id=f"files_in_context:{source}")


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
