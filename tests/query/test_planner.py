"""The query planner: operands, zone-map skipping through the engine handle, limit and skip."""

import numpy as np
import pytest

import bcolzx
from bcolzx._query import planner
from bcolzx._query.expr import compile_expression
from bcolzx.errors import ExpressionError


@pytest.fixture
def table():
    return {"a": bcolzx.carray(np.arange(100), chunklen=10),
            "b": bcolzx.carray(np.arange(100) % 7, chunklen=10)}


class Engine:
    """An engine handle that answers chunk_stats() only, and counts the calls."""

    def __init__(self, stats):
        self.stats, self.calls = stats, 0

    def chunk_stats(self):
        self.calls += 1
        return self.stats


class Column:
    chunklen = 10

    def __init__(self, stats):
        self.engine = Engine(stats)


def test_zone_skipper_reads_the_bounds_through_the_engine_handle():
    stats = np.array([(0, 9, False), (10, 19, False), (20, 29, False), (30, 39, True)],
                     dtype=[("min", "f8"), ("max", "f8"), ("nan", "?")])
    column = Column(stats)
    skip = planner.zone_skipper(compile_expression("a > 25"), {"a": column}, {})
    assert column.engine.calls == 1
    assert [skip(lo, lo + 10) for lo in (0, 10, 20, 30)] == [True, True, False, False]
    assert not skip(40, 50)  # beyond the full chunks: never skipped
    assert not skip(15, 25)  # a block over a chunk that may match


def test_no_zone_skipping_without_an_engine_or_bounds(table):
    e = compile_expression("a > 25")
    assert planner.zone_skipper(e, {"a": np.arange(100)}, {}) is None
    assert planner.zone_skipper(e, {"a": Column(None)}, {}) is None
    skip = planner.zone_skipper(e, table, {})
    assert skip(0, 10) and not skip(20, 30)


def test_operands_come_from_the_table_then_the_scope(table):
    _, columns, scalars = planner.operands("(a > k) & (c < 3)", table,
                                           {"k": 5, "c": np.arange(100)})
    assert columns["a"] is table["a"] and sorted(columns) == ["a", "c"]
    assert scalars == {"k": 5}
    with pytest.raises(ValueError, match="has 3 rows, the table 100"):
        planner.operands("a > c", table, {"c": np.arange(3)})
    with pytest.raises(ExpressionError, match="'nowhere'"):
        planner.operands("a > nowhere", table, {})


def test_matches_by_block_with_the_columns_read(table):
    got = list(planner.matches("(a >= 15) & (a < 32)", table, {}, "python"))
    assert [lo for lo, _, _ in got] == [10, 20, 30]  # chunk 0 skipped, the others read
    np.testing.assert_array_equal(np.concatenate([pos for _, pos, _ in got]), np.arange(15, 32))
    _, _, (first, have) = got[0]
    assert first == 10 and sorted(have) == ["a"]
    np.testing.assert_array_equal(have["a"], np.arange(10, 20))


def test_matches_of_masks_and_scalar_conditions(table):
    mask = np.arange(100) % 50 == 0
    [(lo, pos, block)] = planner.matches(mask, table, {}, None)
    assert lo == 0 and pos.tolist() == [0, 50] and block is None
    [(_, pos, _)] = planner.matches("k > 1", table, {"k": 2}, "python")
    assert len(pos) == 100
    assert list(planner.matches("k > 1", table, {"k": 0}, "python")) == []
    with pytest.raises(ValueError, match="boolean array of length 100"):
        list(planner.matches(np.ones(3, bool), table, {}, None))
    with pytest.raises(ValueError, match="not a boolean condition"):
        list(planner.matches("a + 1", table, {}, "python"))
    with pytest.raises(ValueError, match="vm must be"):
        list(planner.matches("a > 1", table, {}, "cython"))


@pytest.mark.parametrize("skip, limit", [(0, None), (3, None), (0, 4), (12, 5), (40, 3),
                                         (5, 0)])
def test_select_applies_skip_then_limit_across_blocks(table, skip, limit):
    got = [pos for pos, _ in planner.select("b == 0", table, {}, "python", limit, skip)]
    assert all(len(pos) for pos in got)
    everything = np.flatnonzero(np.arange(100) % 7 == 0)
    expected = everything[skip:][:limit] if limit is not None else everything[skip:]
    np.testing.assert_array_equal(np.concatenate(got) if got else [], expected)


def test_planning_is_lazy(table):
    rows = planner.select("a > nowhere", table, {}, None)  # nothing runs yet
    with pytest.raises(ExpressionError):
        next(rows)


def test_columns_of_different_chunk_lengths_share_a_grid():
    """int64 and int32 columns of one table have different chunk lengths: the
    bounds of both still prune, on the grid of their common divisor."""
    a = bcolzx.carray(np.arange(120), chunklen=10)              # sorted
    b = bcolzx.carray(np.arange(120) % 7, chunklen=20)          # no pruning of its own
    skip = planner.zone_skipper(compile_expression("(a >= 40) & (a < 50) & (b < 3)"),
                                {"a": a, "b": b}, {})
    assert skip is not None
    assert [lo for lo in range(0, 120, 10) if not skip(lo, lo + 10)] == [40]
    assert not skip(35, 45)                    # a block over the chunk that may match
    # Chunks of b whose bounds rule it out prune blocks of a's length too.
    b2 = bcolzx.carray(np.repeat([5, 0, 5, 0, 5, 0], 20), chunklen=20)
    skip = planner.zone_skipper(compile_expression("(b < 3) | (a < 0)"), {"a": a, "b": b2}, {})
    assert [lo for lo in range(0, 120, 10) if not skip(lo, lo + 10)] == [20, 30, 60, 70, 100, 110]


def test_rows_past_the_full_chunks_are_pruned_by_their_own_bounds():
    """Past the full chunks of a column (its leftover, outside the zone map)
    the planner reads its rows' bounds, so a leftover that cannot match is
    skipped too; the bounds of another column still rule blocks out."""
    a = bcolzx.carray(np.arange(115), chunklen=10)              # 11 full chunks, 5 rows
    b = bcolzx.carray(np.arange(115) % 7, chunklen=20)          # 5, then 15 rows
    skip = planner.zone_skipper(compile_expression("(a >= 40) & (a < 50) & (b < 3)"),
                                {"a": a, "b": b}, {})
    assert [lo for lo in range(0, 120, 10) if not skip(lo, lo + 10)] == [40]
    # b's leftover (rows 100..114, values 0..6) rules out the blocks a cannot.
    skip = planner.zone_skipper(compile_expression("(b > 1000) & (a >= 0)"),
                                {"a": a, "b": b}, {})
    assert [lo for lo in range(0, 120, 10) if not skip(lo, lo + 10)] == []
    # A leftover that may match is kept.
    skip = planner.zone_skipper(compile_expression("(b > 1000) | (a >= 112)"),
                                {"a": a, "b": b}, {})
    assert [lo for lo in range(0, 120, 10) if not skip(lo, lo + 10)] == [110]
    for dtype in ("f4", "u2", "?", "M8[s]", "m8[ms]"):
        values = np.arange(115).astype(dtype)
        c = bcolzx.carray(values, chunklen=20)
        skip = planner.zone_skipper(compile_expression("(a >= 40) & (a < 50) & (c == c)"),
                                    {"a": a, "c": c}, {})
        assert [lo for lo in range(0, 120, 10) if not skip(lo, lo + 10)] == [40], dtype
        table = {"a": a, "c": c}
        got = [p for _, pos, _ in planner.matches("(a >= 100) & (c == c)", table, {}, None)
               for p in pos.tolist()]
        assert got == list(range(100, 115)), dtype


def test_a_leftover_with_nan_is_never_ruled_out_by_its_nan():
    """A leftover's NaN (NaT) counts as in the zone map: ``!=`` and ``~`` may hold on it."""
    x = np.arange(25, dtype="f8")
    x[22] = np.nan
    c = bcolzx.carray(x, chunklen=10)                             # leftover: 20..24 and NaN
    for expr, rows in (("c != c", [22]), ("~(c < 1000)", [22]), ("c > 22", [23, 24]),
                       ("(c > 100) | (c != c)", [22])):
        got = [p for _, pos, _ in planner.matches(expr, {"c": c}, {}, None)
               for p in pos.tolist()]
        assert got == rows, expr
    t = bcolzx.carray(np.array([0, 1, 2, "NaT"], dtype="M8[D]"), chunklen=3)
    got = [p for _, pos, _ in planner.matches("t != t", {"t": t}, {}, None)
           for p in pos.tolist()]
    assert got == [3]


def test_a_grid_finer_than_the_chunks_allow_is_not_used():
    a = bcolzx.carray(np.arange(2000), chunklen=1000)
    b = bcolzx.carray(np.arange(2000), chunklen=999)             # common divisor 1
    assert planner.zone_skipper(compile_expression("(a < 5) & (b < 5)"), {"a": a, "b": b},
                                {}) is None


def test_compound_query_on_a_mixed_table_reads_only_the_selective_chunks(tmp_path):
    n = 4 * 262_144               # full chunks only: a leftover is never pruned
    f0, f2 = np.arange(n, dtype="i8"), (np.arange(n) * 7919 % 1000).astype("i4")
    t = bcolzx.ctable([f0, f2], names=["f0", "f2"], rootdir=str(tmp_path / "t"))
    t.flush()
    t = bcolzx.open(str(tmp_path / "t"), mode="r")
    assert t.cols["f0"].chunklen != t.cols["f2"].chunklen   # 8- and 4-byte items
    rows = {"f0": 0, "f2": 0}
    for name in rows:
        engine = t.cols[name].engine
        read = engine.read

        def counted(start, stop, out=None, _read=read, _name=name):
            rows[_name] += stop - start
            return _read(start, stop, out)
        engine.read = counted
    expr = "(f0 > 600000) & (f0 < 600100) & (f2 < 500)"
    got = t.fetchwhere(expr, outcols=["nrow__"], out_flavor="numpy")["nrow__"]
    np.testing.assert_array_equal(got, np.flatnonzero((f0 > 600000) & (f0 < 600100)
                                                      & (f2 < 500)))
    # One block (of the shortest chunk) of the condition's columns, not the table.
    block = min(t.cols["f0"].chunklen, t.cols["f2"].chunklen)
    assert 0 < rows["f2"] <= block < n and 0 < rows["f0"] <= block


def test_a_repeated_analysis_is_remembered_and_follows_the_data(monkeypatch):
    calls = []
    real = planner.decide_blocks  # a filter's analysis (may_match_blocks: other conditions)

    def counted(*args):
        calls.append(args)
        return real(*args)
    monkeypatch.setattr(planner, "decide_blocks", counted)
    a = bcolzx.carray(np.arange(100), chunklen=10)
    e = compile_expression("(a > k) & (a < 95)")

    def kept(k):
        skip = planner.zone_skipper(e, {"a": a}, {"k": k})
        return [lo for lo in range(0, 100, 10) if not skip(lo, lo + 10)]
    assert kept(75) == [70, 80, 90] and kept(75) == [70, 80, 90]
    assert len(calls) == 1                       # the second time: remembered
    assert kept(np.int8(85)) == [80, 90] and kept(85.5) == [80, 90]
    a[0:10] = 80                                 # new bounds: analysed again
    assert kept(75) == [0, 70, 80, 90]
    assert len(calls) == 4
