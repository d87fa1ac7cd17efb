"""SQL over ctables with DuckDB, streamed: no copy of the table into memory.

:func:`register` gives DuckDB a ctable (or a carray) as an Arrow dataset
(:func:`bcolzx.interop.arrow.to_dataset`): DuckDB pushes the query's
projection and filter into its scans, so only the columns a query names are
decompressed, and only the blocks of rows whose zone maps allow a match.
duckdb and pyarrow are imported on first use
(``pip install 'bcolzx[duckdb]'``).

Examples
--------
>>> import numpy as np, bcolzx, duckdb
>>> ct = bcolzx.ctable([np.arange(1000), np.arange(1000) % 7], names=["i", "k"])
>>> con = duckdb.connect()
>>> ds = bcolzx.duckdb.register(con, "t", ct)
>>> con.execute("SELECT k, count(*) FROM t WHERE i >= 990 GROUP BY k ORDER BY k").fetchall()
[(0, 1), (1, 1), (2, 1), (3, 2), (4, 2), (5, 2), (6, 1)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bcolzx.interop._common import import_optional

__all__ = ["register"]


def register(con: Any, name: str, data: Any, columns: Sequence[str] | str | None = None
             ) -> Any:
    """Make `data` (a ctable, or a carray as a table of one column) the view `name`
    of the DuckDB connection `con`, scanned on demand.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    name : str
        The name queries use.
    data : ctable or carray
    columns : sequence of str or str, optional
        The columns offered (a carray's one column is named after this
        string, default ``values``).

    Returns
    -------
    pyarrow.dataset.Dataset
        What DuckDB scans; its ``decoded_bytes`` says how many bytes the
        queries so far decompressed.

    Raises
    ------
    ImportError
        If duckdb or pyarrow is not installed.
    TypeError
        For data that is not a ctable or carray, or columns Arrow cannot hold.
    KeyError
        For an unknown column.
    """
    import_optional("duckdb", "duckdb", "querying a ctable with DuckDB")
    from bcolzx.interop.arrow import to_dataset

    dataset = to_dataset(data, columns)
    con.register(name, dataset)
    return dataset
