"""Packaging promises: what src/ imports is declared, PostgreSQL is an extra with a clear
error, and the pinned agent CLI versions have one source."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import sys
import tomllib
from pathlib import Path

import pytest

from passdown.errors import StoreError
from passdown.store import open_store

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _requirement_name(spec: str) -> str:
    return re.split(r"[\s\[<>=!~;]", spec, maxsplit=1)[0].lower().replace("_", "-")


def _top_level_imports(folder: Path) -> set[str]:
    names: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"passdown", "__future__"}


def test_every_third_party_import_of_src_is_declared() -> None:
    project = PYPROJECT["project"]
    declared = {_requirement_name(s) for s in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        declared |= {_requirement_name(s) for s in extra}
    distributions = importlib.metadata.packages_distributions()
    undeclared = {}
    for module in _top_level_imports(ROOT / "src" / "passdown"):
        dists = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        if not dists & declared:
            undeclared[module] = sorted(dists)
    assert undeclared == {}


def test_postgres_is_an_extra_and_its_absence_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = PYPROJECT["project"]
    assert not any(_requirement_name(s).startswith("psycopg") for s in project["dependencies"])
    assert {"psycopg", "psycopg-pool"} <= {
        _requirement_name(s) for s in project["optional-dependencies"]["postgres"]
    }
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name.startswith("psycopg") else real_find_spec(name, *a),
    )
    with pytest.raises(StoreError) as caught:
        open_store("postgresql://u:p@127.0.0.1:1/db")
    assert "postgres extra" in caught.value.message
    assert caught.value.hint == "pip install 'passdown[postgres]'"


def test_agent_cli_pins_have_one_source() -> None:
    pins = {}
    for line in (ROOT / ".ci" / "agent-pins.txt").read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) == 3 and not line.startswith("#"):
            pins[fields[0]] = fields[2]
    assert set(pins) == {
        "claude",
        "codex",
        "gemini",
        "qwen",
        "opencode",
        "pi",
        "copilot",
        "cline",
        "kilo",
        "droid",
        "auggie",
        "cn",
    }
    copies = [
        ROOT / ".ci" / "install-agents.sh",
        ROOT / "tests" / "e2e" / "agents.py",
        ROOT / "README.md",
    ]
    for path in copies:
        text = path.read_text(encoding="utf-8")
        for name, version in pins.items():
            assert not re.search(rf"(?<![\d.]){re.escape(version)}(?![\d.])", text), (
                f"{path.name} repeats the pin of {name} ({version}); read .ci/agent-pins.txt"
            )
