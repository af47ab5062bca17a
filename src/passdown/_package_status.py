"""The statuses a handoff package goes through (`coordinator._lifecycle` keeps them in the
store). Apart from the package model (`_handoff_package`), so the session-start hook,
which claims through the lifecycle, loads neither the package nor the handoff model."""

from __future__ import annotations

from typing import Literal

LifecycleStatus = Literal["prepared", "published", "claimed", "completed", "rejected", "superseded"]
STATUSES: tuple[LifecycleStatus, ...] = (
    "prepared", "published", "claimed", "completed", "rejected", "superseded",
)  # fmt: skip
