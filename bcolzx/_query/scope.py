"""Where the names of an expression get their values: the user's dict, then the caller's scope.

As in legacy bcolz, a name is looked up in the ``user_dict`` given to the
query, then in the caller's local variables, then in its globals.
Array-like values (NumPy arrays, carrays, anything with a length and a
dtype) become columns read block by block; the others are scalars broadcast
against the blocks.
"""

from __future__ import annotations

import sys
from collections import ChainMap
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from bcolzx.errors import ExpressionError, UndefinedNameError

__all__ = ["caller_scope", "resolve_names", "split_operands"]


def caller_scope(user_dict: Mapping[str, Any] | None, depth: int = 1) -> ChainMap:
    """Where names are looked up: `user_dict`, then the locals and globals of
    the frame `depth` levels above the caller of this function.

    Call it at a public entry point, before any generator runs, so the frame
    is the user's.

    Raises
    ------
    TypeError
        If `user_dict` is not a mapping.
    """
    user_dict = {} if user_dict is None else user_dict
    if not isinstance(user_dict, Mapping):
        raise TypeError(f"user_dict must be a dict, not {type(user_dict).__name__}")
    frame = sys._getframe(depth + 1)
    return ChainMap(user_dict, frame.f_locals, frame.f_globals)


def resolve_names(names: Iterable[str], scope: Mapping[str, Any]) -> dict[str, Any]:
    """Values of `names` in `scope` (see :func:`caller_scope`).

    Raises
    ------
    ExpressionError
        If a name is found nowhere.
    """
    out = {}
    for name in names:
        try:
            out[name] = scope[name]
        except KeyError:
            raise UndefinedNameError(f"name {name!r} is not a column nor a variable in "
                                  "user_dict or the caller's scope") from None
    return out


def split_operands(values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split resolved values into columns (array-likes) and scalars.

    Raises
    ------
    ExpressionError
        For a value that is neither (a list, a dict, a function...).
    """
    columns, scalars = {}, {}
    for name, value in values.items():
        if hasattr(value, "dtype") and hasattr(value, "__len__") and getattr(value, "ndim", 0):
            columns[name] = value
        elif isinstance(value, (int, float, complex, bool, str, bytes, np.generic)) or \
                (isinstance(value, np.ndarray) and value.ndim == 0):
            scalars[name] = value
        elif isinstance(value, (list, tuple)):
            columns[name] = np.asarray(value)
        else:
            raise ExpressionError(f"{name!r} is a {type(value).__name__}; expressions take "
                                  "arrays, carrays and numbers")
    return columns, scalars
