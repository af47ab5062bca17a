"""Defaults shared by the pydantic models."""

from __future__ import annotations

from typing import Any


def empty_list() -> list[Any]:
    """A new empty list, the default of a list field (`Field(default_factory=empty_list)`).

    Pydantic reads a default factory's signature when it builds a model's schema, which
    every export does; `list`'s own signature comes from parsing its text signature, a
    plain function's is read as it is."""
    return []
