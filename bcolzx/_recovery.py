"""What a crash can leave behind in a ctable, and how opening it deals with that.

A ctable's columns are carrays committed one after the other (each column's
commit is atomic, docs/format/README.md §3), so a writer that dies while
flushing a table can leave some columns with the new rows and others
without.  The table is as long as its shortest column: the rows every
column holds.  The rows some columns hold beyond it were never part of the
table; a reader does not see them, and a writer drops them when it opens the
table, before it changes anything.
"""

from __future__ import annotations

__all__ = ["even_columns", "torn_lengths"]


def torn_lengths(lengths: dict) -> str | None:
    """A note on columns of different lengths (None when they agree)."""
    if len(set(lengths.values())) <= 1:
        return None
    n = min(lengths.values())
    longer = {name: m - n for name, m in lengths.items() if m > n}
    return (f"columns have different lengths {lengths}: the table has the {n} rows every "
            f"column holds; {longer} more rows (left by a write a crash interrupted, or "
            "appended to a column directly) are not part of it, and the next writer drops "
            "them")


def even_columns(columns: dict, mode: str) -> None:
    """Make the carrays of a ctable, just opened in `mode`, all as long as the shortest.

    In mode ``'r'`` the longer columns only stop showing their extra rows;
    otherwise those rows are removed (a durable trim of each longer column).

    Raises
    ------
    OSError
        If the file system refuses the trim; the table then still shows only
        the rows every column holds.
    """
    if not columns:
        return
    n = min(len(c) for c in columns.values())
    for col in columns.values():
        extra = len(col) - n
        if not extra:
            continue
        if mode == "r":
            col._engine.clip(n)
        else:
            col.trim(extra)
