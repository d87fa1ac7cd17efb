"""The data of the benchmark: three array shapes and one table, all deterministic."""

from __future__ import annotations

import numpy as np

#: The data shapes of the array workloads, in the order they are run.
SHAPES = ("linspace", "arange", "random")

#: What each shape is (for the reports).
SHAPE_DOC = {
    "linspace": "float64, np.linspace(0, 1e6, n): smooth, compresses well",
    "arange": "int64, np.arange(n): integers that grow by one",
    "random": "float64, uniform in [0, 1): noise, hardly compresses",
    "table": "ctable of n rows: f0 int64 arange, f1 float64 uniform [0, 1), f2 int32 in 0..999",
}

#: Column names of the table workloads.
TABLE_NAMES = ("f0", "f1", "f2")

#: The broad query: every chunk can match, about 5% of the rows do.
BROAD_QUERY = "(f2 < 100) & (f1 > 0.5)"


def make_array(shape: str, n: int, seed: int = 0) -> np.ndarray:
    """The array of one data shape.

    Parameters
    ----------
    shape : {'linspace', 'arange', 'random'}
        Which data.
    n : int
        Number of items.
    seed : int
        Seed of the random data.

    Returns
    -------
    numpy.ndarray
        One-dimensional, float64 (``linspace``, ``random``) or int64 (``arange``).

    Raises
    ------
    ValueError
        For an unknown shape.
    """
    if shape == "linspace":
        return np.linspace(0, 1e6, n)
    if shape == "arange":
        return np.arange(n, dtype=np.int64)
    if shape == "random":
        return np.random.default_rng(seed).random(n)
    raise ValueError(f"unknown data shape {shape!r}; choose from {', '.join(SHAPES)}")


def make_table(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """The columns of the table workloads.

    Parameters
    ----------
    n : int
        Number of rows.
    seed : int
        Seed of the random columns.

    Returns
    -------
    dict of str to numpy.ndarray
        ``f0`` int64 ``arange`` (sorted), ``f1`` float64 uniform in [0, 1),
        ``f2`` int32 uniform in 0..999.
    """
    rng = np.random.default_rng(seed + 1)
    return {"f0": np.arange(n, dtype=np.int64), "f1": rng.random(n),
            "f2": rng.integers(0, 1000, n).astype(np.int32)}


def selective_query(n: int) -> str:
    """The selective query: a narrow range of the sorted column ``f0``, mid-table.

    About 0.2% of the rows (at least one) match, all in one or two chunks.

    Parameters
    ----------
    n : int
        Rows of the table.

    Returns
    -------
    str
        The expression.
    """
    mid = n // 2
    width = max(2, n // 500)
    return f"(f0 > {mid}) & (f0 < {mid + width})"


def compound_query(n: int) -> str:
    """The compound selective query: :func:`selective_query` on the sorted ``f0``
    and a comparison on the unsorted ``f2`` (about half of those rows).

    A planner that prunes chunks only for a single comparison scans the whole
    table here; one that follows ``&`` reads what the selective query reads.
    """
    return f"{selective_query(n)} & (f2 < 500)"


def hot_window(n: int, width: int) -> tuple[int, int]:
    """Rows ``(start, stop)`` of the hot region of the ``hot-slice`` workload: a
    twentieth of the array (at least one slice), from a third of the way in."""
    size = min(n, max(width, n // 20))
    start = min(n // 3, n - size)
    return start, start + size


def structured(cols: dict[str, np.ndarray]) -> np.ndarray:
    """The columns as one NumPy structured array (row-oriented)."""
    names = list(cols)
    n = len(cols[names[0]])
    out = np.empty(n, dtype=[(k, cols[k].dtype) for k in names])
    for k in names:
        out[k] = cols[k]
    return out


def query_mask(cols: dict, expr: str) -> np.ndarray:
    """Evaluate a query expression over in-memory columns with NumPy."""
    return eval(expr, {"__builtins__": {}}, dict(cols))  # noqa: S307 - our own expressions
