"""passdown's errors, one tree, each with the exit code the CLI uses for it.

    PassdownError                  (exit 1)
    ├── UsageError                 (exit 2)  bad arguments or options
    ├── SessionNotFound            (exit 3)  no session for this workspace / id
    ├── AmbiguousSession           (exit 4)  an id prefix matches several sessions
    ├── SessionReadError           (exit 5)  a session file cannot be read at all
    ├── AgentNotInstalled          (exit 6)  the target agent's program is not on PATH
    ├── LaunchError                (exit 7)  the target agent could not be started
    ├── OutputError                (exit 8)  the handoff could not be written
    ├── StoreError                 (exit 9)  the handoff store failed
    │   ├── RecordNotFound         (exit 10)
    │   ├── RecordConflict         (exit 11)
    │   └── RecordInvalid          (exit 12)
    ├── UnknownAgent               (exit 13) no agent of that name is registered
    └── ServeError                 (exit 14) `passdown serve` cannot listen (port in use)

The CLI converts these to a message and an exit code in exactly one place
(`passdown.cli`); library callers catch them as exceptions.
"""

from __future__ import annotations


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


class UnknownAgent(PassdownError):
    exit_code = 13


class ServeError(PassdownError):
    exit_code = 14


EXIT_CODES: dict[str, int] = {
    cls.__name__: cls.exit_code
    for cls in (
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
        UnknownAgent,
        ServeError,
    )
}
