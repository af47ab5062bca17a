"""Private by default (issue 14): a module is public only when it is part of the API
(httpx's habit); everything else carries a leading underscore, so what users may import
is visible from the file names."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import passdown

SRC = Path(passdown.__file__).parent
PUBLIC_MODULES = {
    "passdown.errors",  # the error tree users catch
    "passdown.handoff",  # the handoff model (its JSON Schema is published)
    "passdown.records",  # the store's record model
    "passdown.transcript",  # the events an agent plugin emits
    "passdown.agents.base",  # the interface an agent plugin implements
}


def _entry_point_modules() -> set[str]:
    pyproject = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text())
    agents = pyproject["project"]["entry-points"]["passdown.agents"]
    return {target.split(":")[0] for target in agents.values()}


def _modules() -> list[str]:
    names = []
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        if parts[-1] in ("__init__", "__main__"):
            continue  # packages: public or private by their own name
        names.append(".".join(parts))
    return names


def test_every_module_outside_the_api_is_private() -> None:
    allowed = PUBLIC_MODULES | _entry_point_modules()
    public = {m for m in _modules() if not any(p.startswith("_") for p in m.split("."))}
    assert public - allowed == set(), "name these modules with a leading underscore"
    assert allowed - {m for m in _modules()} <= {
        m for m in _entry_point_modules() if (SRC.parent / m.replace(".", "/")).is_dir()
    }, "a public module named here no longer exists"


def test_every_package_states_its_public_names() -> None:
    for init in SRC.rglob("__init__.py"):
        module = importlib.import_module(".".join(init.parent.relative_to(SRC.parent).parts))
        assert isinstance(getattr(module, "__all__", None), list), module.__name__
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{module.__name__}.{name}"


def test_the_top_level_api_resolves() -> None:
    for name in passdown.__all__:
        assert getattr(passdown, name) is not None, name
    assert issubclass(passdown.SessionNotFound, passdown.PassdownError)
