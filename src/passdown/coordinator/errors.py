"""The coordinator's errors, in passdown's one tree (see `passdown.errors`):

    PassdownError
    ├── HandoffBlocked          (exit 1)  validation errors block execute (pass force=True)
    ├── HandoffStateError       (exit 1)  a lifecycle transition the status does not allow
    └── StoreError
        ├── RecordNotFound
        │   └── HandoffNotFound (exit 10) no such (or no active) handoff
        └── RecordConflict
            └── HandoffConflict (exit 11) another package won the race / differs under this id
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from passdown.coordinator.lifecycle import HandoffStateError
from passdown.errors import PassdownError, RecordConflict, RecordNotFound

if TYPE_CHECKING:
    from passdown.coordinator.checks import CheckResult

__all__ = ["HandoffBlocked", "HandoffConflict", "HandoffNotFound", "HandoffStateError"]


class HandoffBlocked(PassdownError):
    def __init__(self, checks: list[CheckResult]) -> None:
        failed = [c for c in checks if c.blocking]
        text = "; ".join(f"{c.name}: {c.message}" for c in failed)
        super().__init__(
            f"the handoff failed {len(failed)} check(s): {text}",
            hint="fix the workspace and prepare again, or execute with force=True",
        )
        self.checks = checks


class HandoffConflict(RecordConflict):
    pass


class HandoffNotFound(RecordNotFound):
    pass
