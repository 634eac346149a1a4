"""The apps import one another one way only: lessons → memory → accounts, and ottoweb wires them.

Every .py file of the apps is parsed, not imported, and every import in it counts: at module
level, inside a function, under TYPE_CHECKING. ottoweb is the wiring app (settings, urls, asgi,
the NinjaAPI that composes the routers): it may import every app, and every app may import its
shared modules (errors, schemas, requests), so imports to and from ottoweb are not checked.
Between the others an import goes only down LAYERS: lessons may import memory and accounts,
memory may import accounts, accounts imports neither. What memory offers of lessons is registered
by lessons (memory/hooks.py).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WIRING = "ottoweb"
# Each app may import the apps after it, never one before it.
LAYERS = ("lessons", "memory", "accounts")
APPS = (*LAYERS, WIRING)


def imported_modules(tree: ast.AST) -> list[str]:
    """The absolute module names a file imports (a relative import stays inside its own app)."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def app_imports() -> dict[tuple[str, str], list[str]]:
    """(importing app, imported app) → the files that make such an import, for apps other than
    each other's own."""
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for module in imported_modules(tree):
                target = module.split(".")[0]
                where = str(path.relative_to(ROOT))
                if target in APPS and target != app and where not in found[(app, target)]:
                    found[(app, target)].append(where)
    return dict(found)


def test_the_import_scan_sees_function_local_imports():
    tree = ast.parse("def f():\n    from memory import hooks\n    import lessons.services\n")

    assert imported_modules(tree) == ["memory", "lessons.services"]


def test_no_two_apps_import_each_other():
    imports = app_imports()
    both_ways = {
        (a, b): {f"{a} → {b}": imports[(a, b)], f"{b} → {a}": imports[(b, a)]}
        for (a, b) in imports
        if a < b and (b, a) in imports and WIRING not in (a, b)
    }

    assert both_ways == {}


def test_apps_import_only_the_apps_below_them():
    upward = {
        f"{a} → {b}": files
        for (a, b), files in app_imports().items()
        if WIRING not in (a, b) and LAYERS.index(a) > LAYERS.index(b)
    }

    assert upward == {}
