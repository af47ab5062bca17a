"""The coordinator's errors: they live in passdown's one tree (`passdown.errors`,
which draws it); this module keeps the `passdown.coordinator._errors` import path."""

from passdown.errors import HandoffBlocked, HandoffConflict, HandoffNotFound, HandoffStateError

__all__ = ["HandoffBlocked", "HandoffConflict", "HandoffNotFound", "HandoffStateError"]
