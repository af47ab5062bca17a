"""passdown: resumable handoffs between coding agents.

The public API loads lazily (a module `__getattr__`), so `import passdown` and
`passdown --help` stay cheap:

    from passdown import HandoffCoordinator
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "HandoffCoordinator": "passdown.coordinator",
    "HandoffPackage": "passdown.coordinator",
    "ExecuteResult": "passdown.coordinator",
    "Verification": "passdown.coordinator",
    "CheckResult": "passdown.coordinator",
    "HandoffBlocked": "passdown.coordinator",
    "HandoffConflict": "passdown.coordinator",
    "HandoffNotFound": "passdown.coordinator",
    "HandoffStateError": "passdown.coordinator",
    "Handoff": "passdown.handoff",
    "Record": "passdown.records",
    "open_store": "passdown.store",
    "PassdownError": "passdown.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'passdown' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
