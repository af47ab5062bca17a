"""The Roo Code VS Code extension (`rooveterinaryinc.roo-cline`) as a source to hand off
from: its task folders under each editor's `globalStorage/rooveterinaryinc.roo-cline/
tasks/<id>/` (read by `passdown.agents._task_folders`, shared with Cline). Not a launch
target. The `roo-cline.customStoragePath` setting, which moves the folders, is not read:
point `PASSDOWN_EDITOR_USER_DIRS` at such a store's parent layout instead.

From github.com/RooCodeInc/Roo-Code:
- `tasks/<id>/history_item.json`, the task's `HistoryItem` and its source of truth
  (`src/core/task-persistence/TaskHistoryStore.ts`, `packages/types/src/history.ts`):
  `{id, ts, task, workspace, status: active|completed|delegated, ...}`; the cache
  `tasks/_index.json` `{version, entries: HistoryItem[]}` where a task has no such file.
- the todo list has no file of its own: the last `ask:tool` message whose JSON is
  `{tool: "updateTodoList", todos[{id, content, status}]}`, or the user's own edit
  `say:user_edit_todos` (`getLatestTodo` in `src/shared/todo.ts`): replayed in order, the
  last one stands.
"""

from __future__ import annotations

from pathlib import Path

from passdown.agents._task_folders import TaskFacts, TaskFolderAgent, history_facts, read_json

_ITEM_BYTES = 4 * 1024 * 1024


class RooCode(TaskFolderAgent):
    name = "roo"
    display_name = "Roo Code (VS Code extension)"
    program = "code"
    extension_id = "rooveterinaryinc.roo-cline"

    def history(self, root: Path) -> dict[str, TaskFacts]:
        index: dict[str, TaskFacts] = {}
        cache = read_json(root / "tasks" / "_index.json")
        entries = cache.get("entries") if isinstance(cache, dict) else None
        for item in entries if isinstance(entries, list) else []:
            found = history_facts(item, "workspace")
            if found is not None:
                index.setdefault(*found)
        return index

    def facts(self, task_dir: Path, index: dict[str, TaskFacts]) -> TaskFacts:
        found = history_facts(read_json(task_dir / "history_item.json", _ITEM_BYTES), "workspace")
        if found is not None and found[0] == task_dir.name:
            return found[1]
        return index.get(task_dir.name) or TaskFacts()


__all__ = ["RooCode"]
