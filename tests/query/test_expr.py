"""Compiled expressions: caching, names, virtual machines, lazy numexpr, docstrings."""

import doctest
import os
import subprocess
import sys

import numpy as np
import pytest

from bcolzx._format import zonemap as format_zonemap_module
from bcolzx._query import blocks as blocks_module
from bcolzx._query import expr as expr_module
from bcolzx._query import pyvm as pyvm_module
from bcolzx._query import zonemap as zonemap_module
from bcolzx._query.expr import compile_expression
from bcolzx.errors import ExpressionError


def test_compiled_expressions_are_cached():
    assert compile_expression("a + 1") is compile_expression("a + 1")


def test_unknown_name_is_reported():
    e = compile_expression("a + missing")
    with pytest.raises(ExpressionError, match="'missing'"):
        e.evaluate({"a": np.arange(3)})
    with pytest.raises(ExpressionError, match="'missing'"):
        e.dtype({"a": np.int32})


def test_unknown_vm_is_a_value_error():
    with pytest.raises(ValueError, match="virtual machine"):
        compile_expression("a").evaluate({"a": 1}, vm="cython")


def test_importing_the_engine_does_not_import_numexpr():
    code = ("import sys, bcolzx._query, bcolzx._query.expr, bcolzx._query.blocks, "
            "bcolzx._query.zonemap, bcolzx._query.numexpr_vm, bcolzx._query.evaluate, "
            "bcolzx._query.planner; "
            "assert 'numexpr' not in sys.modules")
    # Run where the bcolzx under test is found first (not an unbuilt source tree).
    import bcolzx

    parent = os.path.dirname(os.path.dirname(os.path.abspath(bcolzx.__file__)))
    env = dict(os.environ, PYTHONPATH=parent)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=parent, env=env)


@pytest.mark.parametrize("module", [expr_module, zonemap_module, blocks_module, pyvm_module,
                                    format_zonemap_module])
def test_docstring_examples_run(module):
    result = doctest.testmod(module, verbose=False)
    assert result.attempted > 0 and result.failed == 0
