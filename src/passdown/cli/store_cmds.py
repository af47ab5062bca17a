"""`passdown store | retrieve | find | delete`: thin wrappers over `passdown.store`.

Errors are raised as PassdownError; the main group turns them into `error: ...` and
an exit code. Nothing heavy (pydantic, database drivers) is imported until a command
runs, so `passdown --help` stays fast.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from passdown.records import Record
    from passdown.store import Store

_STORE_HELP = "Store URL (default: $PASSDOWN_STORE, the config file, or SQLite in the data folder)."
_PROJECT_HELP = "Project scope (default: the name of the git root, or current, folder)."
_DURATION = re.compile(r"(\d+)\s*([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def _project(project: str | None) -> str:
    from passdown.records import default_project

    return project or default_project(Path.cwd())


def _open(url: str | None) -> Store:
    from passdown.store import open_store

    return open_store(url)


def _dump(data: Any) -> str:
    from passdown.text import json_safe

    return json_safe(json.dumps(data, indent=2, ensure_ascii=False))


def parse_since(text: str, now: datetime | None = None) -> str:
    """An ISO 8601 timestamp as given, or a duration ago (`90m`, `2h`, `7d`, `1w`) as ISO."""
    found = _DURATION.fullmatch(text.strip())
    if not found:
        return text
    amount, unit = int(found.group(1)), found.group(2)
    moment = (now or datetime.now(timezone.utc)) - timedelta(**{_UNITS[unit]: amount})
    return moment.isoformat()


@click.command("store")
@click.argument("file", type=click.File("rb"))
@click.option("--project", help="Project for inputs that carry no scope (handoff packages).")
@click.option(
    "--new-version", is_flag=True, help="Replace a stored record with the same id, keeping history."
)
@click.option("--store", "store_url", metavar="URL", help=_STORE_HELP)
def store_command(
    file: IO[bytes], project: str | None, new_version: bool, store_url: str | None
) -> None:
    """Store a record (SGM record or handoff package JSON; `-` reads stdin).

    A JSON array stores several records at once: all of them or none. Prints the ids.
    """
    from passdown.errors import RecordInvalid
    from passdown.records import parse_record

    try:
        data = json.loads(file.read())
    except ValueError as exc:
        raise RecordInvalid(f"invalid record: {file.name}: not JSON: {exc}") from exc
    items = data if isinstance(data, list) else [data]
    records = [parse_record(item, project=_project(project)) for item in items]
    with _open(store_url) as store:
        from passdown.text import one_line

        for record_id in store.store_many(records, new_version=new_version):
            click.echo(one_line(record_id))


@click.command("retrieve")
@click.argument("record_id", metavar="ID")
@click.option("--project", help=_PROJECT_HELP)
@click.option(
    "--version", "version", type=int, help="An earlier version (default: the current one)."
)
@click.option("--store", "store_url", metavar="URL", help=_STORE_HELP)
def retrieve_command(
    record_id: str, project: str | None, version: int | None, store_url: str | None
) -> None:
    """Print a stored record as JSON."""
    from passdown.records import record_to_dict

    with _open(store_url) as store:
        record = store.retrieve(_project(project), record_id, version=version)
    click.echo(_dump(record_to_dict(record)))


@click.command("find")
@click.argument("query", nargs=-1)
@click.option(
    "--type", "type_", type=click.Choice(["handoff", "status", "task"]), help="Record type."
)
@click.option("--project", help=_PROJECT_HELP)
@click.option("--kind", help="Only records with an annotation of this kind (e.g. blockers).")
@click.option("--since", help="Created at or after: ISO 8601, or a duration ago (2h, 7d).")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.option("--cursor", help="Continue after a previous page (printed with --json or on stderr).")
@click.option("--json", "as_json", is_flag=True, help="Print records and the next cursor as JSON.")
@click.option("--store", "store_url", metavar="URL", help=_STORE_HELP)
def find_command(
    query: tuple[str, ...],
    type_: str | None,
    project: str | None,
    kind: str | None,
    since: str | None,
    limit: int,
    cursor: str | None,
    as_json: bool,
    store_url: str | None,
) -> None:
    """Find records in a project, newest first; QUERY words must all appear."""
    with _open(store_url) as store:
        page = store.query(
            _project(project),
            type=type_,
            kind=kind,
            since=parse_since(since) if since else None,
            text=" ".join(query) if query else None,
            limit=limit,
            cursor=cursor,
        )
    if as_json:
        from passdown.records import record_to_dict

        records = [record_to_dict(r) for r in page.records]
        click.echo(_dump({"records": records, "next_cursor": page.next_cursor}))
        return
    for record in page.records:
        click.echo(_line(record))
    if page.next_cursor:
        click.echo(f"more: --cursor {page.next_cursor}", err=True)


def _line(record: Record) -> str:
    from passdown.text import one_line

    return f"{record.created_at}  {record.type:<7}  {one_line(record.id)}  {one_line(record.title)}"


@click.command("delete")
@click.argument("record_id", metavar="ID")
@click.option("--project", help=_PROJECT_HELP)
@click.option("--store", "store_url", metavar="URL", help=_STORE_HELP)
def delete_command(record_id: str, project: str | None, store_url: str | None) -> None:
    """Delete a record and all its versions."""
    with _open(store_url) as store:
        store.delete(_project(project), record_id)
    from passdown.text import one_line

    click.echo(f"deleted {one_line(record_id)}")
