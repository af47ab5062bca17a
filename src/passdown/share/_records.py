"""A stored handoff and its status records, as the files that are shared, and back.

Leaving (`shared_files`): paths made portable (`_layout.portable_text_fn`: the
repository's root becomes a token, the home folder `~`, any other absolute path its last
name; the session file's path only its name), then every string redacted again, then a
sealed package sealed again over what is shared, then the digest.

Arriving (`read_shared`): the names of the files, the digest, the record's schema, its
scope and that the ref's name says what the record says are checked; any failure
refuses the whole handoff. Then the paths are placed in this clone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from passdown.errors import PassdownError
from passdown.records import Record, record_to_dict, validate_record
from passdown.share._layout import (
    DIGEST_FILE,
    HANDOFF_FILE,
    MARKDOWN_FILE,
    RECORD_FILE,
    STATUS_DIR,
    STATUSES,
    HandoffRef,
    branch_key,
    digest_of,
    head_key,
    is_absolute_anywhere,
    json_bytes,
    local_text_fn,
    map_strings,
    portable_text_fn,
    scope_key,
    stamp_of,
    valid_id,
    with_digest,
)

EXTRA_HANDOFF = "passdown_handoff"  # _handoff_record.EXTRA_FIELD
EXTRA_PACKAGE = "package"


class Refused(Exception):
    """A shared handoff that is not imported, and why."""


@dataclass(frozen=True, slots=True)
class Shared:
    ref: HandoffRef
    files: dict[str, bytes]
    source: str = ""  # `source_key` of what it was made from


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _where(data: dict[str, Any]) -> tuple[str | None, str | None]:
    """(branch, head) the handoff was written at: its git snapshot, else the package's
    fingerprint."""
    snap = _dig(data, EXTRA_HANDOFF, "workspace")
    if isinstance(snap, dict) and snap.get("is_git"):
        return snap.get("branch"), snap.get("head")
    print_ = _dig(data, EXTRA_PACKAGE, "fingerprint")
    if isinstance(print_, dict):
        return print_.get("branch"), print_.get("head")
    return None, None


def _writer_roots(data: dict[str, Any]) -> list[str]:
    found = [_dig(data, EXTRA_PACKAGE, "workspace"), _dig(data, EXTRA_HANDOFF, "workspace", "path")]
    return [r for r in found if isinstance(r, str) and is_absolute_anywhere(r)]


def _resealed(record: Record, project: str) -> Record:
    """The record with its package sealed again over its content as it is now (a path
    placed, a secret redacted): a sealed package that reads as tampered would be refused
    by `verify`. A record that holds no sealed package is returned as it is."""
    from passdown._handoff_record import package_from_record, package_to_record

    if not isinstance((record.model_extra or {}).get(EXTRA_PACKAGE), dict):
        return record
    try:
        package = package_from_record(record)
    except PassdownError:
        return record
    if package.integrity is None:
        return record
    return package_to_record(package.sealed(), project=project)


def _converted(data: dict[str, Any], convert: Callable[[str], str], redact: bool) -> Record:
    out = map_strings(data, convert)
    if redact:
        from passdown._redact import Redactor

        out = Redactor().redact_data(out)
    return validate_record(out)


def _name_only(data: dict[str, Any]) -> dict[str, Any]:
    """The writer's session file and its sub-agents' files by name only: they live in
    the writer's home folder and mean nothing on another machine."""
    handoff = data.get(EXTRA_HANDOFF)
    if not isinstance(handoff, dict):
        return data
    handoff = json.loads(json.dumps(handoff))
    source = handoff.get("source")
    if isinstance(source, dict) and isinstance(source.get("transcript_path"), str):
        source["transcript_path"] = _last_name(source["transcript_path"])
    for sub in _dig(handoff, "state", "subagents") or []:
        if isinstance(sub, dict) and isinstance(sub.get("path"), str):
            sub["path"] = _last_name(sub["path"])
    return {**data, EXTRA_HANDOFF: handoff}


def _last_name(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rpartition("/")[2]


def source_key(record: Record, statuses: list[Record], workspace: Path, home: str | None) -> str:
    """What a handoff's shared files are made from, as a digest: the stored record and
    its status records as they are, the places paths are made relative to, and this
    passdown's version (its rules). A push that finds it in the subject of the handoff's
    local commit skips making the files again."""
    import hashlib

    from passdown import __version__
    from passdown.records import canonical_json

    parts = [__version__, str(workspace), home or "", canonical_json(record)]
    parts += sorted(canonical_json(s) for s in statuses)
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()[:32]


def shared_files(
    record: Record, statuses: list[Record], workspace: Path, project: str, home: str | None
) -> Shared:
    """The files a handoff is shared as, and its ref; Refused when it cannot be shared."""
    if not valid_id(record.id):
        raise Refused(f"its id {record.id!r} cannot be part of a git ref name")
    data = _name_only(record_to_dict(record))
    roots = [str(workspace), str(workspace.resolve()), *_writer_roots(data)]
    convert = portable_text_fn(roots, home)
    try:
        clean = _converted(data, convert, redact=True)
        if clean.id != record.id or clean.scope.project != project:
            raise Refused("its id or scope holds what the redaction takes out")
        clean = _resealed(clean, project)
        branch, head = _where(record_to_dict(clean))
        ref = HandoffRef(
            stamp_of(clean.created_at), clean.id, scope_key(project), branch_key(branch),
            head_key(head),
        )  # fmt: skip
        files = {RECORD_FILE: json_bytes(record_to_dict(clean))}
        if clean.content:
            files[MARKDOWN_FILE] = clean.content.encode("utf-8", "surrogatepass")
        handoff = (clean.model_extra or {}).get(EXTRA_HANDOFF)
        if isinstance(handoff, dict):
            text = json.dumps(handoff, indent=2, ensure_ascii=False) + "\n"
            files[HANDOFF_FILE] = text.encode("utf-8", "surrogatepass")
        for status in statuses:
            name = status.id.rpartition("#")[2]
            shared = _converted(_name_only(record_to_dict(status)), convert, redact=True)
            if name in STATUSES and shared.id == status.id:
                files[f"{STATUS_DIR}/{name}.json"] = json_bytes(record_to_dict(shared))
    except PassdownError as exc:
        raise Refused(exc.message) from None
    return Shared(ref, with_digest(files), source_key(record, statuses, workspace, home))


@dataclass(frozen=True, slots=True)
class Arrived:
    record: Record  # placed in this clone
    statuses: list[Record]


def read_shared(files: dict[str, bytes], ref: HandoffRef, project: str, workspace: Path) -> Arrived:
    """The handoff a fetched commit holds, checked and placed in this clone; Refused."""
    allowed = {RECORD_FILE, MARKDOWN_FILE, HANDOFF_FILE, DIGEST_FILE}
    allowed |= {f"{STATUS_DIR}/{s}.json" for s in STATUSES}
    strangers = sorted(set(files) - allowed)
    if strangers:
        raise Refused(f"it holds files a handoff does not: {', '.join(strangers[:5])}")
    if RECORD_FILE not in files or DIGEST_FILE not in files:
        raise Refused(f"it has no {RECORD_FILE} or no {DIGEST_FILE}")
    if files[DIGEST_FILE].decode("utf-8", "replace").strip() != digest_of(files):
        raise Refused("its digest does not match its files (changed after it was pushed)")
    record = _parse(files[RECORD_FILE], RECORD_FILE)
    if record.type != "handoff":
        raise Refused(f"{RECORD_FILE} is a {record.type} record, not a handoff")
    if record.scope.project != project:
        raise Refused(f"it belongs to another project ({record.scope.project!r}, not {project!r})")
    data = record_to_dict(record)
    branch, head = _where(data)
    try:
        named = (stamp_of(record.created_at), record.id, branch_key(branch), head_key(head))
    except ValueError as exc:
        raise Refused(f"{RECORD_FILE}: {exc}") from None
    if named != (ref.stamp, ref.id, ref.branch, ref.head) or ref.scope != scope_key(project):
        raise Refused("its ref's name does not say what its record says (time, id, branch, commit)")
    if MARKDOWN_FILE in files and files[MARKDOWN_FILE] != record.content.encode(
        "utf-8", "surrogatepass"
    ):
        raise Refused(f"{MARKDOWN_FILE} differs from the record's content")
    if HANDOFF_FILE in files and _json(files[HANDOFF_FILE]) != data.get(EXTRA_HANDOFF):
        raise Refused(f"{HANDOFF_FILE} differs from the record's handoff")
    statuses = []
    for name in sorted(n for n in files if n.startswith(STATUS_DIR + "/")):
        status = _parse(files[name], name)
        expected = f"{record.id}#{name.removeprefix(STATUS_DIR + '/').removesuffix('.json')}"
        if status.type != "status" or status.id != expected or status.scope != record.scope:
            raise Refused(f"{name} is not this handoff's status record")
        statuses.append(status)
    convert = local_text_fn(workspace, _writer_roots(data))
    try:
        placed = _resealed(_converted(data, convert, redact=False), project)
        placed_statuses = [_converted(record_to_dict(s), convert, redact=False) for s in statuses]
    except PassdownError as exc:
        raise Refused(exc.message) from None
    return Arrived(placed, placed_statuses)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def _parse(raw: bytes, name: str) -> Record:
    data = _json(raw)
    if not isinstance(data, dict):
        raise Refused(f"{name} is not a JSON object")
    try:
        return validate_record(data)
    except PassdownError as exc:
        raise Refused(f"{name} fails the record schema: {exc.message}") from None
