"""The code examples in README.md and in docstrings run as written."""

import doctest
from pathlib import Path

import pytest

import importlib

import bcolzx.toplevel

ROOT = Path(__file__).parents[1]


def test_readme_examples_run():
    result = doctest.testfile(str(ROOT / "README.md"), module_relative=False, verbose=False)
    assert result.attempted > 0 and result.failed == 0


# ctable's reduce, groupby and delete are defined (with their examples) in a mixin module.
@pytest.mark.parametrize("module", [bcolzx.toplevel, importlib.import_module("bcolzx.ctable"),
                                    importlib.import_module("bcolzx._table_analytics")])
def test_docstring_examples_run(module):
    result = doctest.testmod(module, verbose=False)
    assert result.attempted > 0 and result.failed == 0
