"""Evaluating an expression over whole operands: a carray, an array or a scalar, or a reduction.

What :func:`bcolzx.eval`, :meth:`bcolzx.ctable.eval` and a carray's string
keys compute, block by block (:mod:`~bcolzx._query.blocks`, or Dask tasks for
``vm='dask'``), so that memory stays flat:

* an expression of scalars only is a scalar (legacy bcolz), or, with a
  table's `length`, that scalar repeated;
* an outermost ``sum``/``prod`` is reduced block by block (:func:`_reduce`);
* anything else is a NumPy array (``out_flavor='numpy'``) or a new carray
  filled block by block.

The carray class is given by the caller (`new_carray`): this layer sits
below the public classes and does not import them.  The ``vm='dask'``
engine, :mod:`bcolzx.interop.dask`, is loaded on first use only, through the
registry of optional formats (:func:`dask_engine`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

import numpy as np

from bcolzx._query import blocks
from bcolzx._query.expr import Expression, check_operands, compile_expression
from bcolzx._query.scope import resolve_names, split_operands
from bcolzx._query.tree import Reduction
from bcolzx.errors import ExpressionError

__all__ = ["FLAVORS", "VMS", "dask_engine", "engine_for", "evaluate", "mask", "resolve_flavor",
           "resolve_vm"]

#: The virtual machines a query or ``eval`` accepts.
VMS = ("python", "numexpr", "dask")
#: The forms of a result: a carray ('bcolz' and 'carray') or a NumPy array.
FLAVORS = ("bcolz", "carray", "numpy")


def _defaults() -> Any:
    from bcolzx.defaults import defaults  # the user's settings, read at each call

    return defaults


def resolve_vm(vm: str | None) -> str:
    """`vm`, or ``defaults.vm`` when None.

    Raises
    ------
    ValueError
        If it is not one of :data:`VMS`.
    """
    vm = _defaults().vm if vm is None else vm
    if vm not in VMS:
        raise ValueError(f"vm must be 'python', 'numexpr' or 'dask', not {vm!r}")
    return vm


def resolve_flavor(out_flavor: str | None) -> str:
    """`out_flavor`, or ``defaults.out_flavor`` when None.

    Raises
    ------
    ValueError
        If it is not one of :data:`FLAVORS`.
    """
    flavor = _defaults().out_flavor if out_flavor is None else out_flavor
    if flavor not in FLAVORS:
        raise ValueError(f"out_flavor must be 'bcolz', 'carray' or 'numpy', not {flavor!r}")
    return flavor


def dask_engine() -> ModuleType:
    """The ``vm='dask'`` engine, :mod:`bcolzx.interop.dask`, loaded on first use
    through the registry of optional formats (:func:`bcolzx.interop.load`).

    It has :func:`~bcolzx.interop.dask.evaluate_blocks` and
    :func:`~bcolzx.interop.dask.evaluate` as :mod:`~bcolzx._query.blocks`
    does, each block a Dask task, and ``local_vm()``, the machine each task
    evaluates its block with.

    Raises
    ------
    ImportError
        Only when the engine is used: evaluating without Dask installed.
    """
    from bcolzx.interop import load  # the registry of optional formats

    return load("dask")


def engine_for(vm: str) -> tuple[ModuleType, str]:
    """What evaluates blocks for `vm` (a member of :data:`VMS`), and the
    machine it evaluates each block with.

    Raises
    ------
    ImportError
        For 'dask' without Dask installed.
    """
    if vm == "dask":  # each block a Dask task
        engine = dask_engine()
        return engine, engine.local_vm()
    return blocks, vm


def evaluate(expr: Expression, columns: Mapping[str, Any], scalars: Mapping[str, Any], *,
             new_carray: Callable[..., Any] | None = None, vm: str | None = None,
             out_flavor: str | None = None, blen: int | None = None,
             length: int | None = None, **kwargs: Any) -> Any:
    """Evaluate a compiled expression; the result as `out_flavor` asks.

    Parameters
    ----------
    expr : Expression
    columns, scalars : mapping
        The operands by name (see :func:`bcolzx._query.scope.split_operands`).
    new_carray : callable, optional
        The carray class: how a 'bcolz'/'carray' result is made (called as
        ``new_carray(array, **kwargs)``); needed for those flavors only.
    vm, out_flavor : str, optional
        Default ``defaults.vm`` and ``defaults.out_flavor``.
    blen : int, optional
        Rows per block.
    length : int, optional
        The rows of the table the expression is evaluated on: an expression
        of scalars only then gives `length` rows, not a scalar.
    **kwargs
        carray parameters for a carray result.

    Returns
    -------
    carray, numpy.ndarray or scalar

    Raises
    ------
    ExpressionError
        If an operand holds Python objects, or evaluation fails.
    ValueError
        For an unknown `vm` or `out_flavor`, or operands of different lengths.
    ImportError
        For ``vm='dask'`` without Dask.
    TypeError
        For a carray result without `new_carray`.
    """
    check_operands(columns)
    requested = resolve_vm(vm)
    engine, vm = engine_for(requested)
    flavor = resolve_flavor(out_flavor)
    if expr.reduction is not None and columns:
        return _reduce(expr, expr.reduction, columns, scalars, vm, requested, engine, flavor,
                       blen, new_carray, kwargs)
    if not columns:
        if length is None:  # scalars only: a scalar, as legacy bcolz
            return np.asarray(expr.evaluate(scalars, vm))[()]
        value = np.broadcast_to(expr.evaluate(scalars, vm), (length,))  # one per table row
        return value.copy() if flavor == "numpy" else _new(new_carray, value, kwargs)
    if flavor == "numpy":
        return engine.evaluate(expr, columns, scalars, blen=blen, vm=vm)
    n = len(next(iter(columns.values())))
    shape = np.broadcast_shapes(*[tuple(c.shape[1:]) for c in columns.values()])
    kwargs.setdefault("expectedlen", n)
    out = _new(new_carray, np.empty((0, *shape), expr.dtype(_dtypes(columns, scalars))), kwargs)
    for _, block in engine.evaluate_blocks(expr, columns, scalars, blen=blen, vm=vm):
        out.append(block)
    if out.rootdir is not None:
        out.flush()
    return out


def mask(expression: str, scope: Mapping[str, Any], length: int) -> np.ndarray:
    """The boolean mask of a carray's string key: `expression` over the values
    of its names in `scope`, `length` booleans.

    Raises
    ------
    ExpressionError
        If the expression is invalid or a name is undefined.
    IndexError
        If it does not give `length` booleans.
    """
    expr = compile_expression(expression)
    columns, scalars = split_operands(resolve_names(expr.names, scope))
    result = evaluate(expr, columns, scalars, out_flavor="numpy",
                      length=length if not columns else None)
    if result.dtype != np.bool_ or result.shape != (length,):
        raise IndexError(f"the expression {expression!r} must give {length} booleans, "
                         f"not {result.dtype} of shape {result.shape}")
    return result


def _new(new_carray: Callable[..., Any] | None, data: np.ndarray, kwargs: dict) -> Any:
    """A carray of `data` (`kwargs`: its parameters)."""
    if new_carray is None:
        raise TypeError("a carray result needs new_carray (the carray class)")
    return new_carray(data, **kwargs)


def _dtypes(columns: Mapping[str, Any], scalars: Mapping[str, Any]) -> dict[str, np.dtype]:
    return {**{n: c.dtype for n, c in columns.items()},
            **{n: np.asarray(v).dtype for n, v in scalars.items()}}


def _reduce(expr: Expression, red: Reduction, columns: Mapping[str, Any],
            scalars: Mapping[str, Any], vm: str, requested: str, engine: ModuleType, flavor: str,
            blen: int | None, new_carray: Callable[..., Any] | None, kwargs: dict) -> Any:
    """An outermost ``sum``/``prod``, reduced block by block.

    Over every item or the first axis, the blocks' partial results are
    combined (one value, or one row); over a later axis each block gives
    its own rows, collected as `flavor` asks.
    """
    rowshape = np.broadcast_shapes(*[tuple(c.shape[1:]) for c in columns.values()])
    ndim = 1 + len(rowshape)
    axis = red.axis_for(requested)  # the machine asked for decides what a bare sum() means
    if axis is not None:
        if not -ndim <= axis < ndim:
            raise ExpressionError(f"{red.op}(): axis {axis} is out of bounds for the "
                                  f"{ndim} dimensions of {expr.inner.text!r}")
        axis %= ndim
    parts = engine.evaluate_blocks(expr.inner, columns, scalars, blen=blen, vm=vm)
    if axis is None or axis == 0:
        total = None
        for _, block in parts:
            part = red.apply(block, axis)
            total = part if total is None else (total + part if red.op == "sum"
                                                else total * part)
        if total is None:  # no rows: the identity of the reduction
            empty = np.empty((0, *rowshape), expr.inner.dtype(_dtypes(columns, scalars)))
            total = red.apply(empty, axis)
        return total[()] if axis is None else total
    reduced = [red.apply(block, axis) for _, block in parts]
    shape = rowshape[: axis - 1] + rowshape[axis:]
    result = np.concatenate(reduced) if reduced else np.empty(
        (0, *shape), expr.dtype(_dtypes(columns, scalars)))
    return result if flavor == "numpy" else _new(new_carray, result, kwargs)
