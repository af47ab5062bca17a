"""The one error tree (passdown.errors) and the one mapping every door uses, and the
coordinator's layering: its parts take a ProjectContext and never import the class."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import passdown
from passdown import errors
from passdown.coordinator import HandoffCoordinator
from passdown.errors import (
    GitError,
    HandoffBlocked,
    HandoffConflict,
    HandoffNotFound,
    HandoffStateError,
    PassdownError,
    RecordConflict,
    RecordInvalid,
    RecordNotFound,
    RecordTooLarge,
    ServeError,
    StoreError,
    UsageError,
    exit_code_for,
    http_status_for,
    tool_error_message,
)

SRC = Path(passdown.__file__).parent
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _defined_error_classes() -> list[type[PassdownError]]:
    return [
        obj
        for _, obj in inspect.getmembers(errors, inspect.isclass)
        if issubclass(obj, PassdownError) and obj.__module__ == errors.__name__
    ]


def test_every_error_class_is_in_the_table_and_drawn_with_its_exit_code() -> None:
    doc = errors.__doc__ or ""
    classes = _defined_error_classes()
    assert set(classes) == set(errors.ERROR_CLASSES)
    for cls in classes:
        line = re.search(rf"[─ ]{cls.__name__}\s+exit (\d+)", doc)
        assert line is not None, f"{cls.__name__} is not drawn in errors.py's docstring"
        assert int(line.group(1)) == cls.exit_code == errors.EXIT_CODES[cls.__name__]


def test_no_other_module_defines_an_error_class() -> None:
    """Every exception passdown raises on purpose lives in passdown.errors."""
    offenders = []
    for path in SRC.rglob("*.py"):
        if path == SRC / "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
                }
                if bases & {c.__name__ for c in errors.ERROR_CLASSES}:
                    offenders.append(f"{path.relative_to(SRC)}:{node.name}")
    assert offenders == []


def test_the_public_error_names_are_the_classes_of_the_tree() -> None:
    import passdown.coordinator as coordinator

    assert coordinator.HandoffBlocked is HandoffBlocked
    assert coordinator.HandoffConflict is HandoffConflict
    assert coordinator.HandoffNotFound is HandoffNotFound
    assert coordinator.HandoffStateError is HandoffStateError
    assert passdown.HandoffNotFound is HandoffNotFound


def test_private_modules_take_the_error_classes_from_the_tree() -> None:
    """Every module imports an error class from `passdown.errors`, never through another
    private module that passes it on (only the public packages re-export them)."""
    names = {cls.__name__ for cls in errors.ERROR_CLASSES}
    public = {SRC / "__init__.py", SRC / "coordinator" / "__init__.py"}
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.module == "passdown.errors":
                continue
            taken = sorted(a.name for a in node.names if a.name in names)
            if taken and path not in public:
                offenders.append(f"{path.relative_to(SRC)}: {node.module} {taken}")
    assert offenders == []
    assert not (SRC / "coordinator" / "_errors.py").exists()


@pytest.mark.parametrize(
    ("error", "exit_code", "status"),
    [
        (PassdownError("x"), 1, 500),
        (UsageError("x"), 2, 400),
        (StoreError("x"), 9, 503),
        (RecordNotFound("x"), 10, 404),
        (HandoffNotFound("x"), 10, 404),
        (RecordConflict("x"), 11, 409),
        (HandoffConflict("x"), 11, 409),
        (RecordInvalid("x"), 12, 400),
        (RecordTooLarge("x"), 15, 413),
        (ServeError("x"), 14, 500),
        (HandoffStateError("x"), 1, 500),
        (GitError("x"), 1, 500),
        (HandoffBlocked([]), 1, 500),
    ],
)
def test_one_mapping_to_exit_codes_and_http_statuses(
    error: PassdownError, exit_code: int, status: int
) -> None:
    assert exit_code_for(error) == exit_code
    assert http_status_for(error) == status


def test_tool_error_message_carries_the_hint_and_is_redacted() -> None:
    text = tool_error_message(UsageError(f"bad token {TOKEN}", hint="pass --new-version"))
    assert TOKEN not in text
    assert text.startswith("bad token [REDACTED")
    assert text.endswith(" (hint: pass --new-version)")


def test_handoff_blocked_names_the_failed_checks() -> None:
    from passdown.coordinator._checks import CheckResult

    failed = CheckResult(name="git_head", severity="error", ok=False, message="HEAD moved")
    passed = CheckResult(name="schema", severity="error", ok=True, message="ok")
    exc = HandoffBlocked([failed, passed])
    assert exc.message == "the handoff failed 1 check(s): git_head: HEAD moved"
    assert exc.checks == [failed, passed]


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


@pytest.mark.parametrize("part", ["execute", "prepare", "context", "checks", "lifecycle", "build"])
def test_coordinator_parts_never_import_the_class(part: str) -> None:
    """core imports its parts, never the other way round (no import cycle)."""
    assert "passdown.coordinator._core" not in _imports(SRC / "coordinator" / f"_{part}.py")


def test_async_twins_have_the_sync_signatures() -> None:
    for name in ("prepare_handoff", "execute_handoff", "launch_handoff", "verify", "on_threshold"):
        twin, sync = getattr(HandoffCoordinator, name), getattr(HandoffCoordinator, f"{name}_sync")
        assert inspect.iscoroutinefunction(twin), name
        assert inspect.signature(twin) == inspect.signature(sync), name
        assert not any(
            p.kind is p.VAR_KEYWORD for p in inspect.signature(sync).parameters.values()
        ), name
