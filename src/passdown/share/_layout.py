"""The shared form of a handoff: its ref name, its files and their digest, and the
paths that fit any clone (see the package docstring for the layout)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

REF_ROOT = "refs/passdown"
INCOMING_ROOT = "refs/passdown-incoming"  # fetched refs, before they are checked
PRUNED_ROOT = "refs/passdown-pruned"  # this clone's record of what --prune took away
WORKSPACE_TOKEN = "{passdown-workspace}"  # the repository's root in what is shared
DETACHED = "detached"
NO_HEAD = "nohead"
DIGEST_FILE = "digest"
RECORD_FILE = "record.json"
MARKDOWN_FILE = "HANDOFF.md"
HANDOFF_FILE = "handoff.json"
STATUS_DIR = "status"
STATUSES = ("prepared", "published", "claimed", "completed", "rejected", "superseded")
STATUS_RANK = {s: i for i, s in enumerate(STATUSES[:3])} | {s: 3 for s in STATUSES[3:]}
MAX_FILE_BYTES = 16 * 1024 * 1024  # a shared file larger than this is refused unread

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*")
_STAMP = r"\d{8}T\d{6}\.\d{6}Z"
_REF = re.compile(
    rf"{REF_ROOT}/(?P<scope>[0-9a-f]{{12}})/(?P<branch>b-[0-9a-f]{{12}}|{DETACHED})/"
    rf"(?P<stamp>{_STAMP})_(?P<head>[0-9a-f]{{12}}|{NO_HEAD})_(?P<id>{_ID.pattern})"
)


@dataclass(frozen=True, slots=True, order=True)
class HandoffRef:
    """One handoff's ref, parsed: everything a pull needs to choose without fetching."""

    stamp: str  # created_at in UTC, `YYYYmmddTHHMMSS.ffffffZ`: sorts as time does
    id: str
    scope: str
    branch: str  # `b-<12 hex of the branch name>` or `detached`
    head: str  # the first 12 hex digits of the commit it was written at, or `nohead`

    @property
    def name(self) -> str:
        return f"{REF_ROOT}/{self.scope}/{self.branch}/{self.stamp}_{self.head}_{self.id}"


def scope_key(project: str) -> str:
    """The 12 hex digits that name a project scope in ref names: the scope's own id
    (`name~<12 hex>`), else a digest of the whole scope."""
    _, at, digest = project.rpartition("~")
    if at and re.fullmatch(r"[0-9a-f]{12}", digest):
        return digest
    return hashlib.sha256(project.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def branch_key(branch: str | None) -> str:
    if not branch:
        return DETACHED
    return "b-" + hashlib.sha256(branch.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def head_key(head: str | None) -> str:
    head = (head or "").lower()
    return head[:12] if re.fullmatch(r"[0-9a-f]{12,64}", head) else NO_HEAD


def stamp_of(created_at: str) -> str:
    from passdown.records import parse_timestamp

    return parse_timestamp(created_at).astimezone(UTC).strftime("%Y%m%dT%H%M%S.%fZ")


def valid_id(record_id: str) -> bool:
    """Whether a record id can be part of a ref name (a handoff id passdown writes can)."""
    return (
        len(record_id) <= 200
        and _ID.fullmatch(record_id) is not None
        and not record_id.endswith(".lock")
    )


def parse_ref(name: str) -> HandoffRef | None:
    match = _REF.fullmatch(name)
    if match is None or match["id"].endswith(".lock"):
        return None
    return HandoffRef(match["stamp"], match["id"], match["scope"], match["branch"], match["head"])


def newer(a: tuple[str, str], b: tuple[str, str] | None) -> bool:
    """Whether (created_at, id) `a` is newer than `b`: a later creation time, ties by id."""
    from passdown.records import timestamp_us

    if b is None:
        return True
    return (timestamp_us(a[0]), a[1]) > (timestamp_us(b[0]), b[1])


# -- files and digest ------------------------------------------------------------------


def digest_of(files: Mapping[str, bytes]) -> str:
    """`sha256:<hex>` over every file but the digest: one `<name> <sha256>` line each,
    sorted by name."""
    lines = "".join(
        f"{name} {hashlib.sha256(data).hexdigest()}\n"
        for name, data in sorted(files.items())
        if name != DIGEST_FILE
    )
    return "sha256:" + hashlib.sha256(lines.encode()).hexdigest()


def with_digest(files: dict[str, bytes]) -> dict[str, bytes]:
    return {**files, DIGEST_FILE: (digest_of(files) + "\n").encode()}


def json_bytes(data: Any) -> bytes:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


# -- paths ------------------------------------------------------------------------------

_PATH_CHARS = r"[^\s/\\\"'`<>|(){}\[\],;:*?]"
_POSIX_ABS = re.compile(rf"(?<![\w.~}}>:/\\-])/(?:{_PATH_CHARS}+/)+{_PATH_CHARS}*")
_WINDOWS_ABS = re.compile(
    rf"(?<![\w}}])(?:[A-Za-z]:|\\\\{_PATH_CHARS}+)[\\/](?:{_PATH_CHARS}+[\\/]?)*"
)
_FILE_URL = re.compile(rf"(?<=file://)(?:/?[A-Za-z]:)?/(?:{_PATH_CHARS}+/)*{_PATH_CHARS}*")
_TAIL = rf"((?:[\\/]{_PATH_CHARS}*)*)"


def _outside(match: re.Match[str]) -> str:
    """An absolute path outside the repository: only its last name stays."""
    parts = [p for p in re.split(r"[\\/]", match.group(0)) if p]
    return "…/" + parts[-1] if parts else "…"


def _spellings(path: str) -> list[str]:
    """The ways a folder may be written: as given, with either separator; longest first."""
    if not path or path in ("/", "\\"):
        return []
    trimmed = path.rstrip("/\\") or path
    forms = {trimmed, trimmed.replace("\\", "/"), trimmed.replace("/", "\\")}
    return sorted(forms, key=len, reverse=True)


def _root_pattern(roots: Iterable[str]) -> re.Pattern[str] | None:
    forms = sorted({f for r in roots for f in _spellings(r)}, key=len, reverse=True)
    if not forms:
        return None
    # a root counts only as a whole folder: not `/repo` inside `/repository`
    return re.compile("(?:" + "|".join(map(re.escape, forms)) + r")(?![\w.-])" + _TAIL)


def portable_text_fn(roots: Iterable[str], home: str | None) -> Callable[[str], str]:
    """What each string becomes before it leaves: a repository root (any spelling) is
    `WORKSPACE_TOKEN` with `/` separators after it; the home folder (and the way agents
    encode it in folder names, `-home-me-`) is `~`; any other absolute path keeps only
    its last name (`…/name`)."""
    root_re = _root_pattern(roots)
    # whole folders only: not `/root` inside `/rootfs`; the encoded form (`-home-me`)
    # is followed by `-` in the folder names agents make of it
    homes = (
        ["(?:" + "|".join(map(re.escape, _spellings(home))) + r")(?![\w.-])"]
        if home and _spellings(home)
        else []
    )
    encoded = re.sub(r"[^A-Za-z0-9]", "-", (home or "").rstrip("/\\"))
    homes += [re.escape(encoded) + "(?![A-Za-z0-9])"] if len(encoded) > 2 else []
    home_re = re.compile("|".join(homes)) if homes else None

    def convert(text: str) -> str:
        if root_re is not None:
            text = root_re.sub(lambda m: WORKSPACE_TOKEN + m.group(1).replace("\\", "/"), text)
        if home_re is not None:
            text = home_re.sub("~", text)
        text = _FILE_URL.sub(_outside, text)
        text = _WINDOWS_ABS.sub(_outside, text)
        return _POSIX_ABS.sub(_outside, text)

    return convert


def local_text_fn(root: Path, foreign_roots: Iterable[str]) -> Callable[[str], str]:
    """What each pulled string becomes: `WORKSPACE_TOKEN` (and any absolute root the
    writer's record still names, from any OS) is this clone's root, with this system's
    separator after it."""
    here = str(root)
    sep = os.sep
    token_re = re.compile(re.escape(WORKSPACE_TOKEN) + _TAIL)
    foreign_re = _root_pattern(r for r in foreign_roots if r and r != here)

    def place(match: re.Match[str]) -> str:
        tail = match.group(1)
        return here + (tail.replace("\\", sep).replace("/", sep) if tail else "")

    def convert(text: str) -> str:
        text = token_re.sub(place, text)
        return foreign_re.sub(place, text) if foreign_re is not None else text

    return convert


def map_strings(data: Any, convert: Callable[[str], str]) -> Any:
    """A copy of JSON data with `convert` applied to every string, keys included."""
    if isinstance(data, str):
        return convert(data)
    if isinstance(data, dict):
        return {convert(k): map_strings(v, convert) for k, v in data.items()}
    if isinstance(data, list):
        return [map_strings(v, convert) for v in data]
    return data


def is_absolute_anywhere(path: str) -> bool:
    """An absolute path on POSIX or Windows (`/x`, `C:\\x`, `C:/x`, `\\\\server\\x`)."""
    return bool(re.match(r"(?:/|[A-Za-z]:[\\/]|\\\\)", path))
