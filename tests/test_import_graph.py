"""The package's modules import one another in one direction: no circle.

Every ``from .x import ...`` (at the top of a module or inside a function) is an
arrow; a circle would mean two layers that each need the other (the file format's
registry needed every estimator once: estimators now register themselves).
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "qmatch_sklearn"


def _module(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph():
    """``{module: set of the package's modules it imports}``."""
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        name = _module(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        arrows = graph.setdefault(name, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
                for alias in node.names:  # `from . import x` may name a module
                    candidate = f"{target}.{alias.name}"
                    arrows.add(candidate if (PACKAGE.parent / candidate.replace(".", "/")
                                             ).with_suffix(".py").exists() else target)
    return graph


def find_circle(graph):
    """One circle of the graph as a list of modules, or None."""
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if target == node or target not in graph:
                continue
            if state.get(target) == "open":
                return [*trail[trail.index(target):], target]
            if target not in state:
                circle = visit(target, [*trail, target])
                if circle:
                    return circle
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            circle = visit(start, [start])
            if circle:
                return circle
    return None


def test_the_package_has_no_import_circle():
    graph = import_graph()
    assert "qmatch_sklearn._classifier" in graph["qmatch_sklearn.__init__".rpartition(".")[0]]
    assert find_circle(graph) is None, " -> ".join(find_circle(graph))
    # the registry's old arrows (the file format importing every estimator) made one
    graph["qmatch_sklearn._persistence"].add("qmatch_sklearn._classifier")
    assert find_circle(graph) is not None


def test_the_circle_finder_finds_one():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set()}) is None
