"""The query layer's imports go one way: down the module list, never up to the public classes."""

import ast
from pathlib import Path

import pytest

import bcolzx

QUERY = Path(bcolzx.__file__).parent / "_query"
#: The modules of bcolzx._query, each importing only those before it
#: (bcolzx/_query/__init__.py lists them in this order).
ORDER = ["tree", "kinds", "pyvm", "parse", "numexpr_vm", "expr", "textscan", "zonemap", "blocks",
         "scope", "evaluate", "planner"]
#: What the query layer does not import at module level: the layers above it
#: (public classes and functions, optional formats), and its sibling _storage
#: (columns come in as objects with an ``engine`` handle).
FORBIDDEN = ("bcolzx.carray", "bcolzx.ctable", "bcolzx.toplevel", "bcolzx.interop",
             "bcolzx.compat", "bcolzx.cli", "bcolzx._storage")


def _imports(tree):
    """(module imported, at module level?) for every import, except those only
    for type checkers (``if TYPE_CHECKING:``)."""
    found = []

    def visit(node, top):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", "") == "TYPE_CHECKING":
                continue
            if isinstance(child, ast.Import):
                found.extend((a.name, top) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module:
                base = child.module
                found.extend((f"{base}.{a.name}", top) for a in child.names)
            else:
                visit(child, top and not isinstance(child, (ast.FunctionDef,
                                                            ast.AsyncFunctionDef)))
    visit(tree, True)
    return found


def test_every_module_of_the_layer_is_in_the_order():
    assert sorted(p.stem for p in QUERY.glob("*.py") if p.stem != "__init__") == sorted(ORDER)


@pytest.mark.parametrize("name", ORDER)
def test_imports_go_down_the_list_and_never_up(name):
    imported = _imports(ast.parse((QUERY / f"{name}.py").read_text(encoding="utf-8")))
    for module, top in imported:
        assert not (top and module.startswith(FORBIDDEN)), f"_query.{name} imports {module}"
        if module.startswith("bcolzx._query."):
            other = module.split(".")[2]
            assert ORDER.index(other) < ORDER.index(name), f"_query.{name} imports {module}"
    lazily = [m for m, top in imported if not top and m.startswith("bcolzx.")]
    # The user's settings, read per call; the registry that loads vm='dask' on first use.
    assert set(lazily) <= {"bcolzx.defaults.defaults", "bcolzx.interop.load"}, lazily


def test_the_package_imports_nothing():
    tree = ast.parse((QUERY / "__init__.py").read_text(encoding="utf-8"))
    assert not _imports(tree)
