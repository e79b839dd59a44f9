"""The package's layers, read from the source: imports point only downward and never in a cycle,
and SQL is written only in ``simstore.storage``.

The import graph is built with ``ast`` (nothing is imported): every ``import`` and ``from ...
import`` of a ``simstore`` module, at any depth (a function-level import runs too). An import
under ``if TYPE_CHECKING:`` is a type hint: only type checkers follow it, so the layer check lets
it point upward, but the cycle check counts it (a circle of type hints is still two modules that
need each other). The ``else:`` branch of that ``if`` runs, so its imports are run-time imports.
``from simstore import ...`` imports the package, the top layer, whatever name it takes.

SQL is found with ``ast`` too: a call of a SQLAlchemy statement builder (``select``, ``insert``,
``text``, ``func``, ...) or of a method on one, an ``execute``/``exec_driver_sql`` call, and any
use of a table (or a statement) of ``simstore.storage.schema``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "simstore"

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

STORAGE = "simstore.storage"

SQL_BUILDERS = frozenset(
    {
        "select", "insert", "update", "delete", "text", "func", "union", "union_all",
        "intersect", "except_", "exists", "case", "cast", "extract", "literal",
        "literal_column", "column", "table", "and_", "or_", "not_", "desc", "asc", "distinct",
        "bindparam", "tuple_", "values", "null", "true", "false", "lateral", "join",
        "outerjoin", "over", "type_coerce", "any_", "all_", "nulls_first", "nulls_last",
        "collate", "between", "label",
    }
)  # fmt: skip
"""SQLAlchemy's statement and expression builders (``sa.select``, ``sa.func.count``, ...)."""
EXECUTES = frozenset({"execute", "exec_driver_sql", "scalar"})
"""Methods that run SQL on a connection."""


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


def resolve(name: str, modules: Mapping[str, object]) -> str:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name


def imports(
    module: str, node: ast.AST, modules: Mapping[str, Path], hint: bool = False
) -> Iterator[tuple[str, bool]]:
    """The simstore modules that ``node`` imports, itself or anywhere below it, each with
    whether it is a type hint (under ``if TYPE_CHECKING:``; the ``else:`` branch runs)."""
    if isinstance(node, ast.If) and is_type_checking(node.test):
        for statement in node.body:
            yield from imports(module, statement, modules, True)
        for statement in node.orelse:
            yield from imports(module, statement, modules, hint)
        return
    if isinstance(node, ast.Import):
        yield from ((resolve(alias.name, modules), hint) for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".")
            if modules[module].name != "__init__.py":
                package = package[:-1]
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, base] if base else package)
        for alias in node.names:
            name = f"{base}.{alias.name}"
            yield resolve(name if name in modules else base, modules), hint
    for child in ast.iter_child_nodes(node):
        yield from imports(module, child, modules, hint)


def graph(
    sources: Mapping[str, str] | None = None, *, type_hints: bool = False
) -> dict[str, set[str]]:
    """module -> the simstore modules it imports (at run time; ``type_hints``: type hints too).
    ``sources`` (module -> source) stands in for the package in the tests of the checks."""
    modules: Mapping[str, Path] = MODULES
    if sources is None:
        sources = {module: path.read_text(encoding="utf-8") for module, path in MODULES.items()}
    else:
        modules = {module: Path(module.replace(".", "/") + ".py") for module in sources}
    edges = {}
    for module, source in sources.items():
        found = imports(module, ast.parse(source), modules)
        targets = {target for target, hint in found if target and (type_hints or not hint)}
        edges[module] = targets - {module}
    return edges


def upward(edges: Mapping[str, set[str]]) -> list[str]:
    """Each import of a module above the importer's layer."""
    return [
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for module, targets in edges.items()
        for target in sorted(targets)
        if layer_of(target) > layer_of(module)
    ]


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Every circle the depth-first walk meets, each as the modules on it."""
    # a package's own __init__ runs before its modules: an edge from a module to the package that
    # holds it is implied by Python, not a choice, and is left out
    edges = {m: {t for t in ts if not m.startswith(t + ".")} for m, ts in edges.items()}
    state: dict[str, int] = {}
    found: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(edges.get(module, ())):
            if state.get(target) == 1:
                found.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    return found


def _schema_sql() -> frozenset[str]:
    """The names of ``simstore.storage.schema`` that are SQL: its tables and metadata, and the
    functions that return a statement (annotated ``sa.*``)."""
    tree = ast.parse(MODULES["simstore.storage.schema"].read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if ast.unparse(node.value.func) in ("sa.Table", "sa.MetaData"):
                names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
        elif isinstance(node, ast.FunctionDef) and _returns_sql(node):
            names.add(node.name)
    return frozenset(names)


def _returns_sql(function: ast.FunctionDef) -> bool:
    return function.returns is not None and ast.unparse(function.returns).startswith("sa.")


SCHEMA_SQL = _schema_sql()


def _dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None unless a chain of names."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def sql_sites(source: str) -> list[tuple[int, str]]:
    """Where ``source`` writes or runs SQL: (line, code) of each outermost SQL expression."""
    tree = ast.parse(source)
    alchemy: set[str] = set()  # names bound to sqlalchemy or to a module of it
    builders: set[str] = set()  # statement builders imported by name (from sqlalchemy import x)
    tables: set[str] = set()  # schema tables and statements imported by name
    schemas: set[str] = set()  # names bound to the schema module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "sqlalchemy":
                    alchemy.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                bound = alias.asname or alias.name
                if node.module.split(".")[0] == "sqlalchemy":
                    (builders if alias.name in SQL_BUILDERS else alchemy).add(bound)
                elif node.module == "simstore.storage.schema" and alias.name in SCHEMA_SQL:
                    tables.add(bound)
                elif node.module == "simstore.storage" and alias.name == "schema":
                    schemas.add(bound)

    def is_sql(node: ast.AST) -> bool:
        chain = _dotted(node.func if isinstance(node, ast.Call) else node)
        if chain is not None:
            if chain[0] in tables or (
                chain[0] in schemas and chain[1:2] and chain[1] in SCHEMA_SQL
            ):
                return True
            if isinstance(node, ast.Call) and (
                chain[0] in builders
                or (chain[0] in alchemy and any(part in SQL_BUILDERS for part in chain[1:]))
            ):
                return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return node.func.attr in EXECUTES or is_sql(node.func.value)
        return False

    sites: list[tuple[int, str]] = []

    def walk(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return
        if isinstance(node, ast.expr) and is_sql(node):
            sites.append((node.lineno, ast.unparse(node)[:80]))
            return
        for child in ast.iter_child_nodes(node):
            walk(child)

    walk(tree)
    return sites


def sql_outside_storage() -> dict[str, list[tuple[int, str]]]:
    """Each file outside ``simstore/storage/`` that writes SQL, with where."""
    found = {}
    for module, path in sorted(MODULES.items()):
        if module == STORAGE or module.startswith(STORAGE + "."):
            continue
        sites = sql_sites(path.read_text(encoding="utf-8"))
        if sites:
            found[path.relative_to(PACKAGE.parent).as_posix()] = sites
    return found


def test_every_module_imports_only_its_own_layer_or_below() -> None:
    assert upward(graph()) == []


def test_the_import_graph_has_no_cycle_even_counting_type_hints() -> None:
    assert cycles(graph(type_hints=True)) == []


def test_no_sql_is_written_outside_storage() -> None:
    assert sql_outside_storage() == {}


@pytest.mark.parametrize("layer", [prefix for _, prefixes in LAYERS[1:-1] for prefix in prefixes])
def test_each_layer_says_what_it_owns(layer: str) -> None:
    path = MODULES[layer]
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert docstring, f"{path} needs a docstring saying what the layer owns and may import"


# --- the checks can fail: each is fed a small source or graph that breaks its rule -------------


def test_the_graph_sees_a_known_edge_and_tells_type_hints_apart() -> None:
    # the checks above would pass vacuously on an empty graph: facts read off the source
    edges, hinted = graph(), graph(type_hints=True)
    assert "simstore.policy.policies" in edges["simstore.storage._finder"]
    assert "simstore.store" in hinted["simstore.spark"]  # a type-hint-only import
    assert "simstore.store" not in edges["simstore.spark"]


def test_a_circle_of_type_hints_is_a_cycle() -> None:
    sources = {
        "simstore.store": "from simstore.io import report\n",
        "simstore.io.report": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    from simstore.store import SimStore\n"
        ),
    }
    assert cycles(graph(sources)) == []  # at run time, no circle
    assert cycles(graph(sources, type_hints=True)) == [
        ["simstore.io.report", "simstore.store", "simstore.io.report"]
    ]


def test_the_else_branch_of_type_checking_runs() -> None:
    sources = {
        "simstore.storage.reads": (
            "import typing\n"
            "if typing.TYPE_CHECKING:\n"
            "    from simstore.results import Stats\n"
            "else:\n"
            "    from simstore.store import SimStore\n"
        ),
        "simstore.results": "",
        "simstore.store": "",
    }
    edges = graph(sources)
    assert edges["simstore.storage.reads"] == {"simstore.store"}
    assert upward(edges) == ["simstore.storage.reads (storage) imports simstore.store (facade)"]


def test_importing_from_the_package_in_a_lower_layer_is_upward() -> None:
    sources = {
        "simstore": "from simstore.store import SimStore\n",
        "simstore.store": "",
        "simstore.storage": "",
        "simstore.storage.db": "from simstore import SimStore\n",
        "simstore.io.report": "from simstore import storage\n",  # a module: allowed
    }
    edges = graph(sources)
    assert edges["simstore.storage.db"] == {"simstore"}
    assert upward(edges) == ["simstore.storage.db (storage) imports simstore (package)"]


@pytest.mark.parametrize(
    "source",
    [
        "import sqlalchemy as sa\nrows = conn.execute(sa.select(t.c.key))\n",
        "import sqlalchemy as sa\ncount = sa.func.count()\n",
        "import sqlalchemy\nq = sqlalchemy.text('SELECT 1')\n",
        "from sqlalchemy import text\nq = text('DELETE FROM simstore_fingerprints')\n",
        "from sqlalchemy.dialects.postgresql import insert\nq = insert(t).values(x=1)\n",
        "conn.exec_driver_sql('VACUUM')\n",
        "from simstore.storage.schema import fingerprints\nw = fingerprints.c.key == 'a'\n",
        "from simstore.storage.schema import decision_log\nlog = decision_log(3)\n",
        "from simstore.storage import schema\nq = schema.decisions.insert()\n",
    ],
)
def test_sql_written_outside_storage_is_found(source: str) -> None:
    assert len(sql_sites(source)) == 1, source


def test_code_that_is_not_sql_is_not_found() -> None:
    source = (
        "import sqlalchemy as sa\n"
        "from sqlalchemy.engine import Connection\n"
        "from simstore.storage.schema import kept_text_of\n"
        "def f(conn: Connection, frame) -> sa.Engine:\n"
        "    frame.select('key').where(frame.key > 1)\n"  # a Spark frame
        "    text = kept_text_of(None, None)\n"
        "    raise sa.exc.OperationalError('x', None, None)\n"
    )
    assert sql_sites(source) == []
