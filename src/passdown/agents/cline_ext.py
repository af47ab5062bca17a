"""The Cline VS Code extension (`saoudrizwan.claude-dev`) as a source to hand off from:
its task folders under each editor's `globalStorage/saoudrizwan.claude-dev/tasks/<id>/`
(read by `passdown.agents._task_folders`, shared with Roo Code). Not the Cline CLI 3
(`passdown.agents.cline`, another store), and not a launch target.

From github.com/cline/cline:
- `state/taskHistory.json` (`src/core/storage/disk.ts` GlobalFileNames.taskHistory), a
  `HistoryItem[]` (`src/shared/HistoryItem.ts`): `{id, ts, task, modelId,
  cwdOnTaskInitialization, workspaceRootOnTaskInitialization}`; the cwd maps a task to its
  workspace. Newer builds share one store with the CLI and JetBrains under
  `~/.cline/data/` (`tasks/taskHistory.json`, task folders in `tasks/`): read as one more
  root (`.clinerules/storage.md`).
- the focus chain, Cline's checklist: `tasks/<id>/focus_chain_taskid_<id>.md`
  (`src/core/task/focus-chain`, `getFocusChainFilePath`), `- [ ]` / `- [x]` lines the
  user may edit: the plan as the task left it; the `say:task_progress` messages give
  its earlier states.
"""

from __future__ import annotations

from pathlib import Path

from passdown._jsonl import read_side_file
from passdown.agents._editors import iso_millis
from passdown.agents._task_folders import TaskFacts, TaskFolderAgent, history_facts, read_json
from passdown.agents._ui_messages import checklist
from passdown.transcript import PlanOp

_CWD_KEYS = ("cwdOnTaskInitialization", "workspaceRootOnTaskInitialization")
_FOCUS_CHAIN_BYTES = 1024 * 1024


class ClineExtension(TaskFolderAgent):
    name = "cline-ext"
    display_name = "Cline (VS Code extension)"
    program = "code"
    extension_id = "saoudrizwan.claude-dev"

    def store_roots(self) -> list[Path]:
        return [*super().store_roots(), Path.home() / ".cline" / "data"]

    def history(self, root: Path) -> dict[str, TaskFacts]:
        index: dict[str, TaskFacts] = {}
        for path in (root / "state" / "taskHistory.json", root / "tasks" / "taskHistory.json"):
            items = read_json(path)
            for item in items if isinstance(items, list) else []:
                found = history_facts(item, *_CWD_KEYS)
                if found is not None:
                    index.setdefault(*found)
        return index

    def started_at(self, task_dir: Path, path: Path) -> str | None:
        name = task_dir.name
        started = iso_millis(int(name)) if name.isdigit() and len(name) == 13 else None
        return started or super().started_at(task_dir, path)

    def final_plan(self, task_dir: Path, task_id: str) -> PlanOp | None:
        data = read_side_file(task_dir / f"focus_chain_taskid_{task_id}.md", _FOCUS_CHAIN_BYTES)
        if data is None:
            return None
        items = checklist(data.decode("utf-8", "replace"))
        return PlanOp(op="replace", items=items) if items else None


__all__ = ["ClineExtension"]
