"""The import graph of `src/passdown` has no circle: every module stands above all it
imports, so each can be read, tested and changed from the floor up.

The graph is read from the source (`ast`), with every import statement counted wherever
it stands: at module level, inside a function (the lazy imports that keep the CLI and
the hooks fast), under `if TYPE_CHECKING:`. `import a.b.c` and `from a.b import c`
count as an edge to the module they name (`a.b.c`, or `a.b` when `c` is a name inside
it), not to the packages Python runs first on the way. Imports by a string
(`importlib.import_module`, entry points) are not seen.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "passdown"


def modules(src: Path, root: str) -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, whether it is a package's `__init__`)."""
    found = {}
    for path in sorted((src / root).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts.pop()
        found[".".join(parts)] = (path, package)
    return found


def import_graph(src: Path, root: str) -> dict[str, set[str]]:
    """Module -> the modules of `root` it imports (itself left out)."""
    known = modules(src, root)

    def nearest(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, (path, package) in known.items():
        here = name if package else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - node.level + 1]
                    of = ".".join([*base, node.module] if node.module else base)
                else:
                    of = node.module or ""
                targets = [
                    f"{of}.{alias.name}" if f"{of}.{alias.name}" in known else of
                    for alias in node.names
                ]
            for target in targets:
                if target == root or target.startswith(root + "."):
                    found = nearest(target)
                    if found is not None and found != name:
                        edges.add(found)
        graph[name] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def without(graph: dict[str, set[str]], left_out: frozenset[str]) -> dict[str, set[str]]:
    return {m: edges - left_out for m, edges in graph.items() if m not in left_out}


def test_the_import_graph_has_no_circle() -> None:
    graph = import_graph(SRC, ROOT)
    found = circles(graph)
    shown = [" -> ".join(c) + f"  ({', '.join(sorted(graph[c[0]] & set(c)))})" for c in found]
    assert shown == []


def test_the_graph_is_read_as_python_reads_imports() -> None:
    """Relative, lazy and type-checking imports are edges; an imported name that is not
    a module is an edge to the module that holds it."""
    graph = import_graph(SRC, ROOT)
    assert "passdown._platform_os" in graph["passdown._platform"]
    assert "passdown._fsio" in graph["passdown._locks"]  # inside a function
    assert "passdown.errors" in graph["passdown.integrations._command"]  # a name in it
    assert "passdown.records" in graph["passdown.coordinator._lifecycle"]  # TYPE_CHECKING


def test_a_planted_circle_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg._a import thing\n")
    (pkg / "_a.py").write_text("thing = 1\n\ndef f():\n    from .sub import _b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "_b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                        "    import pkg\n")  # fmt: skip
    (pkg / "_c.py").write_text("from pkg.sub import _b\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph == {
        "pkg": {"pkg._a"},
        "pkg._a": {"pkg.sub._b"},
        "pkg._c": {"pkg.sub._b"},
        "pkg.sub": set(),
        "pkg.sub._b": {"pkg"},
    }
    assert circles(graph) == [["pkg", "pkg._a", "pkg.sub._b"]]
    assert circles(without(graph, frozenset({"pkg._a"}))) == []


def test_the_seam_imports_only_the_standard_library_and_errors() -> None:
    """`_platform` and its parts stand on the floor: nothing of passdown below them but
    the error tree (also checked by lint-imports' contract in pyproject.toml)."""
    graph = import_graph(SRC, ROOT)
    seam = {m for m in graph if m.startswith("passdown._platform")}
    assert seam == {
        "passdown._platform", "passdown._platform_os", "passdown._platform_paths",
        "passdown._platform_launch",
    }  # fmt: skip
    for module in seam:
        assert graph[module] - seam <= {"passdown.errors"}, module
