"""The shapes of Mistral Vibe's unified session store (`passdown.agents.vibe` reads them):
`meta.json`, `CURRENT`, a generation's `manifest.json` and `checkpoint.json`, the context
chunk's entries, and the recovery journal's records. Only the fields passdown uses."""

from __future__ import annotations

import msgspec

from passdown._lazy_json import LazyDecoder


class Environment(msgspec.Struct):
    working_directory: str | None = None


class Config(msgspec.Struct):
    model_name: str | None = None
    active_model: str | None = None


class Meta(msgspec.Struct):
    session_id: str | None = None
    parent_session_id: str | None = None  # set for a sub-agent's own session
    start_time: str | None = None
    end_time: str | None = None
    title: str | None = None
    environment: Environment | None = None
    origin_directory: str | None = None
    config: Config | None = None


class Current(msgspec.Struct):
    generation: str | int | None = None
    snapshot_sequence: int | None = None
    session_id: str | None = None


class Part(msgspec.Struct):
    path: str | None = None
    chunks: list[str] = []


class Manifest(msgspec.Struct):
    checkpoint: Part | None = None


class ErrorDetails(msgspec.Struct):
    httpStatus: int | None = None
    reason: str | None = None


class Error(msgspec.Struct):
    code: str | None = None
    message: str | None = None
    details: ErrorDetails | None = None


class Outcome(msgspec.Struct):
    type: str | None = None
    reason: str | None = None  # interrupted: "client interrupt"
    error: Error | None = None


class Turn(msgspec.Struct):
    type: str | None = None
    outcome: Outcome | None = None


class Checkpoint(msgspec.Struct):
    turn: Turn | None = None


class Arguments(msgspec.Struct):
    raw: str | None = None
    value: object = None


class Content(msgspec.Struct):
    type: str = ""
    text: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: Arguments | None = None


class ContextMessage(msgspec.Struct):
    role: str = ""
    content: str | list[Content] | None = None
    name: str | None = None
    outcome: str | None = None
    tool_call_id: str | None = None


class Entry(msgspec.Struct):
    message: ContextMessage | None = None


class Args(msgspec.Struct):
    """The arguments that say what a call did; a written file's content is skipped."""

    path: object = None
    file_path: object = None
    command: object = None
    action: object = None
    todos: object = None


class Todo(msgspec.Struct):
    id: str | int | None = None
    content: str | None = None
    status: str | None = None


class ShellResult(msgspec.Struct):
    returncode: int | None = None
    stderr: str | None = None
    stdout: str | None = None
    timed_out: bool = False


class CallPart(msgspec.Struct):
    type: str = ""
    text: str | None = None
    id: str | None = None
    name: str | None = None
    arguments_json: str | None = None


class Inner(msgspec.Struct):
    """A completion's reply (`parts`) or a tool's output (`type`, `content`,
    `structured_content`: bash's `{returncode, stderr, stdout, ...}`)."""

    parts: list[CallPart] | None = None
    type: str | None = None
    content: list[Content] | None = None
    structured_content: object = None


class ActionOutcome(msgspec.Struct):
    type: str = ""  # completion_succeeded | completion_failed | tool_succeeded | ...
    call_id: str | None = None
    result: Inner | None = None
    error: Error | None = None


class Command(msgspec.Struct):
    type: str = ""  # user_message | interrupt | ...
    content: list[Content] | None = None
    reason: str | None = None


class Input(msgspec.Struct):
    command: Command | None = None


class Payload(msgspec.Struct):
    result: ActionOutcome | None = None  # action_result
    input: Input | None = None  # core_input


class Record(msgspec.Struct):
    type: str = ""
    sequence: int = 0
    payload: Payload | None = None


META = LazyDecoder(Meta)
CURRENT_DOC = LazyDecoder(Current)
MANIFEST = LazyDecoder(Manifest)
CHECKPOINT = LazyDecoder(Checkpoint)
CHUNK = LazyDecoder(list[msgspec.Raw])
ENTRY = LazyDecoder(Entry)
ARGS = LazyDecoder(Args)
TODOS = LazyDecoder(list[Todo])
SHELL = LazyDecoder(ShellResult)
RECORD = LazyDecoder(Record)
