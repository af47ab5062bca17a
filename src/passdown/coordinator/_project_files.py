"""The project's own progress files, in the style of long-running agent harnesses.

- `feature_list.json`: a list of features (or `{"features": [...]}`), each with an id
  (`id`, `name` or, failing those, its description), a `description` and `passes`.
  Passing features are the completed ones; the current one is the first marked in
  progress, else the first failing one.
- `claude-progress.txt` or `PROGRESS.md`: a free-form log whose latest "Blockers" and
  "Next steps" sections (or `Blocker:` / `Next:` lines) give blockers and next steps.

Nothing here raises on a malformed file: the problem is reported in `error` and the
coordinator's checks turn it into a structured result.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec

FEATURE_LIST = "feature_list.json"
PROGRESS_FILES = ("claude-progress.txt", "PROGRESS.md")
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_ITEMS = 20

_IN_PROGRESS = {"in_progress", "in-progress", "in progress", "wip", "current", "started"}
_DONE = {"done", "passing", "passed", "completed", "complete"}


class Feature(msgspec.Struct):
    id: str
    description: str = ""
    passes: bool = False
    in_progress: bool = False
    note: str | None = None


class FeatureList(msgspec.Struct):
    path: Path
    features: list[Feature] = msgspec.field(default_factory=list)
    error: str | None = None

    @property
    def completed(self) -> list[str]:
        return [f.id for f in self.features if f.passes]

    @property
    def current(self) -> Feature | None:
        pending = [f for f in self.features if not f.passes]
        return next((f for f in pending if f.in_progress), pending[0] if pending else None)

    def by_id(self) -> dict[str, Feature]:
        return {f.id: f for f in self.features}


class ProgressNotes(msgspec.Struct):
    path: Path
    blockers: list[str] = msgspec.field(default_factory=list)
    next_steps: list[str] = msgspec.field(default_factory=list)
    text: str = ""


def _read_text(path: Path) -> str:
    with open(path, "rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
    return data.decode("utf-8", "replace")


def read_feature_list(workspace: Path) -> FeatureList | None:
    path = workspace / FEATURE_LIST
    if not path.is_file():
        return None
    try:
        raw = json.loads(_read_text(path))
        return FeatureList(path=path, features=_features(raw))
    except (OSError, ValueError) as exc:
        return FeatureList(path=path, error=f"{FEATURE_LIST}: {exc}")


def _features(raw: Any) -> list[Feature]:
    if isinstance(raw, dict) and isinstance(raw.get("features"), list):
        raw = raw["features"]
    if isinstance(raw, dict):  # {"auth-001": {...}, ...}
        raw = [
            {"id": k, **v} if isinstance(v, dict) else {"id": k, "passes": v}
            for k, v in raw.items()
        ]
    if not isinstance(raw, list):
        raise ValueError('expected a list of features (or {"features": [...]})')
    features = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise ValueError(f"feature {i}: expected an object, got {type(entry).__name__}")
        features.append(_feature(entry, i))
    return features


def _feature(entry: dict[str, Any], index: int) -> Feature:
    description = str(entry.get("description") or entry.get("title") or "")
    ident = entry.get("id") or entry.get("name") or entry.get("key") or description
    status = str(entry.get("status") or "").strip().lower()
    passes = entry.get("passes", entry.get("passing"))
    if passes is not None and not isinstance(passes, bool):
        raise ValueError(f"feature {index}: passes must be true or false, got {passes!r}")
    note = entry.get("note") or entry.get("notes")
    return Feature(
        id=str(ident or f"feature-{index + 1}"),
        description=description,
        passes=bool(passes) if passes is not None else status in _DONE,
        in_progress=status in _IN_PROGRESS or entry.get("in_progress") is True,
        note=str(note) if note else None,
    )


# -- progress log ------------------------------------------------------------------------

_HEADING = re.compile(
    r"^\s*(?:#+\s*|\*\*)?(?P<title>[A-Za-z][A-Za-z '/-]{1,40}?)\s*(?:\*\*)?\s*:?\s*(?:\*\*)?\s*$"
)
_INLINE = re.compile(
    r"^\s*(?:[-*•]\s*)?(?:\*\*)?(?P<label>blockers?|blocked(?: on| by)?|next(?: steps?)?|todo)(?:\*\*)?\s*:\s*(?:\*\*)?\s*(?P<value>(?!\*+\s*$)\S.*)$",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|\[[ xX~]\])\s+(?:\[[ xX~]\]\s+)?(?P<item>.*\S)\s*$")
_NONE = re.compile(r"^\(?(?:none|n/?a|nothing|-)\.?\)?$", re.IGNORECASE)


def _kind(label: str) -> str | None:
    low = label.strip().lower()
    if low.startswith("block"):
        return "blockers"
    if low.startswith(("next", "todo", "to do", "remaining")):
        return "next_steps"
    return None


def read_progress(workspace: Path) -> ProgressNotes | None:
    for name in PROGRESS_FILES:
        path = workspace / name
        if path.is_file():
            try:
                text = _read_text(path)
            except (OSError, ValueError):
                return ProgressNotes(path=path)
            return parse_progress(text, path)
    return None


def parse_progress(text: str, path: Path) -> ProgressNotes:
    """The latest section of each kind wins: progress logs grow by appending."""
    sections: dict[str, list[str]] = {"blockers": [], "next_steps": []}
    current: str | None = None
    collected: list[str] = []

    def close() -> None:
        if current is not None:
            sections[current] = collected.copy()

    for line in text.splitlines():
        inline = _INLINE.match(line)
        if inline and _kind(inline["label"]):
            close()
            current, collected = _kind(inline["label"]), []
            if not _NONE.match(inline["value"].strip()):
                collected.append(inline["value"].strip())
            continue
        bullet = _BULLET.match(line)
        if bullet and current is not None:
            if not _NONE.match(bullet["item"]):
                collected.append(bullet["item"])
            continue
        heading = _HEADING.match(line)
        if heading and line.strip():
            close()
            current, collected = _kind(heading["title"]), []
        elif not line.strip() and collected:
            close()
            current, collected = None, []
    close()
    return ProgressNotes(
        path=path,
        blockers=sections["blockers"][:MAX_ITEMS],
        next_steps=sections["next_steps"][:MAX_ITEMS],
        text=text,
    )
