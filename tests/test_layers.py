"""The layers of kit/ hold: no import cycle between its modules, none between its packages
(at every depth: ``kit.campaign`` and ``kit.targets``, ``kit.targets.host`` and
``kit.targets.android``...), and no module imports a private name (``_x``) of another (all
read from the source with ``ast``: imports under ``if TYPE_CHECKING:`` are for type
checkers only and never run)."""

from __future__ import annotations

import ast
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent / "kit"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(KIT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in KIT.rglob("*.py")}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for other in child.orelse:
                    walk(other)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            walk(child)

    walk(tree)
    return found


def imports_of(name: str) -> tuple[set[str], set[tuple[str, str]]]:
    """The kit modules ``name`` imports at run time, and the private names it imports
    (``(module, name)``)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    modules: set[str] = set()
    private: set[tuple[str, str]] = set()
    for node in _imports(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules.update(a.name for a in node.names if a.name in MODULES)
            continue
        if node.level:
            base = package.split(".")[:len(package.split(".")) - node.level + 1]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        if source not in MODULES:
            continue
        for alias in node.names:
            if f"{source}.{alias.name}" in MODULES:
                modules.add(f"{source}.{alias.name}")
                continue
            modules.add(source)
            if alias.name.startswith("_") and not alias.name.startswith("__"):
                private.add((source, alias.name))
    modules.discard(name)
    return modules, private


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def package_graph(graph: dict[str, set[str]], depth: int) -> dict[str, set[str]]:
    """``graph`` with each module folded into its package ``depth`` names deep (``kit.a.b.c``
    is ``kit.a`` at depth 2; ``kit.a``, a module or a package, stays itself). Imports
    inside one package are dropped."""
    def package(name: str) -> str:
        return ".".join(name.split(".")[:depth])

    folded: dict[str, set[str]] = {}
    for name, targets in graph.items():
        edges = folded.setdefault(package(name), set())
        edges.update(package(t) for t in targets)
    for name, edges in folded.items():
        edges.discard(name)
    return folded


def test_the_walk_sees_the_imports_it_checks() -> None:
    modules, _ = imports_of("kit.campaign.session")
    assert {"kit.campaign.loop", "kit.analysis.sequential", "kit.errors"} <= modules
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [frozenset({"a", "b", "c"})]
    modules = {"kit.p.x": {"kit.q.y"}, "kit.q.y": {"kit.p.z"}, "kit.p.z": set()}
    assert cycles(modules) == []  # no module cycle, but the packages p and q import each other
    assert cycles(package_graph(modules, 2)) == [frozenset({"kit.p", "kit.q"})]


def test_no_import_cycle_between_modules() -> None:
    graph = {name: imports_of(name)[0] for name in MODULES}
    assert set(cycles(graph)) == set()


def test_no_import_cycle_between_packages() -> None:
    graph = {name: imports_of(name)[0] for name in MODULES}
    deepest = max(len(name.split(".")) for name in MODULES)
    found = {depth: cycles(package_graph(graph, depth)) for depth in range(2, deepest)}
    assert found == {depth: [] for depth in range(2, deepest)}


def test_no_module_imports_a_private_name_of_another() -> None:
    found = {(name, source, attr) for name in MODULES
             for source, attr in imports_of(name)[1] if source != name}
    assert found == set(), sorted(found)
