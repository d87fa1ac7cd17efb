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
