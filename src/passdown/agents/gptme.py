"""gptme (PyPI `gptme`, verified against 0.35.1): one folder per conversation under its
logs folder, `<logs>/<YYYY-MM-DD>-<random name>/`:

- Linux: `$XDG_DATA_HOME/gptme/logs` (default `~/.local/share/gptme/logs`);
- macOS: `~/Library/Application Support/gptme/logs` (`~/.local/share/gptme` wins when it
  exists, as gptme itself does);
- Windows: `%LOCALAPPDATA%\\gptme\\gptme\\logs` (platformdirs' user data folder);
- `GPTME_LOGS_HOME` replaces the logs folder on every platform.

A conversation folder holds `conversation.jsonl` (the file read), `events.jsonl` (the
same messages as events: not read), `config.toml` (`[chat] model, workspace, name`) and a
`workspace` symlink to the folder it ran in (how discovery finds a workspace's sessions).

`conversation.jsonl` is one message a line, `{role: system|user|assistant, content,
timestamp (ISO, local time, no zone), pinned, hide, call_id, metadata{model}}`, appended
as the conversation goes (an undo or edit rewrites it through a new file: the incremental
export then reads it anew). Tool calls live in the assistant's text, in two forms:
- tool format (`--tool-format tool`, the default for most models):
  `@save(call_0): {"path": ..., "content": ...}` on a line of its own;
- markdown format: a fenced block whose info string names the tool, ```` ```save PATH ````,
  ```` ```shell ````, ```` ```todo write ````.
A tool's result is the next `system` message (with the call's `call_id` in tool format).
A shell result ends "Return code: N" when the command failed.

The plan tool is `todo` (`todo write` with lines `add "text"`, `update ID state`, `remove
ID`, `clear [completed]`; ids are 1, 2, ... in order); in tool format its schema is empty
and gptme treats the call as a read, so a plan is written in markdown form. gptme's own
loop-control nudges ("<system>No tool call detected ...</system>") are user-role messages
the user never typed: not requests. A 429 gptme retried and got past leaves no line
("normal"); a request it gave up on (`GPTME_LLM_MAX_RETRIES` attempts, 11 by default,
backing off to 60 s) is a `system` line `{content: "error: rate_limit\nError code: 429 -
...", metadata{error: true, error_class: rate_limit|auth_error|model_unavailable|generic,
exit_code}}`: the run's ending (429: rate limit), unless the conversation goes on.
The CLI version is read from the system prompt ("You are gptme v0.35.1").
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

import msgspec

from passdown._jsonl import LineReader, read_side_file
from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._common import (
    decode_line,
    decode_or_none,
    file_mtime,
    first_error_line,
    is_dir,
    list_folder,
)
from passdown.agents._endings import api_error_ending, short_message
from passdown.agents._resumable import LineSessionAgent, LineStateReader, state_str
from passdown.agents.base import LaunchSpec, cwd_in_workspace
from passdown.transcript import (
    Diagnostics,
    Event,
    Message,
    Plan,
    PlanItem,
    PlanOp,
    PlanStatus,
    SessionEnding,
    SessionInfo,
    SessionRef,
    ToolAction,
    ToolCall,
    ToolResult,
)

_LOG = "conversation.jsonl"
_FILE_TOOLS: dict[str, ToolAction] = {"save": "write", "append": "edit", "patch": "edit"}
_COMMAND_TOOLS = frozenset({"shell", "ipython", "tmux"})
_READ_TOOLS = frozenset({"read", "chats", "browser", "rag", "recall", "screenshot", "vision"})
_TOOL_CALL = lazy_compile(r"^@([^\r\n(]+?)\(([\w\-:.]+)\):\s*(?={)", re.MULTILINE)
_FENCE = lazy_compile(r"^```([A-Za-z_][\w-]*)([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_FENCE_TOOLS = frozenset({*_FILE_TOOLS, *_COMMAND_TOOLS, "todo"})
_RETURN_CODE = lazy_compile(r"^(?:Return code: |Process interrupted \(return code: )(-?\d+)", re.M)
_INLINE = lazy_compile(r"^`([^`\n]+)`$", re.MULTILINE)
_STATUS = lazy_compile(r"\bError code: (\d{3})\b")
_NUDGE = lazy_compile(r"\A\s*<system>.*</system>\s*\Z", re.DOTALL)
_VERSION = lazy_compile(r"\bYou are gptme v(\d[\w.+-]*)")
_CALLS_KEEP = 256  # calls still waiting for a result: older ones never get one
_STATES: dict[str, PlanStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
    "paused": "pending",
}


class _Meta(msgspec.Struct):
    model: str | None = None
    error: bool = False  # a request gptme gave up on: `error_class`, `exit_code`
    error_class: str | None = None


class _Line(msgspec.Struct):
    role: str = ""
    content: str | None = None
    timestamp: str | None = None
    hide: bool = False
    pinned: bool = False
    call_id: str | None = None
    metadata: _Meta | None = None


_LINE = LazyDecoder(_Line)
_ARGS = LazyDecoder(dict[str, object])


def logs_dir() -> Path:
    """Where gptme keeps its conversations (the module docstring names each platform)."""
    configured = os.environ.get("GPTME_LOGS_HOME", "").strip()
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    if xdg:
        return Path(xdg) / "gptme" / "logs"
    legacy = Path.home() / ".local" / "share" / "gptme"
    if legacy.is_dir():
        return legacy / "logs"
    from platformdirs import user_data_dir

    return Path(user_data_dir("gptme")) / "logs"


class Gptme(LineSessionAgent):
    name = "gptme"
    display_name = "gptme"
    program = "gptme"
    store_env = ("GPTME_LOGS_HOME", "XDG_DATA_HOME")

    def store_roots(self) -> list[Path]:
        return [logs_dir()]

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for folder in list_folder(logs_dir()):
            if not is_dir(folder) or not (folder / _LOG).is_file():
                continue
            cwd = _workspace_of(folder)
            if cwd_in_workspace(cwd, workspace):
                yield self._ref(folder / _LOG, cwd)

    def ref_for_path(self, path: Path) -> SessionRef:
        log = path if path.name == _LOG else path / _LOG if path.is_dir() else path
        return self._ref(log, _workspace_of(log.parent))

    def _ref(self, log: Path, cwd: str | None) -> SessionRef:
        mtime, size = file_mtime(log)
        return SessionRef(
            agent=self.name,
            session_id=log.parent.name,
            path=log,
            cwd=cwd,
            updated_at=mtime,
            size=size,
        )

    # -- reading ------------------------------------------------------------------
    def line_reader(self) -> type[LineStateReader]:
        return _LogReader

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # "--" ends the options: a prompt that starts with "-" stays the prompt;
        # -n (--non-interactive) runs until the model stops and exits.
        argv = [self.program, "--", prompt]
        if not interactive:
            argv.insert(1, "-n")
        return LaunchSpec(argv=argv, cwd=workspace)


def _workspace_of(folder: Path) -> str | None:
    """The folder a conversation ran in: its `workspace` symlink, else config.toml."""
    try:
        target = os.readlink(folder / "workspace")
    except (OSError, ValueError):
        target = ""
    if target:
        return target
    value = _chat_config(folder).get("workspace")
    return value or None


def _chat_config(folder: Path) -> dict[str, str]:
    """`[chat]` of the conversation's config.toml, its text values only (bounded read)."""
    import tomllib  # here: loading the module for discovery needs none of it

    data = read_side_file(folder / "config.toml")
    if data is None:
        return {}
    try:
        chat = tomllib.loads(data.decode("utf-8", "replace")).get("chat")
    except (tomllib.TOMLDecodeError, RecursionError):
        return {}
    if not isinstance(chat, dict):
        return {}
    return {k: v for k, v in chat.items() if isinstance(k, str) and isinstance(v, str)}


class _LogReader(LineStateReader):
    """One forward pass over conversation.jsonl. Markdown-form calls carry no id: the
    next system messages are their results, in order (`waiting`)."""

    def __init__(self, path: Path, info: SessionInfo, diag: Diagnostics) -> None:
        super().__init__(path, info, diag)
        self.todos = Plan()  # the list as gptme keeps it (bounded like every plan replay)
        self.top = 0  # the highest item number: the next `add` takes one more
        self.waiting: list[str] = []  # markdown calls still without a result
        self.seq = 0  # assistant messages read: ids for markdown calls

    def events(self, stream: BinaryIO | None = None) -> Iterator[Event]:
        reader = LineReader(self.path, self.diag)
        for offset, raw in reader.forward(stream):
            line = decode_line(_LINE, raw, offset, reader.tail_offset, self.diag)
            if isinstance(line, _Line):
                yield from self._line(line)

    def close(self) -> Iterator[Event]:
        self.info.title = self.info.title or _chat_config(self.path.parent).get("name") or None
        return iter(())

    def _line(self, line: _Line) -> Iterator[Event]:
        stamp = _iso(line.timestamp)
        if stamp:
            self.info.started_at = self.info.started_at or stamp
            self.info.updated_at = stamp
        content = line.content or ""
        if line.role == "system":
            yield from self._system(line, content, stamp)
        elif line.role == "user":
            if content.strip() and not line.hide and not _NUDGE.match(content):
                yield Message(role="user", text=content.strip(), timestamp=stamp)
        elif line.role == "assistant":
            model = line.metadata.model if line.metadata else None
            if model and model not in self.info.models:
                self.info.models.append(model)
            yield from self._assistant(content, stamp)
        else:
            self.diag.unknown(line.role or "(no role)")

    def _system(self, line: _Line, content: str, stamp: str | None) -> Iterator[Event]:
        if line.pinned or (line.hide and not line.call_id):
            if self.info.agent_version is None and (found := _VERSION.search(content[:500])):
                self.info.agent_version = found.group(1)
            return  # the system prompt and gptme's own context notes
        meta = line.metadata
        if meta is not None and meta.error:
            yield _gave_up(content, meta.error_class, stamp)
            return
        call_id = line.call_id
        if call_id is None and self.waiting:
            call_id = self.waiting.pop(0)
        if call_id is None:
            return  # a notice no call asked for
        call = self.calls.pop(call_id, None)
        yield _result(call_id, content, call, stamp)

    def _assistant(self, content: str, stamp: str | None) -> Iterator[Event]:
        self.seq += 1
        self.waiting = []  # a new reply: results of older markdown calls never came
        events = list(self._calls(content, stamp))
        text = _TOOL_CALL.split(content, maxsplit=1)[0].strip() if "@" in content else content
        text = _FENCE.sub(lambda m: "" if m.group(1) in _FENCE_TOOLS else m.group(0), text)
        if text.strip():
            yield Message(role="assistant", text=text.strip(), timestamp=stamp)
        for event in events:
            if isinstance(event, ToolCall):
                self.calls[event.call_id] = event
                if len(self.calls) > _CALLS_KEEP:  # calls whose result never came
                    del self.calls[next(iter(self.calls))]
            else:  # a plan line, answered at once
                self.calls.pop(event.call_id, None)
            yield event

    def _calls(self, content: str, stamp: str | None) -> Iterator[ToolCall | ToolResult]:
        for found in _TOOL_CALL.finditer(content):
            name, call_id = found.group(1).strip(), found.group(2)
            decoded = decode_or_none(_ARGS, _json_object(content, found.end()))
            args = decoded if isinstance(decoded, dict) else {}
            yield _call(call_id, name, args, stamp)
        for n, block in enumerate(_FENCE.finditer(content)):
            name = block.group(1)
            if name not in _FENCE_TOOLS:
                continue
            call_id = f"gptme-{self.seq}-{n}"
            self.waiting.append(call_id)  # its result is the next system message
            words = _words(block.group(2))
            if name == "todo" and words[:1] == ["write"]:
                yield from self._todo_write(call_id, block.group(3), stamp)
                continue
            args = {"path": words[0]} if words and name in _FILE_TOOLS else {}
            if name in _COMMAND_TOOLS:
                args["command"] = block.group(3).strip()
            yield _call(call_id, name, args, stamp)

    def _todo_write(
        self, call_id: str, body: str, stamp: str | None
    ) -> Iterator[ToolCall | ToolResult]:
        """`todo write` operations as gptme applies them, one plan call each, answered at
        once (a block holds several; gptme's one result message says nothing per line):
        each costs O(1), whatever the list holds."""
        for n, line in enumerate(body.splitlines()):
            op = self._todo_op(_words(line))
            if op is not None:
                self.todos.apply(op)
                key = f"{call_id}.{n}"
                yield ToolCall(call_id=key, name="todo", action="plan", plan=op, timestamp=stamp)
                yield ToolResult(call_id=key, timestamp=stamp)

    def _todo_op(self, words: list[str]) -> PlanOp | None:
        if not words:
            return None
        op, rest = words[0].lower(), words[1:]
        items = self.todos.items
        if op == "add" and rest:
            self.top += 1  # gptme numbers a new item one past the highest
            item = PlanItem(id=str(self.top), subject=" ".join(rest), status="pending")
            return PlanOp(op="create", items=(item,))
        if op == "update" and len(rest) >= 2 and rest[0] in items:
            value = " ".join(rest[1:])
            if value in _STATES:
                return PlanOp(op="update", item_id=rest[0], status=_STATES[value])
            return PlanOp(op="update", item_id=rest[0], subject=value)
        if op == "remove" and rest and rest[0] in items:
            if rest[0] == str(self.top):  # the highest number is free again
                self.top = max((int(k) for k in items if k.isdigit() and k != rest[0]), default=0)
            return PlanOp(op="update", item_id=rest[0], status="deleted")
        if op == "clear":
            everything = rest[:1] != ["completed"]
            kept = tuple(i for i in items.values() if not everything and i.status != "completed")
            self.top = max((int(i.id) for i in kept if i.id.isdigit()), default=0)
            return PlanOp(op="replace", items=kept)
        return None

    def state(self) -> dict[str, object]:
        return {
            "todos": [[i.id, i.subject, i.status] for i in self.todos.items.values()],
            "todos_set_aside": self.todos.set_aside,
            "todos_dropped": self.todos.dropped,
            "top": self.top,
            "waiting": list(self.waiting),
            "seq": self.seq,
            "version": self.info.agent_version,
            "models": list(self.info.models),
            "started_at": self.info.started_at,
            "updated_at": self.info.updated_at,
        }

    def restore(self, state: Mapping[str, object], pending: dict[str, ToolCall]) -> None:
        todos = state.get("todos")
        for entry in todos if isinstance(todos, list) else []:
            if (
                isinstance(entry, list)
                and len(entry) == 3
                and all(isinstance(x, str) for x in entry)
            ):
                status = _STATES.get(entry[2], "pending")
                self.todos.items[entry[0]] = PlanItem(id=entry[0], subject=entry[1], status=status)
        for key in ("set_aside", "dropped"):
            value = state.get(f"todos_{key}")
            setattr(self.todos, key, value if isinstance(value, int) else 0)
        top, seq = state.get("top"), state.get("seq")
        self.top = top if isinstance(top, int) else 0
        self.seq = seq if isinstance(seq, int) else 0
        waiting = state.get("waiting")
        self.waiting = (
            [w for w in waiting if isinstance(w, str)] if isinstance(waiting, list) else []
        )
        self.calls = dict(pending)
        self.info.agent_version = state_str(state, "version")
        models = state.get("models")
        if isinstance(models, list):
            self.info.models[:] = [m for m in models if isinstance(m, str)]
        self.info.started_at = state_str(state, "started_at")
        self.info.updated_at = state_str(state, "updated_at")


def _call(call_id: str, name: str, args: Mapping[str, object], stamp: str | None) -> ToolCall:
    call = ToolCall(call_id=call_id, name=name, timestamp=stamp)
    path, command = args.get("path"), args.get("command") or args.get("code")
    if name in _FILE_TOOLS:
        call.action = _FILE_TOOLS[name]
        call.paths = (path,) if isinstance(path, str) and path else ()
    elif name in _COMMAND_TOOLS:
        call.action = "command"
        call.command = command.strip() if isinstance(command, str) else ""
    elif name in _READ_TOOLS or name == "todo":
        call.action = "read"  # `todo` in tool form: gptme reads the list (its schema is empty)
    return call


def _gave_up(content: str, kind: str | None, stamp: str | None) -> SessionEnding:
    """gptme's record of a model request it gave up on ("error: rate_limit\nError code:
    429 - ..."): how the run ended, unless the conversation goes on after it."""
    message = content.partition("\n")[2] or content
    found = _STATUS.search(message)
    status = int(found.group(1)) if found else None
    return api_error_ending(
        f"the model API failed ({short_message(message)}) and gptme gave up",
        status=status,
        kind=kind if kind != "generic" else None,
        timestamp=stamp,
    )


def _result(call_id: str, content: str, call: ToolCall | None, stamp: str | None) -> ToolResult:
    result = ToolResult(call_id=call_id, timestamp=stamp)
    if call is not None and call.action == "command":
        codes = _RETURN_CODE.findall(content)
        result.exit_code = int(codes[-1]) if codes else 0
        result.is_error = result.exit_code != 0
    else:
        result.is_error = content.lstrip().startswith("Error")
    if result.is_error:
        result.error = first_error_line(_without_header(content))
    return result


def _without_header(content: str) -> str:
    """A shell result without its "Ran command: `...`" line (the command, not the error),
    and a one-line output without the backticks gptme puts around it."""
    first, _, rest = content.partition("\n")
    body = rest if first.startswith(("Ran ", "Command ")) else content
    return _INLINE.sub(r"\1", body)


def _json_object(content: str, start: int) -> str:
    """The JSON object that starts at `start` (braces counted outside strings)."""
    depth, in_string, escape = 0, False, False
    for i in range(start, len(content)):
        c = content[i]
        if escape:
            escape = False
        elif c == "\\":
            escape = in_string
        elif c == '"':
            in_string = not in_string
        elif not in_string and c == "{":
            depth += 1
        elif not in_string and c == "}":
            depth -= 1
            if depth == 0:
                return content[start : i + 1]
    return "{}"


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _iso(stamp: str | None) -> str | None:
    """gptme's local time without a zone, as UTC ISO 8601."""
    if not stamp:
        return None
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    try:
        when = when.astimezone(UTC) if when.tzinfo else when.astimezone().astimezone(UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


__all__ = ["Gptme", "logs_dir"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
Gptme.integration = "passdown.integrations._gptme:GptmeHooks"  # type: ignore[attr-defined]
