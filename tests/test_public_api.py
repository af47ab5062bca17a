"""The public surface: every name in `passdown.__all__` resolves, lazily."""

from __future__ import annotations

import subprocess
import sys

import passdown


def test_every_public_name_resolves() -> None:
    for name in passdown.__all__:
        assert getattr(passdown, name) is not None, name


def test_import_is_cheap() -> None:
    code = "import sys, passdown; print(sorted(m for m in ('pydantic', 'msgspec', 'psycopg', 'mcp') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_every_error_class_users_catch_is_public() -> None:
    from passdown.errors import ERROR_CLASSES

    for cls in ERROR_CLASSES:
        assert getattr(passdown, cls.__name__) is cls, cls.__name__
    assert passdown.HandoffConflict is passdown.coordinator.HandoffConflict  # the same class
