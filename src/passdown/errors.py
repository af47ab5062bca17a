"""passdown's errors: one tree, and the one table that maps them onto every door.

    PassdownError                     exit 1   HTTP 500
    ├── UsageError                    exit 2   HTTP 400  bad arguments or options
    ├── SessionNotFound               exit 3             no session for this workspace / id
    ├── AmbiguousSession              exit 4             an id prefix matches several sessions
    ├── SessionReadError              exit 5             a session file cannot be read at all
    ├── AgentNotInstalled             exit 6             the target agent's program is not on PATH
    ├── LaunchError                   exit 7             the target agent could not be started
    ├── OutputError                   exit 8             the handoff could not be written
    ├── StoreError                    exit 9   HTTP 503  the handoff store failed
    │   ├── RecordNotFound            exit 10  HTTP 404
    │   │   └── HandoffNotFound       exit 10  HTTP 404  no such (or no active) handoff
    │   ├── RecordConflict            exit 11  HTTP 409
    │   │   └── HandoffConflict       exit 11  HTTP 409  another package won the race / differs under this id
    │   └── RecordInvalid             exit 12  HTTP 400
    │       └── RecordTooLarge        exit 15  HTTP 413  a record (a handoff) above the store's size limit
    ├── UnknownAgent                  exit 13            no agent of that name is registered
    ├── ServeError                    exit 14            `passdown serve` cannot listen (port in use)
    ├── ShareError                    exit 16            push/pull: git could not reach or update the remote
    │   └── ShareRefused              exit 17            pull: some records refused (the good ones imported)
    ├── HandoffBlocked                exit 1             validation errors block execute (pass force=True)
    ├── HandoffStateError             exit 1             a lifecycle transition the status does not allow
    └── GitError                      exit 1             a git operation the coordinator needs failed

A blank HTTP column inherits the parent's status (500). Every door converts errors in
one way: the CLI exits with `exit_code_for(exc)`, `passdown serve` answers with
`http_status_for(exc)`, and the MCP server raises a tool error with
`tool_error_message(exc)`. Library callers catch the classes as exceptions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class PassdownError(Exception):
    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(PassdownError):
    exit_code = 2


class SessionNotFound(PassdownError):
    exit_code = 3


class AmbiguousSession(PassdownError):
    exit_code = 4


class SessionReadError(PassdownError):
    exit_code = 5


class AgentNotInstalled(PassdownError):
    exit_code = 6


class LaunchError(PassdownError):
    exit_code = 7


class OutputError(PassdownError):
    exit_code = 8


class StoreError(PassdownError):
    exit_code = 9


class RecordNotFound(StoreError):
    exit_code = 10


class RecordConflict(StoreError):
    exit_code = 11


class RecordInvalid(StoreError):
    exit_code = 12


class RecordTooLarge(RecordInvalid):
    """A record above the store's size limit (`PASSDOWN_MAX_RECORD_BYTES`): a handoff
    too large to store fails its export rather than leaving the store without it."""

    exit_code = 15


class UnknownAgent(PassdownError):
    exit_code = 13


class ServeError(PassdownError):
    exit_code = 14


class ShareError(PassdownError):
    """`passdown push`/`pull`: git could not reach the remote, or it refused the update."""

    exit_code = 16


class ShareRefused(ShareError):
    """`passdown pull` refused some records (schema, scope, digest); the good ones were
    imported."""

    exit_code = 17


# -- the coordinator's errors ------------------------------------------------------------


class HandoffNotFound(RecordNotFound):
    """No such handoff in the project, or no active one."""


class HandoffConflict(RecordConflict):
    """Another package became the active handoff first, or a different package is
    stored under this id."""


class HandoffStateError(PassdownError):
    """A lifecycle transition that the current status does not allow."""


class GitError(PassdownError):
    """A git operation the coordinator needs (a worktree for a parallel child) failed."""


class _Check(Protocol):
    """What HandoffBlocked reads of a `coordinator.checks.CheckResult`."""

    @property
    def name(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def blocking(self) -> bool: ...


class HandoffBlocked(PassdownError):
    """Validation errors block an execute (unless it is forced)."""

    def __init__(self, checks: Sequence[_Check]) -> None:
        failed = [c for c in checks if c.blocking]
        text = "; ".join(f"{c.name}: {c.message}" for c in failed)
        super().__init__(
            f"the handoff failed {len(failed)} check(s): {text}",
            hint="fix the workspace and prepare again, or execute with force=True",
        )
        self.checks = list(checks)


# -- the one mapping onto the doors ------------------------------------------------------

ERROR_CLASSES: tuple[type[PassdownError], ...] = (
    PassdownError,
    UsageError,
    SessionNotFound,
    AmbiguousSession,
    SessionReadError,
    AgentNotInstalled,
    LaunchError,
    OutputError,
    StoreError,
    RecordNotFound,
    RecordConflict,
    RecordInvalid,
    RecordTooLarge,
    UnknownAgent,
    ServeError,
    ShareError,
    ShareRefused,
    HandoffNotFound,
    HandoffConflict,
    HandoffStateError,
    HandoffBlocked,
    GitError,
)

EXIT_CODES: dict[str, int] = {cls.__name__: cls.exit_code for cls in ERROR_CLASSES}

HTTP_STATUSES: dict[type[PassdownError], int] = {
    PassdownError: 500,
    UsageError: 400,
    StoreError: 503,
    RecordNotFound: 404,
    RecordConflict: 409,
    RecordInvalid: 400,
    RecordTooLarge: 413,
}
"""The HTTP status of a class; a class not listed takes its nearest listed ancestor's."""


def exit_code_for(exc: PassdownError) -> int:
    """The CLI's exit code (README "Exit codes")."""
    return exc.exit_code


def http_status_for(exc: PassdownError) -> int:
    """The status `passdown serve` answers with."""
    for cls in type(exc).__mro__:
        if cls in HTTP_STATUSES:
            return HTTP_STATUSES[cls]
    return 500


def tool_error_message(exc: PassdownError) -> str:
    """The text of the MCP tool error: the message and its hint, redacted."""
    from passdown._redact import redact

    return redact(exc.message + (f" (hint: {exc.hint})" if exc.hint else ""))
