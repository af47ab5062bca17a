"""The handoff coordinator: the Python API for session, agent, parallel and recovery
handoffs, and the engine under `passdown export` / `passdown switch`.

    coordinator = HandoffCoordinator(project_dir)
    package = await coordinator.prepare_handoff(
        source_agent="coding-agent", summary="Completed auth-001, starting auth-002")
    await coordinator.execute_handoff(package=package, target_agent="coding-agent")

    # the target side
    package = coordinator.load_handoff()            # the active handoff
    report = await coordinator.verify(package)      # checks + differences
    coordinator.claim(package, by="coding-agent")
    ...
    coordinator.complete(package)

Modules: `core` (the class: the seed's API) on top of `context` (workspace, scope,
identity and the store, passed explicitly to every part), `prepare` (session or
recovery base -> sealed package), `execute` (execution by type), `package` (the
model), `project_files` (feature list and progress log), `build` (composing state,
provenance), `compact` (the budgeted compactor), `checks` (validation) and
`lifecycle` (status and pointers in the store); `doors` is the one export path the
CLI, hooks and MCP server take into `core`. Git lives in `passdown.workspace`, record
conversion in `passdown.handoff_record`, the errors in `passdown.errors`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from passdown.coordinator.checks import CheckResult
    from passdown.coordinator.core import HandoffCoordinator, Verification
    from passdown.coordinator.errors import (
        HandoffBlocked,
        HandoffConflict,
        HandoffNotFound,
        HandoffStateError,
    )
    from passdown.coordinator.execute import ExecuteResult
    from passdown.coordinator.lifecycle import StatusEvent
    from passdown.coordinator.package import (
        ChildRef,
        HandoffPackage,
        PackageContext,
        PackageState,
        RecoveryInfo,
        package_json_schema,
    )
    from passdown.handoff_record import package_from_record, package_to_record

# The names load lazily (as in `passdown`): `passdown.coordinator.lifecycle` alone must not
# import the whole engine, because the session-start hook claims through it while a new
# session waits.
_EXPORTS: dict[str, str] = {
    "CheckResult": "passdown.coordinator.checks",
    "HandoffCoordinator": "passdown.coordinator.core",
    "Verification": "passdown.coordinator.core",
    "HandoffBlocked": "passdown.coordinator.errors",
    "HandoffConflict": "passdown.coordinator.errors",
    "HandoffNotFound": "passdown.coordinator.errors",
    "HandoffStateError": "passdown.coordinator.errors",
    "ExecuteResult": "passdown.coordinator.execute",
    "StatusEvent": "passdown.coordinator.lifecycle",
    "ChildRef": "passdown.coordinator.package",
    "HandoffPackage": "passdown.coordinator.package",
    "PackageContext": "passdown.coordinator.package",
    "PackageState": "passdown.coordinator.package",
    "RecoveryInfo": "passdown.coordinator.package",
    "package_json_schema": "passdown.coordinator.package",
    "package_from_record": "passdown.handoff_record",
    "package_to_record": "passdown.handoff_record",
}

__all__ = [
    "CheckResult",
    "ChildRef",
    "ExecuteResult",
    "HandoffBlocked",
    "HandoffConflict",
    "HandoffCoordinator",
    "HandoffNotFound",
    "HandoffPackage",
    "HandoffStateError",
    "PackageContext",
    "PackageState",
    "RecoveryInfo",
    "StatusEvent",
    "Verification",
    "package_from_record",
    "package_json_schema",
    "package_to_record",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'passdown.coordinator' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
