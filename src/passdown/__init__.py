"""passdown: resumable handoffs between coding agents.

The public API loads lazily (a module `__getattr__`), so `import passdown` and
`passdown --help` stay cheap:

    from passdown import HandoffCoordinator
"""

from __future__ import annotations

import importlib
from typing import Any

# The one place the version is written: pyproject.toml reads it from here (setuptools'
# dynamic `attr`), `passdown --version` prints it.
__version__ = "0.2.0"

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    # the engine (the seed's API)
    "HandoffCoordinator": "passdown.coordinator",
    "HandoffPackage": "passdown.coordinator",
    "ExecuteResult": "passdown.coordinator",
    "Verification": "passdown.coordinator",
    "CheckResult": "passdown.coordinator",
    # the models and the store
    "Handoff": "passdown.handoff",
    "Record": "passdown.records",
    "open_store": "passdown.store",
    # agents (plugins subclass Agent)
    "Agent": "passdown.agents",
    "get_agent": "passdown.agents",
    "load_agents": "passdown.agents",
    # every error a caller can catch: one tree, rooted at PassdownError
    **{
        name: "passdown.errors"
        for name in (
            "PassdownError",
            "UsageError",
            "SessionNotFound",
            "AmbiguousSession",
            "SessionReadError",
            "AgentNotInstalled",
            "LaunchError",
            "OutputError",
            "StoreError",
            "RecordNotFound",
            "RecordConflict",
            "RecordInvalid",
            "RecordTooLarge",
            "UnknownAgent",
            "ServeError",
            "HandoffNotFound",
            "HandoffConflict",
            "HandoffStateError",
            "HandoffBlocked",
            "GitError",
            "ShareError",
            "ShareRefused",
            "ServerUnreachable",
            "TokenRefused",
            "ForeignScope",
        )
    },
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
