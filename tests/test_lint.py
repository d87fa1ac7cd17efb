"""Lint and types: ``ruff check bcolzx`` and ``mypy`` (the public API), configured in
pyproject.toml, run on the source tree as part of the test suite; and the test suite's
own marks."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _source_tree() -> None:
    if not (ROOT / "pyproject.toml").is_file() or not (ROOT / "bcolzx").is_dir():
        pytest.skip("lint runs on the bcolzx source tree, which is not here")


def _tool(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install 'bcolzx[test]' installs it)")


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_ruff_finds_nothing_in_the_package():
    _source_tree()
    _tool("ruff")
    proc = _run(["ruff", "check", "--no-cache", "--output-format", "concise", "bcolzx"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_mypy_passes_on_the_public_api(tmp_path):
    _source_tree()
    _tool("mypy")
    # The files and options are [tool.mypy] of pyproject.toml; a fresh cache keeps the
    # run independent of earlier ones (and writes nothing into the source tree).
    proc = _run(["mypy", "--cache-dir", str(tmp_path / "cache")])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_checks_every_mixin_of_carray_and_ctable():
    # A mixin's body is checked only when its module is one of mypy's files and it
    # derives (for the type checker) from the protocol of what it uses of its class.
    _source_tree()
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    import bcolzx
    from bcolzx import _hosts

    files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    for public, host in ((bcolzx.carray, _hosts.ArrayHost), (bcolzx.ctable, _hosts.TableHost)):
        for cls in public.__mro__[1:-1]:
            path = cls.__module__.replace(".", "/") + ".py"
            assert path in files, f"{cls.__qualname__} ({path}) is not in [tool.mypy] files"
            source = (ROOT / path).read_text()
            assert f"class {cls.__name__}({host.__name__}):" in source, (
                f"{cls.__qualname__} does not derive from _hosts.{host.__name__} for mypy")


def _marks(function: ast.FunctionDef) -> set[str]:
    names = set()
    for node in function.decorator_list:
        node = node.func if isinstance(node, ast.Call) else node
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "pytest.mark":
            names.add(node.attr)
    return names


def test_every_stress_harness_has_a_timeout_of_its_own():
    # The suite's pytest-timeout (900 s, for tests that hang) would cut a harness that
    # runs for many minutes under pytest --stress; each sets its own.
    stress = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and "stress" in _marks(node):
                stress.append(node.name)
                assert "timeout" in _marks(node), f"{path.relative_to(ROOT)}::{node.name}"
    assert stress
