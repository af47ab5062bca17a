"""What the agents that keep hooks as TOML arrays of tables share (Kimi's and Vibe's
`[[hooks]]`, gptme's `[[hooks.scripts]]`): parsing with a clear error, finding
passdown's own entries by the `hook AGENT` in their command, dropping them, and listing
them for `doctor`. Comments and layout survive through tomlkit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from passdown.errors import UsageError
from passdown.integrations._base import Registered, program_of, read_config


def parse(text: str | None, file_name: str) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text or "")
    except TOMLKitError as exc:
        raise UsageError(f"cannot change a {file_name} that is not valid TOML: {exc}") from exc


def is_ours(entry: Any, agent: str) -> bool:
    """An entry passdown wrote: its command runs `passdown hook AGENT`."""
    return hasattr(entry, "get") and f" hook {agent}" in f"{entry.get('command', '')} "


def tables(items: Any) -> list[Any]:
    """The tables of an array (other values are the user's mistakes, left alone)."""
    return [item for item in items if hasattr(item, "get")] if isinstance(items, list) else []


def drop_ours(items: Any, agent: str) -> bool:
    """Delete passdown's entries from an array in place; True when there were any."""
    if not isinstance(items, list):
        return False
    ours = [n for n, entry in enumerate(items) if is_ours(entry, agent)]
    for n in reversed(ours):
        del items[n]
    return bool(ours)


def registered(
    path: Path, agent: str, entries_of: Callable[[tomlkit.TOMLDocument], list[Any]], event_key: str
) -> list[Registered]:
    """passdown's hook commands in the file, as `doctor` lists them; an unreadable or
    invalid file has none."""
    try:
        doc = tomlkit.parse(read_config(path) or "")
    except TOMLKitError:
        return []
    return [
        Registered(path, f"hook {entry.get(event_key)}", program_of(str(entry.get("command", ""))))
        for entry in entries_of(doc)
        if is_ours(entry, agent)
    ]
