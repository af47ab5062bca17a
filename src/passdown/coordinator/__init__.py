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

Private modules: `_core` (the class: the seed's API) on top of `_context` (workspace, scope,
identity and the store, passed explicitly to every part), `_prepare` (session or
recovery base -> sealed package), `_execute` (execution by type), `_project_files`
(feature list and progress log), `_build` (composing state, provenance), `_compact` (the
budgeted compactor), `_checks` (validation) and `_lifecycle` (status and pointers in the
store); `_doors` is the one export path the CLI, hooks and MCP server take into `_core`.
Below the coordinator: the package model in `passdown._handoff_package` (its statuses in
`passdown._package_status`), record conversion in `passdown._handoff_record`, git in
`passdown._workspace`, the errors in `passdown.errors`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from passdown._handoff_package import (
        ChildRef,
        HandoffPackage,
        PackageContext,
        PackageState,
        RecoveryInfo,
        package_json_schema,
    )
    from passdown._handoff_record import package_from_record, package_to_record
    from passdown.coordinator._checks import CheckResult
    from passdown.coordinator._core import HandoffCoordinator, Verification
    from passdown.coordinator._execute import ExecuteResult
    from passdown.coordinator._lifecycle import StatusEvent
    from passdown.errors import HandoffBlocked, HandoffConflict, HandoffNotFound, HandoffStateError

# The names load lazily (as in `passdown`): `passdown.coordinator._lifecycle` alone must not
# import the whole engine, because the session-start hook claims through it while a new
# session waits.
_EXPORTS: dict[str, str] = {
    "CheckResult": "passdown.coordinator._checks",
    "HandoffCoordinator": "passdown.coordinator._core",
    "Verification": "passdown.coordinator._core",
    "HandoffBlocked": "passdown.errors",
    "HandoffConflict": "passdown.errors",
    "HandoffNotFound": "passdown.errors",
    "HandoffStateError": "passdown.errors",
    "ExecuteResult": "passdown.coordinator._execute",
    "StatusEvent": "passdown.coordinator._lifecycle",
    "ChildRef": "passdown._handoff_package",
    "HandoffPackage": "passdown._handoff_package",
    "PackageContext": "passdown._handoff_package",
    "PackageState": "passdown._handoff_package",
    "RecoveryInfo": "passdown._handoff_package",
    "package_json_schema": "passdown._handoff_package",
    "package_from_record": "passdown._handoff_record",
    "package_to_record": "passdown._handoff_record",
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
