"""pi (`@mariozechner/pi-coding-agent`): sessions under
`~/.pi/agent/sessions/--<cwd, "/" turned into "-">--/<time>_<id>.jsonl`.

`PI_CODING_AGENT_DIR` replaces `~/.pi/agent`; `PI_CODING_AGENT_SESSION_DIR` (pi's
`--session-dir`) stores session files directly in that folder. The first line is a
`session {id, cwd}` header; every other entry has an `id` and a `parentId`, forming a
tree: `/tree` navigation and forks leave dead branches in the file. pi itself resumes
from the last entry written, so the active branch is the path from the last entry back
to the root. As for Claude, reading takes two streaming passes in flat memory: pass 1
walks the file backwards keeping the byte offsets of the active branch, pass 2 decodes
just those lines. Tool calls live in assistant messages (`toolCall {id, name,
arguments}`), results in `toolResult` messages; a `compaction {summary}` entry is
prior context; `thinking` blocks are hidden reasoning and never exported. The CLI
version is not recorded in session files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._common import (
    DECODE_ERRORS,
    decode_line,
    file_mtime,
    first_error_line,
    is_dir,
    is_file,
    list_folder,
    parse_exit_code,
    read_head,
)
from passdown.agents._endings import api_error_ending
from passdown.agents._tree import (
    Node,
    NodeReader,
    TreeFormat,
    calls_state,
    restore_calls,
)
from passdown.agents._tree_resume import TreeSessionAgent
from passdown.agents.base import LaunchSpec, cwd_in_workspace
from passdown.transcript import (
    Compaction,
    Diagnostics,
    Event,
    Message,
    SessionEnding,
    SessionInfo,
    SessionRef,
    ToolAction,
    ToolCall,
    ToolResult,
)

_TREE_TYPES = frozenset(
    {
        "message",
        "compaction",
        "branch_summary",
        "model_change",
        "thinking_level_change",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
_EDIT_TOOLS: dict[str, ToolAction] = {"write": "write", "edit": "edit"}
_READ_TOOLS = frozenset({"read", "ls", "grep", "find"})
_EXIT_TEXT = "Command exited with code"
_EXIT_REST = lazy_compile(r" -?\d+\s*")  # what follows it on the last line
_ID_IN_NAME = lazy_compile(r"_([0-9a-fA-F-]{8,})$")


class _Envelope(msgspec.Struct):
    type: str = ""
    id: str | None = None
    parentId: str | None = None


class _Args(msgspec.Struct):
    """The arguments of a tool call that say what it did; the rest (a written file's
    content) is skipped, not decoded."""

    path: object = None
    file_path: object = None
    command: object = None


class _Block(msgspec.Struct):
    type: str = ""
    text: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: _Args | None = None


class _Message(msgspec.Struct):
    role: str = ""
    content: str | list[_Block] | None = None
    model: str | None = None
    toolCallId: str | None = None
    isError: bool = False
    # bashExecution (a command the user ran with "!")
    command: str | None = None
    output: str | None = None
    exitCode: int | None = None
    cancelled: bool = False
    # assistant: "stop" | "toolUse" | "length" | "error" | "aborted"; errorMessage on error
    stopReason: str | None = None
    errorMessage: str | None = None


class _Entry(msgspec.Struct):
    type: str = ""
    id: str | None = None
    timestamp: str | None = None
    cwd: str | None = None
    version: int | None = None
    message: _Message | None = None
    summary: str | None = None
    modelId: str | None = None
    name: str | None = None
    fromHook: bool | None = None


class _Header(msgspec.Struct):
    type: str = ""
    id: str | None = None
    cwd: str | None = None
    timestamp: str | None = None


_ENVELOPE = LazyDecoder(_Envelope)
_ENTRY = LazyDecoder(_Entry)
_HEADER = LazyDecoder(_Header)


def encode_cwd(cwd: str) -> str:
    """pi's folder name for a cwd: `--` + the path without its leading "/", with "/",
    "\\" and ":" turned into "-", + `--`."""
    return "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd)) + "--"


class PiAgent(TreeSessionAgent):
    name = "pi"
    display_name = "pi"
    program = "pi"
    store_env = ("PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR")

    def agent_dir(self) -> Path:
        configured = os.environ.get("PI_CODING_AGENT_DIR")
        return Path(configured).expanduser() if configured else Path.home() / ".pi" / "agent"

    def store_roots(self) -> list[Path]:
        roots = [self.agent_dir() / "sessions"]
        flat = os.environ.get("PI_CODING_AGENT_SESSION_DIR")
        if flat:
            roots.append(Path(flat).expanduser())
        return roots

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for path in self._session_files(workspace):
            ref = self.ref_for_path(path)
            if cwd_in_workspace(ref.cwd, workspace):
                yield ref

    def _session_files(self, workspace: Path | None) -> Iterator[Path]:
        # The folder name is lossy ("-" in a name looks like "/"): preselect by name,
        # then confirm with the header's cwd.
        prefix = encode_cwd(str(workspace))[:-2] if workspace is not None else None
        for root in self.store_roots():
            for entry in list_folder(root):
                if is_dir(entry):
                    if prefix and not (
                        entry.name == prefix + "--" or entry.name.startswith(prefix + "-")
                    ):
                        continue
                    yield from _jsonl_files(entry)
                elif entry.suffix == ".jsonl":
                    yield entry  # PI_CODING_AGENT_SESSION_DIR: files directly in the folder

    def ref_for_path(self, path: Path) -> SessionRef:
        mtime, size = file_mtime(path)
        header = _header(path)
        match = _ID_IN_NAME.search(path.stem)
        session_id = header.id or (match.group(1) if match else path.stem)
        return SessionRef(
            agent=self.name,
            session_id=session_id,
            path=path,
            cwd=header.cwd,
            started_at=header.timestamp,
            updated_at=mtime,
            size=size,
        )

    # -- reading ------------------------------------------------------------------
    def tree_format(self) -> TreeFormat:
        return _FORMAT

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # pi's parser has no "--": an argument starting with "-" is read as an option and
        # one starting with "@" as a file to attach. A leading space keeps the prompt one
        # plain message (the model sees the same text).
        if prompt.startswith(("-", "@")):
            prompt = " " + prompt
        if interactive:
            return LaunchSpec(argv=[self.program, prompt], cwd=workspace)
        return LaunchSpec(argv=[self.program, "-p", prompt], cwd=workspace)


def _jsonl_files(folder: Path) -> list[Path]:
    return [p for p in list_folder(folder) if p.suffix == ".jsonl" and is_file(p)]


def _header(path: Path) -> _Header:
    """The `session` header: the first line (a few lines are tolerated before it)."""
    for line in read_head(path, 64 * 1024).split(b"\n")[:20]:
        if b'"session"' not in line:
            continue
        try:
            head = _HEADER.decode(line)
        except DECODE_ERRORS:
            continue
        if head.type == "session":
            return head
    return _Header()


def _node_view(info: SessionInfo, diag: Diagnostics) -> NodeReader:
    """Pass 1's view of each line (called once per line of the file): its place in the
    tree. pi resumes from the last entry written, so the newest entry is the leaf; the
    session header sits outside the tree. The decode is tried inline (the lenient retry
    only when it fails): no call level below this one."""
    decode = _ENVELOPE.decode
    tree_types = _TREE_TYPES

    def read(offset: int, line: bytes, tail: int) -> Node | None:
        try:
            env = decode(line)
        except DECODE_ERRORS:
            decoded = decode_line(_ENVELOPE, line, offset, tail, diag)
            if not isinstance(decoded, _Envelope):
                return None
            env = decoded
        kind = env.type
        if kind not in tree_types:
            if kind == "session":
                return None
            diag.unknown(kind or "(no type)")
        entry_id = env.id
        return Node(entry_id, env.parentId) if entry_id else None

    return read


def _is_header(offset: int, line: bytes) -> bool:
    return offset == 0 or b'"session"' in line[:40]


class _BranchReader:
    """Pass 2: decode the active branch's entries in order and emit events; its state
    (the calls waiting for a result) lets a checkpoint continue it."""

    def __init__(
        self,
        info: SessionInfo,
        diag: Diagnostics,
        state: object | None = None,
        pending: dict[str, ToolCall] | None = None,
    ) -> None:
        self.info = info
        self.diag = diag
        self.calls: dict[str, ToolCall] = {}
        if isinstance(state, dict):
            self.calls = restore_calls(state.get("calls"), pending or {})
        elif state is not None:
            raise ValueError("not a pi reader state")

    def feed(self, lines: Iterable[tuple[int, bytes, int]]) -> Iterator[Event]:
        # One flat loop over the branch's entries: messages (nearly every entry) are
        # handled here without a generator per entry and per message, and an assistant
        # message's usual single block without a call to join its text.
        decode = _ENTRY.decode
        info = self.info
        calls = self.calls
        noted_model: str | None = None  # the last model noted: most messages repeat it
        for offset, line, tail in lines:
            try:
                entry = decode(line)
            except DECODE_ERRORS:
                decoded = decode_line(_ENTRY, line, offset, tail, self.diag)
                if not isinstance(decoded, _Entry):
                    continue
                entry = decoded
            ts = entry.timestamp
            if ts:
                info.started_at = info.started_at or ts
                info.updated_at = ts
            msg = entry.message
            if entry.type != "message" or msg is None:
                yield from self._entry(entry)
                continue
            role = msg.role
            if role == "toolResult":
                call = calls.pop(msg.toolCallId or "", None)
                if call is not None:
                    yield _tool_result(call, msg, ts)
            elif role == "assistant":
                if msg.model != noted_model:
                    noted_model = msg.model
                    info.add_model(noted_model)
                content = msg.content
                if type(content) is list and len(content) == 1:
                    block = content[0]
                    if block.type == "toolCall":
                        if block.id:
                            tool_call = _tool_call(block, ts)
                            calls[tool_call.call_id] = tool_call
                            yield tool_call
                    elif block.type == "text" and block.text:  # thinking stays hidden
                        text = block.text.strip()
                        if text:
                            yield Message(role="assistant", text=text, timestamp=ts)
                else:
                    text = _text(content)  # text blocks only: thinking stays hidden
                    if text:
                        yield Message(role="assistant", text=text, timestamp=ts)
                    if type(content) is list:
                        for block in content:
                            if block.type == "toolCall" and block.id:
                                tool_call = _tool_call(block, ts)
                                calls[tool_call.call_id] = tool_call
                                yield tool_call
                # a failed model request is an empty assistant message (one per retry)
                stop = msg.stopReason
                if stop == "error":
                    yield api_error_ending(msg.errorMessage, timestamp=ts)
                elif stop == "aborted":
                    yield SessionEnding(
                        reason="interrupted", message=msg.errorMessage, timestamp=ts
                    )
            elif role == "user":
                text = _text(msg.content)
                if text:
                    yield Message(role="user", text=text, timestamp=ts)
            elif role == "bashExecution":
                yield from self._user_command(msg, entry)
            elif role not in ("custom", "branchSummary", "compactionSummary"):
                self.diag.unknown(f"message:{role or '(no role)'}")

    def finish(self) -> Iterator[Event]:
        return iter(())  # nothing is buffered across entries

    def state(self) -> object:
        return {"calls": calls_state(self.calls)}

    def _entry(self, entry: _Entry) -> Iterator[Event]:
        """The entries other than messages (the timestamp is already noted)."""
        info = self.info
        kind = entry.type
        if kind == "session":
            info.session_id = entry.id or info.session_id
            info.cwd = entry.cwd or info.cwd
        elif kind == "compaction":
            trigger = "extension" if entry.fromHook else None
            yield Compaction(summary=entry.summary, trigger=trigger, timestamp=entry.timestamp)
        elif kind == "branch_summary" and entry.summary:
            # The summary of a branch the user navigated away from: context, not a request.
            text = f"Summary of an abandoned branch: {entry.summary}"
            yield Message(role="user", text=text, timestamp=entry.timestamp, synthetic=True)
        elif kind == "model_change":
            info.add_model(entry.modelId)
        elif kind == "session_info" and entry.name:
            info.title = entry.name

    def _user_command(self, msg: _Message, entry: _Entry) -> Iterator[Event]:
        """A command the user ran from pi's prompt with "!": it ran in the workspace."""
        call_id = f"user-bash-{entry.id}"
        yield ToolCall(
            call_id=call_id,
            name="bash",
            action="command",
            command=msg.command or "",
            timestamp=entry.timestamp,
        )
        failed = msg.cancelled or msg.exitCode not in (None, 0)
        yield ToolResult(
            call_id=call_id,
            is_error=failed,
            exit_code=msg.exitCode,
            error=first_error_line(msg.output) if failed else None,
            timestamp=entry.timestamp,
        )


def _tool_result(call: ToolCall, msg: _Message, ts: str | None) -> ToolResult:
    is_error = msg.isError
    if call.action == "command":
        # pi marks a non-zero exit as an error and appends "Command exited with code N"
        text = _text(msg.content)
        end = text[-200:]
        code = parse_exit_code(end) if _may_name_exit_code(end) else None
        if not is_error:  # the output of a success is never kept
            return ToolResult(call.call_id, False, 0 if code is None else code, timestamp=ts)
        text = text[: len(text) - len(end)] + _without_exit_line(end)
        error = first_error_line(text) or text.strip()[:300] or None
        return ToolResult(call.call_id, True, code, error, timestamp=ts)
    if not is_error:
        return ToolResult(call.call_id, timestamp=ts)
    text = _text(msg.content)
    error = first_error_line(text) or text.strip()[:300] or None
    return ToolResult(call.call_id, True, error=error, timestamp=ts)


def _may_name_exit_code(text: str) -> bool:
    """False where `parse_exit_code` surely finds nothing (most outputs), without its
    regex: a match spells "code" or "status" in ASCII letters of either case (under
    IGNORECASE only "s", "k" and "i" also match other letters)."""
    lower = text.lower()
    return "code" in lower or "tatu" in lower


def _without_exit_line(end: str) -> str:
    """The tail of a command's output without the "Command exited with code N" line pi
    appends (and the newlines before it). Only the last such line can be followed by
    nothing but white space; found with rfind, as a regex scanning from every newline
    would be quadratic on a run of them."""
    at = end.rfind(_EXIT_TEXT)
    if at < 0 or _EXIT_REST.fullmatch(end, at + len(_EXIT_TEXT)) is None:
        return end
    while at and end[at - 1] == "\n":
        at -= 1
    return end[:at]


def _tool_call(block: _Block, ts: str | None) -> ToolCall:
    name = block.name or ""
    call_id = block.id or ""
    if name == "bash":
        args = block.arguments
        command = args.command if args is not None else None
        # another type than text: absent
        command = command if isinstance(command, str) else ""
        return ToolCall(call_id, name, "command", command=command, timestamp=ts)
    if name in _EDIT_TOOLS:
        args = block.arguments
        target = (args.path or args.file_path) if args is not None else None
        paths = (target,) if isinstance(target, str) and target else ()
        return ToolCall(call_id, name, _EDIT_TOOLS[name], paths, timestamp=ts)
    if name in _READ_TOOLS:
        return ToolCall(call_id, name, "read", timestamp=ts)
    return ToolCall(call_id, name, timestamp=ts)


def _text(content: str | list[_Block] | None) -> str:
    if isinstance(content, str):
        return content.strip()
    if not content:
        return ""
    if len(content) == 1:  # the usual case: one text block, no join
        block = content[0]
        return block.text.strip() if block.type == "text" and block.text else ""
    parts = [b.text.strip() for b in content if b.type == "text" and b.text]
    return "\n\n".join(p for p in parts if p)


_FORMAT = TreeFormat(node_view=_node_view, decoder=_BranchReader, always=_is_header)

__all__ = ["PiAgent", "encode_cwd"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
PiAgent.integration = "passdown.integrations._pi:PiHooks"  # type: ignore[attr-defined]
