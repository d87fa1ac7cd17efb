"""Where an expression's names get their values: user_dict, then the caller's scope."""

import numpy as np
import pytest

from bcolzx._query.scope import caller_scope, resolve_names, split_operands
from bcolzx.errors import ExpressionError, UndefinedNameError

LEVEL = "global"


def _scope_of_my_caller(user_dict=None):
    return caller_scope(user_dict)


def test_names_come_from_user_dict_then_locals_then_globals():
    here = "local"
    scope = _scope_of_my_caller({"given": 1})
    assert resolve_names(["given", "here", "LEVEL"], scope) == {
        "given": 1, "here": here, "LEVEL": "global"}
    assert _scope_of_my_caller({"here": 2, "LEVEL": 3})["here"] == 2
    assert _scope_of_my_caller({"LEVEL": 3})["LEVEL"] == 3


def test_depth_picks_the_frame():
    def inner():
        hidden = "inner"  # noqa: F841 - read through the frame
        return caller_scope(None, depth=0)
    assert inner()["hidden"] == "inner"
    assert "hidden" not in _scope_of_my_caller()


def test_user_dict_must_be_a_mapping():
    with pytest.raises(TypeError, match="user_dict"):
        caller_scope([("a", 1)])


def test_a_name_found_nowhere_is_undefined():
    with pytest.raises(UndefinedNameError, match="'nowhere'"):
        resolve_names(["nowhere"], caller_scope(None))


def test_values_split_into_columns_and_scalars():
    a = np.arange(3)
    columns, scalars = split_operands({"a": a, "k": 2, "z": np.float32(1), "d": np.array(1.5),
                                       "s": b"x", "l": [1, 2, 3]})
    assert columns["a"] is a and sorted(columns) == ["a", "l"]
    np.testing.assert_array_equal(columns["l"], [1, 2, 3])
    assert sorted(scalars) == ["d", "k", "s", "z"]
    with pytest.raises(ExpressionError, match="'f' is a builtin_function_or_method"):
        split_operands({"f": print})
