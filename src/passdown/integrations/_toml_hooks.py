"""What the agents that keep hooks as TOML arrays of tables share (Kimi's and Vibe's
`[[hooks]]`, gptme's `[[hooks.scripts]]`): parsing with a clear error, finding
passdown's own entries by the `hook AGENT` in their command, the install and uninstall
edits, and listing them for `doctor`. Comments and layout survive through tomlkit.

An agent describes where its array is (`HookArray`: the top-level `hooks`, or a subclass
for another place) and which tables passdown adds; `edits` makes the two transforms of
its install plan from that. tomlkit is imported where a file is read or edited: a hook
event loads these modules and edits nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from passdown.errors import UsageError
from passdown.integrations._base import Registered, program_of, read_config
from passdown.integrations._files import Transform

if TYPE_CHECKING:
    import tomlkit


def is_ours(entry: Any, agent: str) -> bool:
    """An entry passdown wrote: its command runs `passdown hook AGENT`."""
    return hasattr(entry, "get") and f" hook {agent} " in f"{entry.get('command', '')} "


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


class HookArray:
    """The top-level `[[hooks]]` array of a TOML file named `file_name` (in messages)."""

    def __init__(self, file_name: str) -> None:
        self.file_name = file_name

    def parse(self, text: str | None) -> tomlkit.TOMLDocument:
        import tomlkit
        from tomlkit.exceptions import TOMLKitError

        try:
            return tomlkit.parse(text or "")
        except TOMLKitError as exc:
            raise UsageError(
                f"cannot change a {self.file_name} that is not valid TOML: {exc}"
            ) from exc

    def array(self, doc: tomlkit.TOMLDocument) -> Any:
        """The array, created when absent; `UsageError` when something else is there."""
        import tomlkit

        hooks = doc.get("hooks")
        if hooks is None:
            hooks = tomlkit.aot()
            doc["hooks"] = hooks
        if not isinstance(hooks, list):
            raise UsageError(f"cannot add hooks: `hooks` in {self.file_name} is not a list")
        return hooks

    def new_table(self, array: Any) -> Any:
        """An empty table of the kind `array` holds."""
        import tomlkit

        return tomlkit.table()

    def entries(self, doc: tomlkit.TOMLDocument) -> list[Any]:
        """The array's tables; none where the file has no such array."""
        return tables(doc.get("hooks"))

    def remove_ours(self, doc: tomlkit.TOMLDocument, agent: str) -> bool:
        """Drop passdown's entries (and the array, when they were all it held); True
        when there were any."""
        hooks = doc.get("hooks")
        dropped = drop_ours(hooks, agent)
        if dropped and isinstance(hooks, list) and not hooks:
            del doc["hooks"]
        return dropped

    def registered(self, path: Path, agent: str, event_key: str) -> list[Registered]:
        """passdown's hook commands in the file, as `doctor` lists them; an unreadable or
        invalid file has none."""
        import tomlkit
        from tomlkit.exceptions import TOMLKitError

        try:
            doc = tomlkit.parse(read_config(path) or "")
        except TOMLKitError:
            return []
        return [
            Registered(
                path, f"hook {entry.get(event_key)}", program_of(str(entry.get("command", "")))
            )
            for entry in self.entries(doc)
            if is_ours(entry, agent)
        ]


def edits(
    place: HookArray, agent: str, wanted: list[dict[str, Any]]
) -> tuple[Transform, Transform]:
    """(install, uninstall) of passdown's `wanted` tables in `place`. A file that holds
    exactly these already is left byte for byte; otherwise passdown's old entries go (an
    install with other options replaces them) and the new ones are appended."""
    import tomlkit

    def install(text: str | None) -> str | None:
        doc = place.parse(text)
        ours = [dict(entry) for entry in place.entries(doc) if is_ours(entry, agent)]
        if ours == wanted:
            return text
        place.remove_ours(doc, agent)
        array = place.array(doc)
        for values in wanted:
            table = place.new_table(array)
            table.update(values)
            array.append(table)
        new = tomlkit.dumps(doc)
        return text if new == text else new

    def uninstall(text: str | None) -> str | None:
        if text is None:
            return None
        doc = place.parse(text)
        return tomlkit.dumps(doc) if place.remove_ours(doc, agent) else text

    return install, uninstall
