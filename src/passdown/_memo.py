"""A bounded memo for functions of one string (or bytes) that a session calls with the
same short strings again and again: the test suite rerun after each fix, the same
failure output back each time. Long strings are never kept (a hostile 50 MB command
line must not stay in memory); they are computed every time."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

__all__ = ["for_short_strings"]

S = TypeVar("S", bound="str | bytes | None")
T = TypeVar("T")


def for_short_strings(
    *, maxsize: int, longest: int
) -> Callable[[Callable[[S], T]], Callable[[S], T]]:
    """Remember the last `maxsize` answers for strings of at most `longest` characters."""

    def wrap(compute: Callable[[S], T]) -> Callable[[S], T]:
        remembered = functools.lru_cache(maxsize=maxsize)(compute)

        @functools.wraps(compute)
        def answer(text: S) -> T:
            if text is not None and len(text) <= longest:
                return remembered(text)
            return compute(text)

        return answer

    return wrap
