"""Block-parallel evaluation over columns: same result as one big evaluation, flat memory."""

import threading

import numpy as np
import pytest

import bcolzx
from bcolzx import _threads
from bcolzx._query import blocks
from bcolzx._query.blocks import evaluate, evaluate_blocks
from bcolzx._query.expr import Expression, compile_expression
from bcolzx.errors import ExpressionError

N = 1000


class Recording:
    """A column that records the row ranges read from it."""

    def __init__(self, data, log=None):
        self.data = data
        self.dtype = data.dtype
        self.shape = data.shape
        self.reads = [] if log is None else log

    def __len__(self):
        return len(self.data)

    def __getitem__(self, key):
        self.reads.append((key.start, key.stop))
        return self.data[key]


class Untouchable(Recording):
    def __getitem__(self, key):
        raise AssertionError("a column the expression does not name was read")


@pytest.fixture
def columns():
    rng = np.random.default_rng(3)
    return {
        "a": np.arange(N, dtype=np.int32),
        "b": rng.standard_normal(N),
        "c": rng.integers(0, 2, N).astype(bool),
    }


@pytest.mark.parametrize("nthreads", [1, 2, 3])
@pytest.mark.parametrize("blen", [1, 7, 128, N, 5000])
def test_blocks_give_the_whole_array_result(columns, nthreads, blen):
    text = "where(c, a * b, -b) + (a > 500)"
    expected = compile_expression(text).evaluate(columns)
    got = evaluate(text, columns, blen=blen, nthreads=nthreads)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_blocks_are_yielded_in_order_with_their_start(columns):
    starts = [s for s, _ in evaluate_blocks("a + 1", columns, blen=100, nthreads=3,
                                            start=50, stop=930)]
    assert starts == list(range(50, 930, 100))
    last = list(evaluate_blocks("a + 1", columns, blen=100, nthreads=2, start=50, stop=930))
    assert last[-1][1].tolist() == list(range(851, 931))
    assert next(evaluate_blocks("a", columns, start=-10, stop=-5, nthreads=1))[1].tolist() \
        == list(range(990, 995))


@pytest.mark.parametrize("nthreads", [1, 2])
def test_only_named_columns_are_read_one_block_at_a_time(columns, nthreads):
    a = Recording(columns["a"])
    cols = {"a": a, "b": Untouchable(columns["b"])}
    evaluate("a * 2", cols, blen=300, nthreads=nthreads)
    assert sorted(a.reads) == [(0, 300), (300, 600), (600, 900), (900, 1000)]


@pytest.mark.parametrize("nthreads", [1, 2, 4])
def test_blocks_in_flight_are_bounded(columns, nthreads):
    log = []
    cols = {"a": Recording(columns["a"], log)}
    most = 0
    for done, _ in enumerate(evaluate_blocks("sqrt(a) * 2", cols, blen=10, nthreads=nthreads),
                             start=1):
        most = max(most, len(log) - done + 1)
    assert len(log) == N // 10
    assert most <= 2 * nthreads


def test_skipped_blocks_are_neither_read_nor_yielded(columns):
    a = Recording(columns["a"])
    skipped = []

    def skip(start, stop):
        if start % 200 == 0:
            skipped.append((start, stop))
            return True
        return False

    out = list(evaluate_blocks("a", {"a": a}, blen=100, nthreads=2, skip_block=skip))
    assert [s for s, _ in out] == list(range(100, N, 200))
    assert not set(skipped) & set(a.reads)


def test_skip_block_with_zone_maps(columns):
    from bcolzx._format.zonemap import bounds_of
    from bcolzx._query.zonemap import may_match

    e = compile_expression("(a >= 420) & (a < 470)")
    a = columns["a"]

    def skip(start, stop):
        return not may_match(e, {"a": bounds_of(a[start:stop])})

    out = dict(evaluate_blocks(e, {"a": a}, blen=100, nthreads=2, skip_block=skip))
    assert list(out) == [400]
    assert out[400].sum() == 50


def test_carray_columns(tmp_path):
    a = bcolzx.carray(np.arange(50_000, dtype=np.int64), chunklen=4096)
    b = bcolzx.carray(np.linspace(0, 1, 50_000), chunklen=4096,
                      rootdir=str(tmp_path / "b"))
    reads = dict(evaluate_blocks("a * b", {"a": a, "b": b}, nthreads=2))
    assert list(reads)[:2] == [0, 4096]  # blocks follow the chunks
    got = evaluate("(a % 7 == 0) & (b > 0.5)", {"a": a, "b": b}, nthreads=2)
    np.testing.assert_array_equal(got, (a[:] % 7 == 0) & (b[:] > 0.5))


def test_scalars_broadcast_and_multidimensional_columns():
    m = np.arange(30.0).reshape(10, 3)
    got = evaluate("m * k + v", {"m": m}, {"k": 2, "v": np.array([1.0, 2.0, 3.0])}, blen=4)
    np.testing.assert_array_equal(got, m * 2 + [1.0, 2.0, 3.0])


def test_expression_without_columns_is_evaluated_once(columns):
    assert [(s, r.tolist()) for s, r in evaluate_blocks("k * 2", columns, {"k": 3})] == [(0, 6)]
    np.testing.assert_array_equal(evaluate("k * 2", columns, {"k": 3}), np.full(N, 6))
    assert evaluate("k * 2", {}, {"k": 3}).shape == ()


def test_out_is_filled_and_checked(columns):
    out = np.empty(N)
    assert evaluate("a / 2", columns, out=out, blen=64) is out
    np.testing.assert_array_equal(out, columns["a"] / 2)
    with pytest.raises(ValueError, match="shape"):
        evaluate("a / 2", columns, out=np.empty(N + 1))
    with pytest.raises(TypeError, match="cannot be written"):
        evaluate("a / 2", columns, out=np.empty(N, np.int32))


def test_argument_errors(columns):
    with pytest.raises(ValueError, match="same length"):
        evaluate("a", {"a": np.arange(3), "b": np.arange(4)})
    with pytest.raises(ValueError, match="both a column and a scalar"):
        evaluate("a", columns, {"a": 1})
    with pytest.raises(ExpressionError, match="'zz'"):
        evaluate("a + zz", columns)
    with pytest.raises(ValueError, match="blen"):
        evaluate("a", columns, blen=0)
    with pytest.raises(ValueError, match="nthreads"):
        evaluate("a", columns, nthreads=0)
    with pytest.raises(TypeError):
        evaluate("a", columns, nthreads=1.5)
    with pytest.raises(ValueError, match="virtual machine"):
        evaluate("a", columns, vm="llvm")


def test_an_error_in_a_block_propagates(columns):
    exponents = np.ones(N, np.int32)
    exponents[777] = -1
    with pytest.raises(ExpressionError, match="negative"):
        evaluate("a ** e", {"a": columns["a"], "e": exponents}, blen=100, nthreads=2)


def test_abandoned_iteration_cancels_its_blocks_and_starts_no_threads(columns):
    shared = _threads.pool(3)
    list(evaluate_blocks("a * b", columns, blen=10, nthreads=3))  # the pool's threads exist
    before = threading.active_count()
    log = []
    blocks = evaluate_blocks("a * b", {"a": Recording(columns["a"], log), "b": columns["b"]},
                             blen=10, nthreads=3)
    next(blocks)
    blocks.close()
    assert len(log) <= 2 * 3  # nothing read after the consumer left
    assert _threads.pool(1) is shared  # no pool of its own
    assert threading.active_count() == before  # and no thread started for it


def _traced(text, names):
    """`text` compiled so that each evaluation adds its thread's name to `names`."""

    class Traced(Expression):
        __slots__ = ()

        def evaluate(self, namespace, vm="python"):
            names.add(threading.current_thread().name)
            return super().evaluate(namespace, vm)

    e = compile_expression(text)
    return Traced(e.text, e.names, e.tree)


def test_queries_run_on_the_shared_pool(columns):
    names = set()
    got = evaluate(_traced("a * b", names), columns, blen=10, nthreads=3)
    np.testing.assert_array_equal(got, columns["a"] * columns["b"])
    assert names and all(n.startswith("bcolzx_") for n in names), names


def test_a_few_blocks_are_evaluated_on_the_calling_thread(columns):
    names = set()
    blen = -(-N // blocks._INLINE_BLOCKS)  # just as many blocks
    got = evaluate(_traced("a * b", names), columns, blen=blen, nthreads=3)
    np.testing.assert_array_equal(got, columns["a"] * columns["b"])
    assert names == {threading.current_thread().name}


def test_a_query_from_a_pool_thread_is_evaluated_inline(columns, monkeypatch):
    shared = _threads.pool(2)

    def no_pool(nthreads):
        raise AssertionError("a pool thread must not wait for the pool")

    def query():
        assert _threads.in_worker()
        return evaluate("a * b", columns, blen=10, nthreads=4)

    monkeypatch.setattr(_threads, "pool", no_pool)
    got = shared.submit(query).result(timeout=60)
    np.testing.assert_array_equal(got, columns["a"] * columns["b"])


@pytest.mark.parametrize("nthreads", [1, 2])
def test_numexpr_vm_over_blocks(columns, nthreads):
    pytest.importorskip("numexpr")
    text = "(a > 100) & (b < 0.5) | c"
    expected = evaluate(text, columns, blen=64, nthreads=nthreads)
    got = evaluate(text, columns, blen=64, vm="numexpr", nthreads=nthreads)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("nthreads", [1, 2])
def test_blocks_can_come_with_the_columns_they_read(columns, nthreads):
    cols = {"a": Recording(columns["a"]), "b": columns["b"], "c": Untouchable(columns["c"])}
    got = list(evaluate_blocks("(a > 10) & (b < k)", cols, {"k": 0.5}, blen=300,
                               nthreads=nthreads, with_columns=True))
    assert [s for s, _, _ in got] == [0, 300, 600, 900]
    for start, mask, read in got:
        assert sorted(read) == ["a", "b"]  # not the scalar, not the unread column
        np.testing.assert_array_equal(read["a"], columns["a"][start:start + 300])
        np.testing.assert_array_equal(read["b"], columns["b"][start:start + 300])
        np.testing.assert_array_equal(mask, (read["a"] > 10) & (read["b"] < 0.5))
    assert sorted(cols["a"].reads) == [(0, 300), (300, 600), (600, 900), (900, 1000)]


def test_operands_settles_names_length_and_blen_before_any_read():
    a, b = np.arange(10), np.arange(10.0)
    ops = blocks.operands("a + b * k", {"a": a, "b": b, "unused": np.arange(3)}, {"k": 2})
    assert ops.names == ["a", "b"] and ops.length == 10 and list(ops.values) == ["k"]
    assert ops.blen > 0 and ops.expr.text == "a + b * k"
    assert blocks.operands("a", {"a": a}, blen=3).blen == 3
    assert blocks.operands("k + 1", {"a": a}, {"k": 1}).blen == 0  # no column read
    with pytest.raises(ValueError):
        blocks.operands("a + b", {"a": a, "b": np.arange(4)})
    with pytest.raises(TypeError):
        blocks.operands("a", {"a": a}, blen=True)


# -- conjunctions of filters: the parts after a sparse one on its rows only -------------

CONJUNCTIONS = ["(a > 990) & (b < 0.5)", "(a >= 40) & (a < 45) & (b > 0) & (k < a)",
                "(b > 5) & (a < 3)", "(a < 0) & (b > 0)", "(a > 10) and (b < 1) and (a < 20)",
                "~(a < 995) & ((b > 0) | (a == 999))", "(a > 300) & (a < 310) & (s == 'x')"]


@pytest.mark.parametrize("text", CONJUNCTIONS)
@pytest.mark.parametrize("nthreads, blen", [(1, 100), (2, 64), (3, 1), (1, N)])
def test_conjunctions_give_the_whole_result(columns, text, nthreads, blen):
    cols = {**columns, "s": np.array(["x", "y", "z"])[np.arange(N) % 3]}
    expected = compile_expression(text).evaluate({**cols, "k": 41})
    got = list(evaluate_blocks(text, cols, {"k": 41}, blen=blen, nthreads=nthreads,
                               with_columns=True))
    np.testing.assert_array_equal(np.concatenate([m for _, m, _ in got]), expected)
    for start, mask, read in got:
        for name, rows in read.items():  # columns given back are whole blocks
            np.testing.assert_array_equal(rows, cols[name][start:start + len(mask)])


def test_a_sparse_part_spares_reading_the_other_columns(columns):
    log = []
    cols = {"a": columns["a"], "b": Recording(columns["b"], log)}
    got = list(evaluate_blocks("(a >= 40) & (a < 45) & (b > -10)", cols, blen=N, nthreads=1,
                               with_columns=True))
    np.testing.assert_array_equal(np.flatnonzero(got[0][1]), np.arange(40, 45))
    assert log == [(40, 45)]                # b: from the first to the last row left
    assert sorted(got[0][2]) == ["a"]       # and not given back as a whole block
    log.clear()
    list(evaluate_blocks("(a < 0) & (b > -10)", cols, blen=N, nthreads=1))
    assert log == []                        # no row left: b is not read at all


def test_a_sparse_part_still_raises_what_the_whole_raises(columns):
    cols = {"a": columns["a"], "s": np.array(["x"] * N)}
    with pytest.raises(ExpressionError):
        compile_expression("(a < 0) & (s > 3)").evaluate(cols)
    with pytest.raises(ExpressionError):
        evaluate("(a < 0) & (s > 3)", cols, nthreads=1)
