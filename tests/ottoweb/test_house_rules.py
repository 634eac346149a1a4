"""The layers' one rule each (docs/architecture.md), read from the source with `ast`.

Every import counts, at module level or inside a function; only an import under
`if TYPE_CHECKING:` is left out of the cycle rule (it never runs). Migrations are not product code
here: their SQL is the schema's. Each failure names the offending module and line (or, for the
size rule, its line count).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("memory", "lessons", "accounts", "ottoweb")


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    line: int
    target: str  # the imported module, resolved to a product module where it is one
    names: tuple[str, ...]  # what `from target import ...` takes
    runtime: bool  # False under `if TYPE_CHECKING:`


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _sources() -> dict[str, tuple[Path, ast.Module]]:
    found = {}
    for top in PRODUCT:
        for path in sorted((ROOT / top).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            found[_module_name(path)] = (path, ast.parse(path.read_text(), str(path)))
    return found


def _is_package(module: str) -> bool:
    return _sources()[module][0].name == "__init__.py"


def _resolve(name: str) -> str:
    """The longest product module `name` starts with, or `name` itself outside the product."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in _sources():
            return ".".join(parts[:end])
    return name


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


@cache
def _imports() -> tuple[Import, ...]:
    found = []
    for module, (_path, tree) in _sources().items():
        typing_only = _type_checking_lines(tree)
        package = module if _is_package(module) else module.rpartition(".")[0]
        for node in ast.walk(tree):
            runtime = getattr(node, "lineno", 0) not in typing_only
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found.append(Import(module, node.lineno, _resolve(alias.name), (), runtime))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                names = tuple(alias.name for alias in node.names)
                # `from memory import services` imports the module memory.services.
                targets = {
                    f"{source}.{n}" if f"{source}.{n}" in _sources() else _resolve(source) for n in names
                }
                for target in sorted(targets):
                    found.append(Import(module, node.lineno, target, names, runtime))
    return tuple(found)


def _within(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _where(module: str, line: int) -> str:
    return f"{_sources()[module][0].relative_to(ROOT)}:{line}"


def _offences(
    importers: tuple[str, ...], forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()
) -> list[str]:
    return sorted(
        f"{_where(i.module, i.line)} imports {i.target}"
        for i in _imports()
        if _within(i.module, *importers) and _within(i.target, *forbidden) and not _within(i.module, *allowed)
    )


def _calls(module: str) -> Iterator[tuple[int, str]]:
    """Every dotted name called in `module` (`connection.cursor`, `Item.objects.raw`), with its line."""
    for node in ast.walk(_sources()[module][1]):
        if isinstance(node, ast.Call):
            yield node.lineno, ast.unparse(node.func)


def test_the_engine_imports_nothing_of_django_or_the_project():
    offences = _offences(("memory.engine",), ("django", "ninja", "celery", "memory", "lessons", "ottoweb"))
    offences = [o for o in offences if not o.split(" imports ")[1].startswith("memory.engine")]
    assert not offences, "\n".join(offences)


# Raw SQL: a cursor, a raw queryset, `.extra()` or a RawSQL expression.
RAW_SQL = ("cursor", "raw", "extra", "RawSQL")
RAW_SQL_HOMES = ("memory.storage", "accounts.storage", "ottoweb.db")


def test_storage_and_the_database_backend_are_the_only_raw_sql():
    offences = sorted(
        f"{_where(module, line)} calls {name}()"
        for module in _sources()
        if not _within(module, *RAW_SQL_HOMES)
        for line, name in _calls(module)
        if name.rpartition(".")[2] in RAW_SQL
    )
    assert not offences, "\n".join(offences)


INTERFACES = ("tasks", "api", "views", "mcp")


def _layer(name: str) -> tuple[str, ...]:
    """Every product module of one layer: memory.api, lessons.api, ottoweb.api ..."""
    return tuple(m for m in _sources() if m.split(".")[1:2] == [name])


def test_services_import_no_task_api_view_or_mcp_module():
    services = ("memory.services", "lessons.services", "accounts.services")
    forbidden = tuple(m for layer in INTERFACES for m in _layer(layer))
    offences = _offences(services, forbidden)
    assert not offences, "\n".join(offences)


def test_the_api_and_mcp_do_not_import_each_other():
    api, mcp = _layer("api"), _layer("mcp")
    offences = _offences(api, mcp) + _offences(mcp, api)
    assert not offences, "\n".join(offences)


def test_views_import_neither_the_api_nor_mcp():
    offences = _offences(_layer("views"), _layer("api") + _layer("mcp"))
    assert not offences, "\n".join(offences)


# What a read may take from memory.services: look-ups that write nothing.
READ_HELPERS = {"session_embedder", "get_user_session", "straggler_vectors"}
READS = ("memory.recall", "memory.reads")


def test_a_read_calls_no_service_that_writes():
    offences = []
    for module in READS:
        for node in ast.walk(_sources()[module][1]):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "services"
                and node.attr not in READ_HELPERS
            ):
                offences.append(f"{_where(module, node.lineno)} uses services.{node.attr}")
        offences += [
            f"{_where(i.module, i.line)} imports {name} from {i.target}"
            for i in _imports()
            if i.module == module and _within(i.target, "memory.services")
            for name in i.names
            if name not in READ_HELPERS | {"services"}
        ]
    assert not offences, "\n".join(sorted(offences))


# Memoised functions and module-level dicts filled at run time: a cache. Of rows only in storage (the
# homes of raw SQL); the engine has no database (the rule above); elsewhere only these, which hold no rows.
MEMOISE = {"cache", "lru_cache", "functools.cache", "functools.lru_cache"}
NOT_ROWS = {
    "memory.services.compaction.summarizer_for",  # a summariser client per OTTO_SUMMARIZER spec
    "ottoweb.heap.glibc",  # the C library, loaded once
    "memory.services.embedding._embedding_sent",  # when an embedding task was last sent: a debounce
}


def _caches(module: str) -> Iterator[tuple[int, str]]:
    tree = _sources()[module][1]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for deco in node.decorator_list:
                name = ast.unparse(deco.func if isinstance(deco, ast.Call) else deco)
                if name in MEMOISE:
                    yield node.lineno, f"{module}.{node.name}"
    empty = {
        target.id: node.lineno
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and node.value is not None
        and ast.unparse(node.value) in ("{}", "dict()", "OrderedDict()", "collections.OrderedDict()")
        or isinstance(node, ast.Assign | ast.AnnAssign)
        and isinstance(node.value, ast.Call)
        and ast.unparse(node.value.func) in ("defaultdict", "collections.defaultdict")
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(func):
            filled = (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in empty
            ) or (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in empty
                and node.func.attr in ("setdefault", "update", "__setitem__")
            )
            if filled:
                name = node.value.id if isinstance(node, ast.Subscript) else node.func.value.id  # type: ignore[union-attr]
                yield empty[name], f"{module}.{name}"


def test_caches_live_only_in_storage():
    offences = sorted(
        {
            f"{_where(module, line)} caches in {name}"
            for module in _sources()
            if not _within(module, *RAW_SQL_HOMES, "memory.engine")
            for line, name in _caches(module)
            if name not in NOT_ROWS
        }
    )
    assert not offences, "\n".join(offences)


def test_evaluation_is_imported_by_management_commands_only():
    offences = [
        o
        for o in _offences(PRODUCT, ("memory.evaluation",), allowed=("memory.evaluation",))
        if ".management.commands." not in o.replace("/", ".")
    ]
    assert not offences, "\n".join(offences)


# A module longer than this is doing several jobs: the signal to split it (docs/architecture.md).
MAX_LINES = 450


def test_no_module_is_over_450_lines():
    offences = sorted(
        f"{path.relative_to(ROOT)} has {lines} lines"
        for path, _tree in _sources().values()
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    )
    assert not offences, "\n".join(offences)


def test_no_module_imports_another_that_imports_it_back():
    graph: dict[str, set[str]] = {m: set() for m in _sources()}
    lines: dict[tuple[str, str], int] = {}
    for i in _imports():
        if i.runtime and i.target in graph and i.target != i.module:
            # A package's own submodules, re-exported by its __init__, are its parts, not a cycle.
            if _is_package(i.target) and _within(i.module, i.target):
                continue
            graph[i.module].add(i.target)
            lines.setdefault((i.module, i.target), i.line)
    cycles = [scc for scc in _strongly_connected(graph) if len(scc) > 1]
    described = [
        " ; ".join(
            f"{_where(a, lines[(a, b)])} imports {b}" for a in sorted(scc) for b in sorted(graph[a] & scc)
        )
        for scc in cycles
    ]
    assert not described, "\n".join(described)


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                scc = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    scc.add(top)
                    if top == node:
                        break
                found.append(scc)
    return found
