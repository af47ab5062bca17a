"""What Gemini CLI and Qwen Code (a fork of Gemini CLI) share: the tool tables, the
Gemini-style content parts (`text`, `thought`, `functionCall`, `functionResponse`), the
lenient decoding of their nested fields, and how a tool call and its result become
events. Private to `passdown.agents.gemini` and `passdown.agents.qwen`.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._common import (
    DECODE_ERRORS,
    Todo,
    decode_line,
    first_error_line,
    todo_items,
)
from passdown.transcript import Diagnostics, PlanOp, ToolCall, ToolResult

NULL = msgspec.Raw(b"null")
# The model's acknowledgement the CLIs insert after a compression summary.
ACK = "Got it. Thanks for the additional context!"

# -- tools ------------------------------------------------------------------------------
EDIT_TOOLS = {
    "write_file": "write",
    "replace": "edit",
    "edit": "edit",
    "smart_edit": "edit",
    "notebook_edit": "edit",
}
SHELL_TOOLS = frozenset({"run_shell_command"})
PLAN_TOOLS = frozenset({"write_todos", "todo_write"})
READ_TOOLS = frozenset(
    {
        "read_file",
        "read_many_files",
        "list_directory",
        "ls",
        "glob",
        "grep",
        "grep_search",
        "search_file_content",
        "web_fetch",
        "google_web_search",
        "web_search",
    }
)
SUBAGENT_TOOLS = frozenset({"invoke_agent", "delegate_to_agent", "agent", "task"})
# Lines the shell tools wrap around a command's own output.
_SHELL_FRAME = (
    "Command: ",
    "Directory: ",
    "Error: (none)",
    "Exit Code:",
    "Signal:",
    "Background PIDs:",
    "Process Group PGID:",
    "<untrusted_context>",
    "</untrusted_context>",
)
# A lone UTF-16 surrogate escape (JavaScript writes one when it cuts a string inside an
# emoji); msgspec rejects the whole line for it. Group 1 is the run of backslashes.
# The lookbehind starts a match only at the first backslash of a run: without it every
# position inside a long run of backslashes rescans the run (quadratic).
_SURROGATE = lazy_compile(
    rb"(?<!\\)(\\+)u([dD][89a-fA-F][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
)
_EXIT_LINE = lazy_compile(r"^Exit Code: (-?\d+)\s*$", re.MULTILINE)
_SIGNAL_LINE = lazy_compile(r"^Signal: (\d+|SIG\w+)\s*$", re.MULTILINE)


class FunctionCall(msgspec.Struct):
    id: str | None = None
    name: str = ""
    args: msgspec.Raw = NULL


class FunctionResponse(msgspec.Struct):
    id: str | None = None
    name: str = ""
    response: msgspec.Raw = NULL


class Part(msgspec.Struct):
    """One Gemini content part; `thought` parts are hidden reasoning and are skipped."""

    text: str | None = None
    thought: Any = None
    functionCall: FunctionCall | None = None
    functionResponse: FunctionResponse | None = None


class ResponseBody(msgspec.Struct):
    """A functionResponse's `response`: left raw, decoded only where a text is needed."""

    output: msgspec.Raw = NULL
    error: msgspec.Raw = NULL


class ToolArgs(msgspec.Struct):
    """The tool arguments passdown reads; file bodies and edit strings are skipped."""

    file_path: str | None = None
    absolute_path: str | None = None
    path: str | None = None
    notebook_path: str | None = None
    command: str | None = None
    todos: list[Todo] | None = None


_PARTS = LazyDecoder(str | list[Part] | Part)
RESPONSE_BODY = LazyDecoder(ResponseBody)
_ARGS = LazyDecoder(ToolArgs)
_ANY = LazyDecoder()


def lenient(decoder: LazyDecoder[Any], raw: msgspec.Raw | bytes) -> Any:
    """Decode a nested field; a bad or unexpected shape gives None, never an exception."""
    if len(raw) == 0 or (len(raw) == 4 and bytes(raw) == b"null"):
        return None
    try:
        return decoder.decode(raw)
    except DECODE_ERRORS:
        pass
    try:  # invalid UTF-8 or lone surrogates inside the field: keep what can be read
        return decoder.decode(repair(bytes(raw)).decode("utf-8", "replace").encode("utf-8"))
    except DECODE_ERRORS:
        return None


def decode_record(
    decoder: LazyDecoder[Any],
    line: bytes,
    offset: int,
    tail_offset: int,
    diag: Diagnostics,
) -> object | None:
    """`decode_line`, plus repair of the lone surrogate escapes Node can write."""
    try:
        decoded: object = decoder.decode(line)
        return decoded
    except DECODE_ERRORS:
        pass
    return decode_line(decoder, repair(line), offset, tail_offset, diag)


def repair(line: bytes) -> bytes:
    return _SURROGATE.sub(_replace_surrogate, line) if b"\\u" in line else line


def _replace_surrogate(match: re.Match[bytes]) -> bytes:
    slashes, unit, low = match.group(1), match.group(2), match.group(3)
    if len(slashes) % 2 == 0 or (low and unit[1:2].lower() in b"89ab"):
        return match.group(0)  # an escaped backslash, or a valid high+low pair
    return slashes[:-1] + b"\\ufffd" + (b"\\ufffd" if low else b"")


def parts_of(raw: msgspec.Raw) -> list[Part]:
    value = lenient(_PARTS, raw)
    if value is None:
        return []
    if isinstance(value, str):
        return [Part(text=value)]
    return [value] if isinstance(value, Part) else value


def visible_text(parts: list[Part]) -> str:
    texts = [p.text.strip() for p in parts if p.text and not p.thought]
    return "\n\n".join(t for t in texts if t)


def as_text(raw: msgspec.Raw) -> str | None:
    """A response field as text (usually a string; objects are shown as JSON)."""
    value = lenient(_ANY, raw)
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)[:20000]
    except (RecursionError, ValueError):  # nested deeper than json can print
        return None


def response_texts(resp: FunctionResponse) -> tuple[str | None, str | None]:
    """(output, error) of a functionResponse; a present `error` means the tool failed."""
    response = lenient(RESPONSE_BODY, resp.response)
    if not isinstance(response, ResponseBody):
        return as_text(resp.response), None
    return as_text(response.output), as_text(response.error)


def make_tool_call(
    call_id: str, name: str, args_raw: msgspec.Raw, timestamp: str | None
) -> ToolCall:
    args = lenient(_ARGS, args_raw)
    return tool_call(call_id, name, args if isinstance(args, ToolArgs) else ToolArgs(), timestamp)


def tool_call(call_id: str, name: str, args: ToolArgs, timestamp: str | None) -> ToolCall:
    """A tool call from its already decoded arguments."""
    call = ToolCall(call_id=call_id, name=name, timestamp=timestamp)
    if name in EDIT_TOOLS:
        call.action = EDIT_TOOLS[name]  # type: ignore[assignment]
        target = args.file_path or args.absolute_path or args.path or args.notebook_path
        call.paths = (target,) if target else ()
    elif name in SHELL_TOOLS:
        call.action = "command"
        call.command = args.command or ""
    elif name in PLAN_TOOLS and args.todos is not None:
        call.action = "plan"
        call.plan = PlanOp(op="replace", items=todo_items(args.todos))
    elif name in SUBAGENT_TOOLS:
        call.action = "subagent"
    elif name in READ_TOOLS:
        call.action = "read"
    return call


def make_tool_result(
    call: ToolCall,
    *,
    failed: bool,
    output: str | None,
    error: str | None,
    timestamp: str | None,
    exit_code: int | None = None,
) -> ToolResult:
    """A tool's outcome. Shell tools report success even for a non-zero exit: the exit
    code is in the output text (`Exit Code: N`; Gemini omits the line for 0)."""
    result = ToolResult(call_id=call.call_id, timestamp=timestamp)
    failed = failed or error is not None
    text = error if error is not None else (output or "")
    if call.action == "command":
        code = exit_code if exit_code is not None else shell_exit_code(text)
        signalled = _SIGNAL_LINE.search(text[-2000:]) is not None
        if code is None and not failed and not signalled:
            code = 0
        result.exit_code = code
        result.is_error = failed or signalled or code not in (None, 0)
        if result.is_error:
            result.error = first_error_line(shell_output(text)) or _head(text)
        return result
    result.is_error = failed
    if failed:
        result.error = first_error_line(text) or _head(text) or "the tool call failed"
    return result


def shell_exit_code(text: str) -> int | None:
    codes = _EXIT_LINE.findall(text[-2000:])
    return int(codes[-1]) if codes else None


def shell_output(text: str) -> str:
    """The command's own output, without the frame lines the shell tool adds (they would
    otherwise pass for error lines: the command echoed back, `Error: (none)`)."""
    if len(text) > 24000:  # first_error_line reads the head and the tail only
        text = text[:20000] + "\n" + text[-3000:]
    lines = []
    for line in text.splitlines():
        if line.startswith(_SHELL_FRAME):
            continue
        lines.append(line[len("Output: ") :] if line.startswith("Output: ") else line)
    return "\n".join(lines)


def _head(text: str | None) -> str | None:
    stripped = (text or "").strip()
    return stripped[:300] or None
