"""The package's layers, read from the source: imports point only downward and never in a cycle.

The import graph is built with ``ast`` (nothing is imported): every ``import`` and ``from ...
import`` of a ``simstore`` module, at any depth (a function-level import runs too), except those
under ``if TYPE_CHECKING:``, which only type checkers follow and so may point anywhere.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "simstore"

FOUNDATION = ("simstore.errors", "simstore._version", "simstore._moved", "simstore.validate")
LAYERS = (
    (
        "foundation",
        ("simstore.errors", "simstore._version", "simstore._moved", "simstore.validate"),
    ),
    ("text", ("simstore.text",)),
    ("results", ("simstore.results",)),
    ("policy", ("simstore.policy",)),
    ("storage", ("simstore.storage",)),
    ("records in and out", ("simstore.io",)),
    ("facade", ("simstore.store",)),
    ("front ends", ("simstore.cli", "simstore.contrib", "simstore.spark")),
    ("package", ("simstore",)),
)
"""Bottom to top: a module may import at run time only modules of its own layer or below."""


def module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


MODULES = module_names()


def layer_of(module: str) -> int:
    best, rank = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    assert rank >= 0, f"{module} belongs to no layer: add it to LAYERS"
    return rank


def is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name | ast.Attribute) and ast.unparse(test).endswith(
        "TYPE_CHECKING"
    )


def imported(module: str, node: ast.AST) -> Iterator[str]:
    """The simstore modules that ``node`` imports at run time, anywhere below it."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and is_type_checking(child.test):
            for statement in child.orelse:
                yield from imported(module, statement)
            continue
        if isinstance(child, ast.Import):
            yield from (resolve(alias.name) for alias in child.names)
        elif isinstance(child, ast.ImportFrom):
            base = child.module or ""
            if child.level:
                package = module.split(".")
                if MODULES[module].name != "__init__.py":
                    package = package[:-1]
                package = package[: len(package) - child.level + 1]
                base = ".".join([*package, base] if base else package)
            for alias in child.names:
                yield resolve(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
        yield from imported(module, child)


def resolve(name: str) -> str:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def graph() -> dict[str, set[str]]:
    edges = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        edges[module] = {target for target in imported(module, tree) if target} - {module}
    return edges


def test_every_module_imports_only_its_own_layer_or_below() -> None:
    upward = [
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for module, targets in graph().items()
        for target in sorted(targets)
        if layer_of(target) > layer_of(module) and not module.startswith(target + ".")
    ]
    assert upward == []


def test_the_run_time_import_graph_has_no_cycle() -> None:
    edges = graph()
    # a package's own __init__ runs before its modules: an edge from a module to the package that
    # holds it is implied by Python, not a choice, and is left out
    edges = {m: {t for t in ts if not m.startswith(t + ".")} for m, ts in edges.items()}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert cycles == []


@pytest.mark.parametrize("layer", [prefix for _, prefixes in LAYERS[1:-1] for prefix in prefixes])
def test_each_layer_says_what_it_owns(layer: str) -> None:
    path = MODULES[layer]
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert docstring, f"{path} needs a docstring saying what the layer owns and may import"


def test_the_graph_sees_a_known_edge_and_skips_type_hints() -> None:
    # the checks above would pass vacuously on an empty graph: two facts read off the source
    edges = graph()
    assert "simstore.policy.policies" in edges["simstore.storage._finder"]
    assert "simstore.store" not in edges["simstore.io.ingest"]  # a type-hint-only import
