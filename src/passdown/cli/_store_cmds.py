"""`passdown store | retrieve | find | delete`: thin wrappers over `passdown.store`.

Errors are raised as PassdownError; the main group turns them into `error: ...` and
an exit code. Nothing heavy (pydantic, database drivers) is imported until a command
runs, so `passdown --help` stays fast.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from passdown.cli._output import json_option

if TYPE_CHECKING:
    from passdown.cli._progress import Step
    from passdown.records import Record
    from passdown.store import Store

_STORE_HELP = "Store URL (default: $PASSDOWN_STORE, the config file, or SQLite in the data folder)."
_PROJECT_HELP = (
    "Project scope (default: this repository's: its name and an id of its git remote, "
    "else of its root folder's path)."
)
_DURATION = re.compile(r"(\d+)\s*([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def _project(project: str | None) -> str:
    from passdown.records import default_project

    return project or default_project(Path.cwd())


def _open(url: str | None) -> Store:
    from passdown.store import open_store

    return open_store(url)


def _dump(data: Any) -> str:
    """Records as stored (not redacted again: `retrieve` | `store` round-trips them)."""
    from passdown.cli._output import json_text

    return json_text(data, redacted=False)


def parse_since(text: str, now: datetime | None = None) -> str:
    """An ISO 8601 timestamp as given, or a duration ago (`90m`, `2h`, `7d`, `1w`) as ISO."""
    found = _DURATION.fullmatch(text.strip())
    if not found:
        return text
    amount, unit = int(found.group(1)), found.group(2)
    try:
        moment = (now or datetime.now(UTC)) - timedelta(**{_UNITS[unit]: amount})
    except OverflowError:  # "99999999999w": before year 1
        from passdown.errors import UsageError

        raise UsageError(f"since: {text.strip()!r} reaches back before year 1") from None
    return moment.isoformat()


# What `store` reads at most: several records of up to 8 MiB each (the store's limit).
STORE_INPUT_MAX_BYTES = 64 * 1024 * 1024


def _read_input(name: str) -> bytes:
    """The bytes of FILE (`-`: stdin). Only a regular file is opened (a FIFO would block
    the command, a device like /dev/zero would never end), and no more than
    STORE_INPUT_MAX_BYTES are read."""
    import sys

    from passdown._jsonl import NotRegularFile, open_regular
    from passdown.errors import RecordInvalid, UsageError

    limit = STORE_INPUT_MAX_BYTES
    if name == "-":
        data = sys.stdin.buffer.read(limit + 1)
    else:
        try:
            with open_regular(Path(name)) as handle:
                data = handle.read(limit + 1)
        except NotRegularFile:
            raise UsageError(
                f"cannot read {name}: not a regular file", hint="pass a JSON file, or - for stdin"
            ) from None
        except OSError as exc:
            raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise RecordInvalid(f"invalid record: {name}: larger than {limit:,} bytes")
    return data


@click.command("store")
@click.argument("file", metavar="FILE")
@click.option("--project", help="Project for inputs that carry no scope (handoff packages).")
@click.option(
    "--new-version", is_flag=True, help="Replace a stored record with the same id, keeping history."
)
@json_option('Print {"ids": [...]} as JSON.')
@click.option("--store", "store_url", metavar="URL", help=_STORE_HELP)
def store_command(
    file: str, project: str | None, new_version: bool, as_json: bool, store_url: str | None
) -> None:
    """Store a record (SGM record or handoff package JSON; `-` reads stdin).

    A JSON array stores several records at once: all of them or none. Prints the ids.
    """
    from passdown.errors import RecordConflict, RecordInvalid
    from passdown.records import parse_record

    try:
        data = json.loads(_read_input(file))
    except (ValueError, RecursionError) as exc:  # RecursionError: JSON nested too deep
        where = "<stdin>" if file == "-" else file
        raise RecordInvalid(f"invalid record: {where}: not JSON: {exc}") from None
    items = data if isinstance(data, list) else [data]
    records = [parse_record(item, project=_project(project)) for item in items]
    with _open(store_url) as store:
        try:
            ids = store.store_many(records, new_version=new_version)
        except RecordConflict as exc:  # the store's hint names the Python argument
            raise RecordConflict(
                exc.message, hint="rerun with --new-version to store it as a new version"
            ) from exc
    if as_json:
        click.echo(_dump({"ids": ids}))
        return
    from passdown._text import one_line

    for record_id in ids:
        click.echo(one_line(record_id))


@click.command("retrieve")
@click.argument("record_id", metavar="ID")
@click.option("--project", help=_PROJECT_HELP)
@click.option(
    "--version", "version", type=int, help="An earlier version (default: the current one)."
)
@json_option("Accepted for symmetry: the record is JSON anyway.")
@click.option("--store", "store_url", metavar="URL", help=_STORE_HELP)
def retrieve_command(
    record_id: str, project: str | None, version: int | None, as_json: bool, store_url: str | None
) -> None:
    """Print a stored record as JSON (errors too with --json, on stderr). ID is the
    record's id or a prefix of it, as --session takes a session id prefix."""
    from passdown.records import record_to_dict

    with _open(store_url) as store:
        scope = _project(project)
        record = store.retrieve(scope, _full_id(store, scope, record_id), version=version)
    click.echo(_dump(record_to_dict(record)))


def _full_id(store: Store, scope: Any, spec: str) -> str:
    """The id `spec` names: itself when a record has it, else the one record whose id
    starts with it (as `--session` takes an id prefix). A handoff's own status records
    (`<id>#published`) do not make its prefix ambiguous; several records do (exit 4)."""
    from passdown.errors import AmbiguousSession, RecordNotFound

    try:
        store.retrieve(scope, spec)
        return spec
    except RecordNotFound as missing:
        matches = _ids_starting_with(store, scope, spec)
        if "#" not in spec:
            matches = [i for i in matches if "#" not in i] or matches
        if not matches:
            raise missing from None
    if len(matches) > 1:
        from passdown._text import listed, one_line

        shown = listed([one_line(i) for i in matches])
        raise AmbiguousSession(
            f"record id prefix {spec!r} matches {len(matches)} records: {shown}",
            hint="give more of the id",
        )
    return matches[0]


def _ids_starting_with(store: Store, scope: Any, prefix: str) -> list[str]:
    """Every record id of the scope that starts with `prefix`: one pass over its pages."""
    found: list[str] = []
    cursor: str | None = None
    while True:
        page = store.query(scope, limit=1000, cursor=cursor)
        found.extend(r.id for r in page.records if r.id.startswith(prefix))
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


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
@json_option("Print the records, each handoff's status and the next cursor as JSON.")
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
    """Find records in a project, newest first; QUERY words must all appear.

    One row per record; a handoff's lifecycle status is a column, so the status
    records behind it are not listed (ask for them with --type status).
    """
    from passdown.cli._progress import counting, wanted

    scope = _project(project)
    search = _Search(
        scope=scope,
        type=type_,
        kind=kind,
        since=parse_since(since) if since else None,
        text=" ".join(query) if query else None,
    )
    # --json keeps the store's page as it is (status records included) for scripts
    fold = not as_json and type_ != "status" and kind not in ("status", "handoff")
    with _open(store_url) as store, counting(wanted(as_json=as_json), f"searching {scope}") as step:
        records, next_cursor = _collect(store, search, limit, cursor, fold=fold, step=step)
        statuses = {r.id: _status(store, r) for r in records if r.type == "handoff"}
    if as_json:
        from passdown.records import record_to_dict

        dumped = [record_to_dict(r) for r in records]
        click.echo(_dump({"records": dumped, "statuses": statuses, "next_cursor": next_cursor}))
        return
    if not records:
        click.echo(f"passdown: no records {_described(search)}", err=True)
        return
    for line in _table(records, statuses):
        click.echo(line)
    if next_cursor:
        click.echo(f"more: --cursor {next_cursor}", err=True)


@dataclass(frozen=True, slots=True)
class _Search:
    scope: str
    type: str | None
    kind: str | None
    since: str | None
    text: str | None


def _collect(
    store: Store, search: _Search, limit: int, cursor: str | None, *, fold: bool, step: Step
) -> tuple[list[Record], str | None]:
    """Up to `limit` records and the cursor after them. With `fold`, status records of a
    handoff are left out, and further pages fill the gap: each page asks for exactly the
    rows still missing, so every record fetched is used and the store's cursor stays exact."""
    found: list[Record] = []
    while True:
        page = store.query(
            search.scope,
            type=search.type,
            kind=search.kind,
            since=search.since,
            text=search.text,
            limit=limit - len(found),
            cursor=cursor,
        )
        step(len(page.records))
        found += [r for r in page.records if not (fold and _is_status_of_handoff(r))]
        cursor = page.next_cursor
        if not fold or cursor is None or len(found) >= limit:
            return found, cursor


def _is_status_of_handoff(record: Record) -> bool:
    return record.type == "status" and any(a.kind == "handoff" for a in record.annotations)


def _status(store: Store, record: Record) -> str:
    """The handoff's current lifecycle status (its status pointer is the truth). A
    handoff stored without the lifecycle (hooks, plain export) counts as published, as
    the MCP tools and the team server report it."""
    from passdown.coordinator._lifecycle import Lifecycle

    event = Lifecycle(store, record.scope).current(record.id)
    return event.status if event else "published"


def _described(search: _Search) -> str:
    from passdown._text import shown

    parts = [f"in project {shown(search.scope)!r}"]
    if search.type:
        parts.append(f"of type {search.type}")
    if search.kind:
        parts.append(f"with a {shown(search.kind)!r} annotation")
    if search.since:
        parts.append(f"since {shown(search.since)}")
    if search.text:
        parts.append(f"matching {shown(search.text)!r}")
    return " ".join(parts)


def _table(records: list[Record], statuses: dict[str, str]) -> list[str]:
    """Aligned columns: created (UTC, to the second), type, id, status, title; the title
    takes what the terminal width leaves and is cut on a word."""
    import shutil

    from passdown._text import one_line, shown

    # ids as they are (flattened, not redacted) so they can be passed to retrieve
    rows = [
        (_second(r.created_at), r.type, one_line(r.id), _status_cell(r, statuses), shown(r.title))
        for r in records
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    columns = shutil.get_terminal_size((120, 24)).columns
    room = max(24, columns - sum(widths) - 2 * len(widths))
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True))
        + "  "
        + cut(row[4], room)
        for row in rows
    ]


def _status_cell(record: Record, statuses: dict[str, str]) -> str:
    """A handoff's current status; for a status record, the status it recorded."""
    if record.id in statuses:
        return statuses[record.id]
    from passdown._text import one_line

    recorded = [a.value for a in record.annotations if a.kind == "status"]
    return one_line(recorded[0]) if record.type == "status" and recorded else "-"


def _second(created_at: str) -> str:
    from passdown.records import parse_timestamp

    moment = parse_timestamp(created_at).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def cut(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, cut after a whole word with an ellipsis
    (mid-word only when the first word alone is too long)."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space > 0:
        head = head[:space]
    return head.rstrip(" ,;:.-") + "…"


@click.command("delete")
@click.argument("record_id", metavar="ID")
@click.option("--project", help=_PROJECT_HELP)
@json_option('Print {"deleted": ID, "project": ...} as JSON.')
@click.option("--store", "store_url", metavar="URL", help=_STORE_HELP)
def delete_command(
    record_id: str, project: str | None, as_json: bool, store_url: str | None
) -> None:
    """Delete a record and all its versions."""
    scope = _project(project)
    with _open(store_url) as store:
        store.delete(scope, record_id)
    if as_json:
        click.echo(_dump({"deleted": record_id, "project": scope}))
        return
    from passdown._text import one_line

    click.echo(f"deleted {one_line(record_id)}")
