"""Qwen Code: sessions under `$QWEN_RUNTIME_DIR/projects/<project>/chats/<sessionId>.jsonl`.

The runtime folder is `QWEN_RUNTIME_DIR`, else `QWEN_HOME`, else `~/.qwen` (the CLI's own
order; a `advanced.runtimeOutputDir` setting is not read). `<project>` is the project
root with every non-alphanumeric character turned into "-" (lossy, like Claude's), so
folders are preselected by name and confirmed by the `cwd` every record carries.
Archived sessions are in `chats/archive/`.

Records are Claude-like (`uuid`, `parentUuid`, `type`: user | assistant | tool_result |
system) with Gemini-style `message.parts` (`text`, `thought`, `functionCall`,
`functionResponse`). The conversation is a tree: a rewind appends a `system/rewind`
record whose parent is the turn it went back to, leaving the rewound records on a dead
branch; the CLI resumes from the last conversation record in the file. A record can be
written in several fragments sharing one uuid (their parts concatenate). Reading takes
two streaming passes, as for Claude: pass 1 walks the file backwards from that leaf
following parent links and keeps only the offsets of the active branch (and of every
fragment of its records); pass 2 reads forwards and decodes just those lines.

The plan is `todo_write` (whole list each call; only offered with
`tools.todoWrite.enabled`), and its final state is also kept in
`<runtime>/todos/<sessionId>.json`, which wins when present, unless the file has a
dead branch (after a rewind the todo file may be the abandoned branch's). Compression is a
`system/chat_compression` record whose `compressedHistory` starts with the summary.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import msgspec

from passdown._jsonl import read_side_file
from passdown.agents._common import (
    DECODE_ERRORS,
    decode_line,
    file_mtime,
    is_dir,
    is_file,
    list_folder,
    read_head,
    todo_items,
)
from passdown.agents._endings import api_error_ending
from passdown.agents._gemini_family import (
    ToolArgs,
    as_text,
    decode_record,
    lenient,
    make_tool_result,
    repair,
    tool_call,
)
from passdown.agents._qwen_records import (
    _COMPRESSION,
    _DISPLAY,
    _ENVELOPE,
    _FAST_RECORD,
    _HEAD,
    _NULL,
    _RECORD,
    _TODOS,
    _CallResult,
    _Compression,
    _Envelope,
    _FastRecord,
    _FastResponse,
    _Head,
    _lenient_record,
    _Record,
    _ShellDisplay,
)
from passdown.agents._record_fields import RecordScan
from passdown.agents._tree import (
    Node,
    NodeReader,
    TreeFormat,
    restore_calls,
)
from passdown.agents._tree_resume import TreeSessionAgent
from passdown.agents.base import LaunchSpec, candidate_of
from passdown.transcript import (
    Compaction,
    Diagnostics,
    Event,
    Message,
    PlanOp,
    SessionEnding,
    SessionInfo,
    SessionRef,
    ToolCall,
)

# system subtypes outside the conversation tree (the CLI never picks them as the leaf)
_NOT_CONVERSATION = frozenset(
    {
        "session_sources_snapshot",
        "session_artifact_event",
        "session_artifact_snapshot",
        "managed_session_header_v1",
        "managed_session_event_v1",
        "managed_session_commit_v1",
    }
)
_RECORD_TYPES = frozenset({"user", "assistant", "tool_result", "system"})
_HOOK_CONTEXT = "<qwen:user-prompt-submit-context>"
_REMINDER = "<system-reminder>"
_ACK = "Got it. Thanks for the additional context!"


def encode_project(cwd: str) -> str:
    """Qwen's folder name for a project root (sanitizeCwd)."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


class QwenCode(TreeSessionAgent):
    name = "qwen"
    display_name = "Qwen Code"
    program = "qwen"
    store_env = ("QWEN_RUNTIME_DIR", "QWEN_HOME")

    def runtime_dir(self) -> Path:
        for var in ("QWEN_RUNTIME_DIR", "QWEN_HOME"):
            configured = os.environ.get(var)
            if configured:
                return Path(configured).expanduser()
        return Path.home() / ".qwen"

    def store_roots(self) -> list[Path]:
        return [self.runtime_dir() / "projects"]

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        projects = self.runtime_dir() / "projects"
        folders = [p for p in list_folder(projects) if is_dir(p)]
        if workspace is not None:
            prefix = encode_project(str(workspace))
            folders = [f for f in folders if f.name == prefix or f.name.startswith(prefix + "-")]
        for folder in folders:
            for path in _session_files(folder / "chats"):
                ref = self.ref_for_path(path)
                if candidate_of(ref, workspace):  # placed here, or not placed at all
                    yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        mtime, size = file_mtime(path)
        head, unplaced = _head(path)
        return SessionRef(
            agent=self.name,
            session_id=head.sessionId if isinstance(head.sessionId, str) else path.stem,
            path=path,
            cwd=head.cwd,
            started_at=head.timestamp,
            updated_at=mtime,
            size=size,
            unplaced=unplaced,
        )

    # -- reading ------------------------------------------------------------------
    def tree_format(self) -> TreeFormat:
        return TreeFormat(
            node_view=_node_view,
            decoder=lambda i, d, saved, calls: _BranchReader(
                i, d, saved, calls, todos=self._todo_file
            ),
            fragments=True,  # a record written in several pieces under one uuid keeps every piece
        )

    def _todo_file(self, session_id: str) -> PlanOp | None:
        """The final plan Qwen keeps in <runtime>/todos/<sessionId>.json."""
        if not session_id or "/" in session_id or "\\" in session_id or ".." in session_id:
            return None
        data = read_side_file(self.runtime_dir() / "todos" / f"{session_id}.json")
        if data is None:
            return None
        todos = lenient(_TODOS, msgspec.Raw(data))
        if not isinstance(todos, ToolArgs) or todos.todos is None:
            return None
        return PlanOp(op="replace", items=todo_items(todos.todos))

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # "--flag=value" keeps a prompt that starts with "-" one value. The positional
        # prompt would be read as flags, and 0.24.4 drops a positional after "--" ("No
        # input provided"), so the deprecated but working --prompt= is used (checked
        # against the real CLI). auto-edit approves edits, as Claude's acceptEdits does.
        if interactive:
            return LaunchSpec(argv=[self.program, f"--prompt-interactive={prompt}"], cwd=workspace)
        argv = [self.program, "--approval-mode", "auto-edit", f"--prompt={prompt}"]
        return LaunchSpec(argv=argv, cwd=workspace)


def _session_files(chats: Path) -> list[Path]:
    files = []
    for folder in (chats, chats / "archive"):
        files += [p for p in list_folder(folder) if p.suffix == ".jsonl" and is_file(p)]
    return files


_HEAD_BYTES = 64 * 1024


def _head(path: Path) -> tuple[_Head, str | None]:
    """cwd, start time and session id from the first record that has them, and why the
    session could not be placed when no record read names its cwd. The first record is
    the first prompt: a long one runs past the head, and is read past in pieces."""
    head = read_head(path, _HEAD_BYTES)
    for line in head.split(b"\n")[:50]:
        try:
            fields = _HEAD.decode(line)
        except DECODE_ERRORS:
            continue
        if fields.cwd:
            return fields, None
    if len(head) < _HEAD_BYTES:  # the whole file was read
        return _Head(), None
    scan = RecordScan(path, ("cwd", "timestamp", "sessionId"))
    for record in scan.records():
        if record.get("cwd"):
            return _Head(record["cwd"], record.get("timestamp"), record.get("sessionId")), None
    return _Head(), scan.unplaced() if scan.cut else None


def _node_view(info: SessionInfo, diag: Diagnostics) -> NodeReader:
    """Pass 1's view of each line (called once per line of the file): its place in the
    tree. The CLI resumes from the last conversation record. The decode is tried inline,
    `decode_record`'s repair only when it fails: no call level below this one."""
    decode = _ENVELOPE.decode

    def read(offset: int, line: bytes, tail: int) -> Node | None:
        try:
            env = decode(line)
        except DECODE_ERRORS:
            repaired = decode_line(_ENVELOPE, repair(line), offset, tail, diag)
            if not isinstance(repaired, _Envelope):
                return None
            env = repaired
        uuid = env.uuid
        if uuid is None or (env.type == "system" and env.subtype in _NOT_CONVERSATION):
            return None
        return Node(uuid, env.parentUuid)

    return read


class _ReaderState(msgspec.Struct):
    calls: list[ToolCall] = []
    text_uuid: str | None = None
    text: list[str] = []
    text_ts: str | None = None


class _BranchReader:
    """Pass 2: decode the active branch's records in order and emit events; its state
    (waiting calls, assistant text still being joined) lets a checkpoint continue it."""

    def __init__(
        self,
        info: SessionInfo,
        diag: Diagnostics,
        state: object | None = None,
        pending: dict[str, ToolCall] | None = None,
        *,
        todos: Callable[[str], PlanOp | None],
    ) -> None:
        self.info = info
        self.diag = diag
        self.todos = todos
        saved = msgspec.convert(state, _ReaderState) if state is not None else _ReaderState()
        self.pending: dict[str, ToolCall] = restore_calls(
            msgspec.to_builtins(saved.calls), pending or {}
        )
        self.text_uuid: str | None = saved.text_uuid  # assistant text joins across fragments
        self.text: list[str] = saved.text
        self.text_ts: str | None = saved.text_ts

    def feed(self, lines: Iterable[tuple[int, bytes, int]]) -> Iterator[Event]:
        # One flat loop over the branch's records: assistant text, tool calls and
        # results (most records) are handled here, without a generator per record.
        decode = _FAST_RECORD.decode
        diag, pending, info = self.diag, self.pending, self.info
        noted_model: str | None = None  # the last model noted: most records repeat it
        for offset, line, tail in lines:
            try:
                rec = decode(line)
            except DECODE_ERRORS:
                lenient_rec = _lenient_record(line, offset, tail, diag)
                if lenient_rec is None:
                    continue
                rec = lenient_rec
            ts = rec.timestamp
            if ts:
                info.started_at = info.started_at or ts
                info.updated_at = ts
            if rec.sessionId is not None:
                info.session_id = rec.sessionId
            if not info.cwd:
                info.cwd = rec.cwd
            if rec.version:
                info.agent_version = rec.version
            if rec.gitBranch:
                info.git_branch = rec.gitBranch
            kind = rec.type
            message = rec.message
            if kind == "assistant":
                if rec.model != noted_model:
                    noted_model = rec.model
                    info.add_model(noted_model)
                if rec.uuid != self.text_uuid:
                    if self.text:
                        yield from self._flush()
                    else:  # what a flush of nothing leaves
                        self.text_ts = None
                    self.text_uuid = rec.uuid
                for part in (message.parts or ()) if message is not None else ():
                    if part.text and not part.thought:
                        self.text.append(part.text)
                        self.text_ts = self.text_ts or ts
                    elif (fc := part.functionCall) is not None and fc.id:
                        args = fc.args if fc.args is not None else ToolArgs()
                        call = tool_call(fc.id, fc.name, args, ts)
                        pending[call.call_id] = call
                        yield call
                continue
            if self.text:
                yield from self._flush()
            else:  # what a flush of nothing leaves
                self.text_ts = self.text_uuid = None
            if kind == "tool_result":
                for part in (message.parts or ()) if message is not None else ():
                    resp = part.functionResponse
                    if resp is not None:
                        waiting = pending.pop(resp.id or "", None)
                        if waiting is not None:
                            yield _tool_result(waiting, resp, rec.toolCallResult, ts)
            elif kind == "system":
                subtype = rec.subtype
                if subtype == "ui_telemetry":
                    ending = _api_error(rec)
                    if ending is not None:
                        yield ending
                elif subtype == "chat_compression":
                    yield _compaction(rec, line, offset, tail)
            elif kind == "user":
                user_message = _user_message(rec)
                if user_message is not None:
                    yield user_message
            elif kind not in _RECORD_TYPES:
                diag.unknown(str(kind or "(no type)"))

    def finish(self) -> Iterator[Event]:
        yield from self._flush()
        # The todo file holds whatever list was written last, on any branch: after a
        # rewind it can be the abandoned branch's, so only a file without dead branches
        # may let it win over the active branch's own todo_write calls.
        plan = self.todos(self.info.session_id) if not self.diag.off_branch_records else None
        if plan is not None:
            yield plan

    def state(self) -> object:
        return msgspec.to_builtins(
            _ReaderState(list(self.pending.values()), self.text_uuid, self.text, self.text_ts)
        )

    def _flush(self) -> Iterator[Event]:
        text = "\n\n".join(t.strip() for t in self.text if t.strip())
        if text and text != _ACK:
            yield Message(role="assistant", text=text, timestamp=self.text_ts)
        self.text, self.text_ts, self.text_uuid = [], None, None


def _compaction(rec: _FastRecord, line: bytes, offset: int, tail: int) -> Compaction:
    whole = decode_record(_RECORD, line, offset, tail, Diagnostics())  # read once already
    raw = whole.systemPayload if isinstance(whole, _Record) else _NULL
    payload = lenient(_COMPRESSION, raw)
    summary, trigger = None, "auto"
    if isinstance(payload, _Compression):
        if payload.info and payload.info.trigger:
            trigger = payload.info.trigger
        for content in payload.compressedHistory or ():
            texts = [p.text for p in content.parts or () if p.text and not p.thought]
            if content.role == "user" and texts:
                summary = "\n\n".join(texts)
                break
    return Compaction(summary=summary, trigger=trigger, timestamp=rec.timestamp)


def _user_message(rec: _FastRecord) -> Message | None:
    parts = (rec.message.parts or ()) if rec.message is not None else ()
    texts = [
        p.text.strip()
        for p in parts
        if p.text and not p.thought and not p.text.lstrip().startswith((_HOOK_CONTEXT, _REMINDER))
    ]
    text = "\n\n".join(t for t in texts if t)
    if not text:
        return None
    # notifications, cron and background-task reports are the CLI talking
    synthetic = rec.provenance not in (None, "real_user")
    return Message(role="user", text=text, timestamp=rec.timestamp, synthetic=synthetic)


def _tool_result(
    call: ToolCall, resp: _FastResponse, outcome: _CallResult | None, ts: str | None
) -> Event:
    body = resp.response
    error = as_text(body.error) if body is not None else None
    failed, exit_code = False, None
    if outcome is not None and outcome.callId in (None, resp.id):
        failed = outcome.status == "error"
        if call.action == "command":
            exit_code = _exit_code(outcome)
    # the output counts only for a command's exit code or a failure without an error
    wanted = body is not None and error is None and (failed or call.action == "command")
    return make_tool_result(
        call,
        failed=failed,
        output=as_text(body.output) if wanted and body is not None else None,
        error=error,
        timestamp=ts,
        exit_code=exit_code,
    )


def _exit_code(outcome: _CallResult) -> int | None:
    """The exit code from `resultDisplay` when it is a shell_result (else the caller
    reads the `Exit Code: N` line of the output)."""
    display = lenient(_DISPLAY, outcome.resultDisplay)
    if isinstance(display, _ShellDisplay) and display.type == "shell_result":
        return display.exitCode
    return None


def _api_error(rec: _FastRecord) -> SessionEnding | None:
    """0.24 writes each failed model request (every retry) as a `system/ui_telemetry`
    record with `uiEvent {"event.name": "qwen-code.api_error", error_message, error_type,
    status_code}`; the last one nothing follows is how the session ended."""
    payload = rec.systemPayload
    event = payload.uiEvent if payload is not None else None
    if event is None or event.name != "qwen-code.api_error":
        return None
    message, kind, status = event.error_message, event.error_type, event.status_code
    return api_error_ending(
        message if isinstance(message, str) else None,
        status=status if isinstance(status, int) else None,
        kind=kind if isinstance(kind, str) else None,
        timestamp=rec.timestamp,
    )


__all__ = ["QwenCode", "encode_project"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
QwenCode.integration = "passdown.integrations._settings_json:QwenHooks"  # type: ignore[attr-defined]
