"""What GitHub Copilot CLI keeps beside a session's event log (`passdown.agents.copilot`
reads the log): `workspace.yaml`, whose flat `key: value` lines name the session's id,
cwd and times, and `session.db`, whose `todos` table (with `todo_deps`) is the plan the
agent keeps through its `sql` tool, read as the session's final plan."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._common import DECODE_ERRORS, is_file, open_sqlite_readonly, read_head
from passdown.transcript import Diagnostics, PlanItem, PlanOp

_YAML_LINE = lazy_compile(r"^(\w+):\s*(.*)$")
_PLAN_STATUS = {
    "done": "completed",
    "completed": "completed",
    "in_progress": "in_progress",
    "blocked": "blocked",
    "pending": "pending",
}
_ANY = LazyDecoder()


def workspace_yaml(path: Path) -> dict[str, str]:
    """The flat `key: value` lines of workspace.yaml (no YAML library needed for them)."""
    found: dict[str, str] = {}
    for raw in read_head(path, 64 * 1024).decode("utf-8", "replace").splitlines():
        match = _YAML_LINE.match(raw)
        if match and match.group(1) in ("id", "cwd", "created_at", "updated_at"):
            value = _yaml_scalar(match.group(2).strip())
            if value:
                found[match.group(1)] = value
    return found


def _yaml_scalar(value: str) -> str | None:
    if value[:1] in ("|", ">", "&", "*", "!"):
        return None  # block scalars, anchors, tags: not the plain values we need
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            decoded = _ANY.decode(value)
        except DECODE_ERRORS:
            return value[1:-1]
        return decoded if isinstance(decoded, str) else None
    return value.split(" #", 1)[0].strip() or None


def todo_plan(db: Path, diag: Diagnostics) -> PlanOp | None:
    """The final plan: the `todos` table of the session's own database (read-only)."""
    if not is_file(db):
        return None
    try:  # never creates a -shm/-wal file in Copilot's folder
        conn, warning = open_sqlite_readonly(db)
    except sqlite3.Error as exc:
        diag.warnings.append(f"could not open the session's todo database: {exc}")
        return None
    if warning:
        diag.warnings.append(warning)
    try:
        rows = conn.execute(
            "SELECT id, title, description, status FROM todos ORDER BY created_at, rowid"
        ).fetchall()
        deps: dict[str, list[str]] = {}
        for todo_id, depends_on in conn.execute("SELECT todo_id, depends_on FROM todo_deps"):
            deps.setdefault(str(todo_id), []).append(str(depends_on))
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            diag.warnings.append(f"could not read the session's todos: {exc}")
        return None
    except sqlite3.Error as exc:
        diag.warnings.append(f"could not read the session's todos: {exc}")
        return None
    finally:
        conn.close()
    if not rows:
        return None
    items = tuple(
        PlanItem(
            id=str(todo_id),
            subject=str(title or todo_id),
            status=_PLAN_STATUS.get(str(status), "pending"),  # type: ignore[arg-type]
            description=str(description) if description else None,
            blocked_by=tuple(deps.get(str(todo_id), ())),
        )
        for todo_id, title, description, status in rows
    )
    return PlanOp(op="replace", items=items)
