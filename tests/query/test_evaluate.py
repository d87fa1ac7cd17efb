"""Whole-operand evaluation: flavors, reductions, masks, and the lazily loaded Dask engine."""

import ast
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import bcolzx
from bcolzx._query import blocks
from bcolzx._query import evaluate as evaluate_module
from bcolzx._query.evaluate import evaluate, mask, resolve_flavor, resolve_vm
from bcolzx._query.expr import compile_expression
from bcolzx.errors import ExpressionError


def test_flavors_of_a_result():
    a = np.arange(10)
    e = compile_expression("a * 2")
    np.testing.assert_array_equal(evaluate(e, {"a": a}, {}, out_flavor="numpy"), a * 2)
    ca = evaluate(e, {"a": a}, {}, out_flavor="carray", new_carray=bcolzx.carray, chunklen=4)
    assert isinstance(ca, bcolzx.carray) and ca.chunklen == 4
    np.testing.assert_array_equal(ca[:], a * 2)
    with pytest.raises(TypeError, match="new_carray"):
        evaluate(e, {"a": a}, {}, out_flavor="carray")
    assert evaluate(compile_expression("sum(a)"), {"a": a}, {}, out_flavor="carray") == 45


def test_scalars_only_give_a_scalar_or_a_table_length():
    e = compile_expression("k + 1")
    assert evaluate(e, {}, {"k": 2}) == 3
    np.testing.assert_array_equal(evaluate(e, {}, {"k": 2}, out_flavor="numpy", length=3),
                                  [3, 3, 3])


def test_reductions_are_computed_block_by_block():
    a = np.arange(1000).reshape(500, 2)
    assert evaluate(compile_expression("np.sum(a)"), {"a": a}, {}, blen=7) == a.sum()
    np.testing.assert_array_equal(
        evaluate(compile_expression("sum(a, axis=1)"), {"a": a}, {}, blen=7,
                 out_flavor="numpy"), a.sum(axis=1))
    with pytest.raises(ExpressionError, match="out of bounds"):
        evaluate(compile_expression("sum(a, axis=2)"), {"a": a}, {})


def test_bad_vm_and_flavor():
    with pytest.raises(ValueError, match="vm must be"):
        resolve_vm("cython")
    with pytest.raises(ValueError, match="out_flavor must be"):
        resolve_flavor("pandas")
    assert resolve_vm("python") == "python" and resolve_flavor("numpy") == "numpy"


def test_mask_of_a_string_key():
    a = np.arange(6)
    np.testing.assert_array_equal(mask("a > 3", {"a": a}, 6), a > 3)
    with pytest.raises(IndexError, match="6 booleans"):
        mask("a + 1", {"a": a}, 6)
    np.testing.assert_array_equal(mask("k > 0", {"k": 1}, 3), [True] * 3)


def test_vm_dask_goes_through_the_dask_engine(monkeypatch):
    used = []

    def evaluate_blocks(expr, columns, scalars, blen=None, vm=None, **_):
        used.append(vm)
        return blocks.evaluate_blocks(expr, columns, scalars, blen=blen, vm=vm)

    fake = types.SimpleNamespace(local_vm=lambda: "python", evaluate_blocks=evaluate_blocks,
                                 evaluate=blocks.evaluate)
    monkeypatch.setattr(evaluate_module, "dask_engine", lambda: fake)
    out = evaluate(compile_expression("a + 1"), {"a": np.arange(5)}, {}, vm="dask",
                   new_carray=bcolzx.carray)
    np.testing.assert_array_equal(out[:], np.arange(1, 6))
    assert used == ["python"]


def test_no_module_of_the_query_layer_imports_the_dask_engine():
    # vm='dask' loads bcolzx.interop.dask on first use, through dask_engine() only.
    root = Path(bcolzx.__file__).parent
    for path in [*sorted((root / "_query").glob("*.py")), root / "toplevel.py",
                 root / "ctable.py"]:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not [n for n in names if "dask" in n], f"{path.name}: {ast.unparse(node)}"


def test_the_dask_engine_is_loaded_on_first_use_only():
    code = ("import sys, bcolzx, bcolzx._query.evaluate, bcolzx._query.planner; "
            "bcolzx.eval('a + 1', vm='python', user_dict={'a': bcolzx.arange(3)}); "
            "assert 'dask' not in sys.modules and 'bcolzx.interop.dask' not in sys.modules; "
            "from bcolzx._query.evaluate import dask_engine; "
            "assert dask_engine() is sys.modules['bcolzx.interop.dask']")
    parent = os.path.dirname(os.path.dirname(os.path.abspath(bcolzx.__file__)))
    env = dict(os.environ, PYTHONPATH=parent)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=parent, env=env)
