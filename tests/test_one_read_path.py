"""One read path: an export reads a session in full or resumes it from a checkpoint.
Nothing in passdown forks a worker, loads a library through ctypes, or reads a speed
switch beside `PASSDOWN_NO_CHECKPOINT`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "passdown"
RETIRED_SWITCHES = (
    "PASSDOWN_NO_FORK",
    "PASSDOWN_SINGLE_CORE",
    "PASSDOWN_TWO_CORE_STATS",
    "PASSDOWN_NO_FORWARD_PASS",
    "PASSDOWN_NO_OPENSSL_HASH",
)


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_fork_no_ctypes_no_speed_switch(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert not any(a.name.split(".")[0] == "ctypes" for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert (node.module or "").split(".")[0] != "ctypes"
        elif isinstance(node, ast.Attribute) and node.attr in ("fork", "forkpty"):
            raise AssertionError(f"{path.name}:{node.lineno} calls {node.attr}")
    for switch in RETIRED_SWITCHES:
        assert switch not in text


def test_the_only_switch_is_the_checkpoints() -> None:
    """Every PASSDOWN_* variable that changes how a session is read is this one."""
    from passdown import _checkpoint

    assert _checkpoint.DISABLE_ENV == "PASSDOWN_NO_CHECKPOINT"
    named = set()
    for path in _modules():
        named |= set(re.findall(r"PASSDOWN_[A-Z_]+", path.read_text(encoding="utf-8")))
    assert not named & set(RETIRED_SWITCHES)


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in _modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert not long
