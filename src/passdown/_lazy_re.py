"""Regular expressions compiled when first used.

An export imports every agent's module to ask where its sessions live (a session of
another agent may explain a change in the workspace), but reads the sessions of one.
`lazy_compile` gives a pattern that is compiled at its first search, so importing a
module whose sessions are not read costs none of that; after the first use its methods
are the compiled pattern's own, as fast as calling them directly.
"""

from __future__ import annotations

import re
from typing import Any, AnyStr, cast

# what a compiled pattern offers besides `pattern` and `flags` (known without compiling)
_COMPILED = (
    "search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split",
    "scanner", "groups", "groupindex",
)  # fmt: skip


def lazy_compile(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, done at the first use of the returned pattern. It is
    used through its attributes (`X.search(text)`), not handed to the `re` functions."""
    return cast("re.Pattern[AnyStr]", _LazyPattern(pattern, flags))


class _LazyPattern:
    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self.pattern = pattern
        self.flags = flags

    def __getattr__(self, name: str) -> Any:
        # reached only for an attribute not set yet: the first use of the compiled pattern
        if name not in _COMPILED:
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self.flags)
        for attribute in _COMPILED:
            setattr(self, attribute, getattr(compiled, attribute))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_compile({self.pattern!r}, {self.flags})"
