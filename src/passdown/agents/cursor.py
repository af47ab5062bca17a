"""Cursor's agent CLI (`cursor-agent`): transcripts under
`~/.cursor/projects/<slug>/agent-transcripts/<id>/<id>.jsonl` (older builds: `<id>.jsonl`
or `<id>.txt` directly in `agent-transcripts/`).

The slug is the workspace path without its leading "/" and with every "/" (and other
non-alphanumeric character) turned into "-". Records are `{"role": "user"|"assistant",
"message": {"content": [blocks]}}`; user text is wrapped in `<user_query>` tags; blocks
are `text` and, in assistant records, `tool_use {name, input}`. The records carry no
cwd, no timestamps and no tool results, so files touched are listed as unconfirmed and
the workspace is matched by the slug. Verified against fixtures built from the
documented format only (no real cursor-agent runs here).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path, PureWindowsPath

import msgspec

from passdown import _platform
from passdown._jsonl import LineReader
from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._common import (
    Todo,
    decode_line,
    env_path,
    file_mtime,
    is_dir,
    is_file,
    list_folder,
    todo_items,
)
from passdown.agents.base import Agent, LaunchSpec
from passdown.transcript import (
    Diagnostics,
    Event,
    Message,
    PlanOp,
    SessionRef,
    ToolCall,
    Transcript,
)

_QUERY = lazy_compile(r"</?user_query>")
_EDIT_HINTS = ("write", "edit", "replace", "patch", "create", "delete")
_SHELL_HINTS = ("shell", "terminal", "bash", "command")
_PLAN_HINTS = ("todo", "plan")


class _Input(msgspec.Struct):
    """The tool arguments passdown reads, typed: a wrong kind skips the record."""

    path: str | None = None
    file_path: str | None = None
    target_file: str | None = None
    filePath: str | None = None
    command: str | None = None
    cmd: str | None = None
    todos: list[Todo] | None = None


class _Block(msgspec.Struct):
    type: str = ""
    text: str | None = None
    name: str | None = None
    input: _Input | None = None


class _Inner(msgspec.Struct):
    content: str | list[_Block] | None = None


class _Record(msgspec.Struct):
    role: str = ""
    message: _Inner | None = None
    content: str | list[_Block] | None = None


_RECORD = LazyDecoder(_Record)


def workspace_slugs(workspace: Path | str) -> set[str]:
    """The folder names Cursor may use for a workspace: "/" turned into "-", and (seen
    in some builds) every non-alphanumeric character turned into "-". A Windows path is
    taken with `/` separators (`C:/Users/dev` gives `C:-Users-dev` and `C--Users-dev`:
    not confirmed on Windows), a macOS one in both its `/private` spellings."""
    slugs = set()
    for spelling in _platform.path_spellings(str(workspace)):
        if _platform.is_windows_path(spelling):
            spelling = PureWindowsPath(spelling).as_posix()
        bare = spelling.lstrip("/")
        slugs |= {bare.replace("/", "-"), re.sub(r"[^A-Za-z0-9]", "-", bare)}
    return slugs


def cwd_of_slug(slug: str) -> str:
    """The cwd a project folder's name stands for, when no workspace says better: the
    name's "-" read back as separators (lossy: a "-" in a folder name reads as one).
    A drive-letter name (`C--Users-dev`) on Windows gives `C:\\Users\\dev`."""
    drive = re.match(r"([A-Za-z])[-:]-?(.*)", slug)
    if _platform.is_windows() and drive:
        return f"{drive.group(1)}:\\" + drive.group(2).replace("-", "\\")
    return "/" + slug.replace("-", "/")


class CursorAgent(Agent):
    name = "cursor"
    display_name = "Cursor Agent"
    program = "cursor-agent"
    store_env = ("CURSOR_CONFIG_DIR",)

    def home(self) -> Path:
        return env_path("CURSOR_CONFIG_DIR", Path.home() / ".cursor")

    def store_roots(self) -> list[Path]:
        return [self.home() / "projects"]

    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        projects = self.home() / "projects"
        folders = [p for p in list_folder(projects) if is_dir(p)]
        if workspace is not None:
            slugs = workspace_slugs(workspace)
            folders = [f for f in folders if any(_platform.same_name(f.name, s) for s in slugs)]
        for folder in folders:
            cwd = str(workspace) if workspace is not None else cwd_of_slug(folder.name)
            for path in _transcripts(folder / "agent-transcripts"):
                ref = self.ref_for_path(path)
                ref.cwd = cwd
                yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        mtime, size = file_mtime(path)
        return SessionRef(
            agent=self.name, session_id=path.stem, path=path, updated_at=mtime, size=size
        )

    def read(self, ref: SessionRef) -> Transcript:
        if ref.path.suffix == ".txt":
            return self.stream(ref, lambda info, diag: _text_transcript(ref.path, diag))
        return self.stream(ref, lambda info, diag: _jsonl_transcript(ref.path, diag))

    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        if interactive:
            return LaunchSpec(argv=[self.program, "--", prompt], cwd=workspace)
        return LaunchSpec(argv=[self.program, "-p", "--force", "--", prompt], cwd=workspace)


def _jsonl_transcript(path: Path, diag: Diagnostics) -> Iterator[Event]:
    reader = LineReader(path, diag)
    calls = 0
    for offset, line in reader.forward():
        record = decode_line(_RECORD, line, offset, reader.tail_offset, diag)
        if not isinstance(record, _Record):
            continue
        content = record.message.content if record.message else record.content
        for event in _record_events(record.role, content, calls):
            if isinstance(event, ToolCall):
                calls += 1
            yield event


def _transcripts(folder: Path) -> list[Path]:
    found = []
    for entry in list_folder(folder):
        if is_dir(entry):
            nested = entry / f"{entry.name}.jsonl"
            if is_file(nested):
                found.append(nested)
        elif entry.suffix in (".jsonl", ".txt"):
            found.append(entry)
    return found


def _record_events(role: str, content: str | list[_Block] | None, calls: int) -> Iterator[Event]:
    blocks = [_Block(type="text", text=content)] if isinstance(content, str) else (content or [])
    texts = []
    for block in blocks:
        if block.type == "text" and block.text:
            texts.append(_QUERY.sub("", block.text).strip())
        elif block.type == "tool_use" and block.name and role == "assistant":
            calls += 1
            yield _tool_call(f"cursor-{calls}", block.name, block.input or _Input())
    text = "\n\n".join(t for t in texts if t)
    if text and role in ("user", "assistant"):
        yield Message(role=role, text=text)  # type: ignore[arg-type]


def _tool_call(call_id: str, name: str, args: _Input) -> ToolCall:
    low = name.lower()
    call = ToolCall(call_id=call_id, name=name)
    path = args.path or args.file_path or args.target_file or args.filePath
    if any(h in low for h in _PLAN_HINTS) and args.todos is not None:
        call.action = "plan"
        call.plan = PlanOp(op="replace", items=todo_items(args.todos))
    elif any(h in low for h in _SHELL_HINTS):
        call.action = "command"
        call.command = args.command or args.cmd or ""
    elif path and any(h in low for h in _EDIT_HINTS):
        call.action = (
            "delete"
            if "delete" in low
            else ("write" if "write" in low or "create" in low else "edit")
        )
        call.paths = (path,)
    return call


def _text_transcript(path: Path, diag: Diagnostics) -> Iterator[Event]:
    """Older plain-text transcripts: `user:` / `assistant:` sections."""
    role: str | None = None
    lines: list[str] = []
    skipping = False  # inside a thinking or tool block, which runs to a blank line
    for _, raw in LineReader(path, diag).forward():
        line = raw.decode("utf-8", "replace")
        if line.strip() in ("user:", "assistant:"):
            if role and lines:
                yield from _record_events(role, "\n".join(lines), 0)
            role, lines, skipping = line.strip()[:-1], [], False
        elif line.startswith(("[Thinking]", "[Tool call]", "[Tool result]")):
            skipping = True
        elif skipping:
            skipping = bool(line.strip())
        else:
            lines.append(line)
    if role and lines:
        yield from _record_events(role, "\n".join(lines), 0)


__all__ = ["CursorAgent", "workspace_slugs"]
