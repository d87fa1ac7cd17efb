"""What the crash harness's writers do, and the NumPy model of what they did.

A writer runs *groups* of operations on a dataset, each group ended by a
flush.  Before group ``k`` it logs ``B k``, after its flush ``D k``.  The
operations of a group are drawn by :func:`make_group` from a seeded random
generator and the current :class:`State` only, so the harness replays a
killed writer's groups exactly on a NumPy model and knows every state the
dataset may be in after the kill: the state before the group in progress,
or after any of its operations (an operation is durable only once
committed, and each commit is atomic per carray).

Families (what the writer works on):

``carray``
    a bcolzx-format carray: append, ``c[a:b] = v``, ``c[positions] = v``,
    trim, resize (both ways), attrs set/delete, compact;
``legacy``
    the same on a legacy bcolz (format v1) carray, without compact;
``ctable``
    a bcolzx-format ctable: append, ``t[a:b] = rows``, trim, resize,
    addcol, delcol, table and column attrs, compact.

This module must import nothing from the test suite: the writer processes
import it as a top-level module (see ``zygote.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Rows per chunk of the datasets the crash harness creates (small: many chunks).
CHUNKLEN = 50
#: Keep datasets around this many rows (trim when longer).
MAX_ROWS = 3000
#: The columns a ctable starts with.
BASE_COLUMNS = {"a": "i8", "b": "f8", "c": "S4"}


@dataclass
class State:
    """A dataset's content: ``{name: values}`` (one entry ``''`` for a carray),
    the column order, the attributes (``{'': table attrs, name: column attrs}``)."""

    cols: dict
    names: list
    attrs: dict = field(default_factory=dict)

    @property
    def length(self) -> int:
        return len(self.cols[self.names[0]]) if self.names else 0

    def copy(self) -> "State":
        return State({k: v.copy() for k, v in self.cols.items()}, list(self.names),
                     {k: dict(v) for k, v in self.attrs.items()})

    def same_as(self, other: "State") -> bool:
        return self.names == other.names and self.attrs == other.attrs and all(
            _same(self.cols[n], other.cols[n]) for n in self.names)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# -- drawing operations ----------------------------------------------------------------


def _values(rng: np.random.Generator, dtype: str, n: int) -> np.ndarray:
    dt = np.dtype(dtype)
    if rng.random() < 0.15:  # a constant run: special (zero or value) chunks
        return np.full(n, 0 if rng.random() < 0.5 else 7, dtype=dt) if dt.kind != "S" \
            else np.full(n, b"zz", dtype=dt)
    if dt.kind == "f":
        return rng.normal(size=n).astype(dt)
    if dt.kind == "S":
        return np.array([b"%d" % x for x in rng.integers(0, 9999, n)], dtype=dt)
    return rng.integers(-10**9, 10**9, n).astype(dt)


def _dflt(dtype: np.dtype):
    return np.zeros((), dtype=dtype)


def make_group(rng: np.random.Generator, state: State, family: str) -> list[tuple]:
    """The operations of the next group (1 to 4 of them), given the current state."""
    ops = []
    for _ in range(int(rng.integers(1, 5))):
        ops.append(_one_op(rng, state, family))
        state = apply_model(state, ops[-1])
    return ops


def _one_op(rng, state: State, family: str) -> tuple:
    n = state.length
    r = rng.random()
    main = state.names[0]
    if n > MAX_ROWS and r < 0.5:
        return ("trim", int(rng.integers(1, n // 2)))
    if r < 0.35:
        k = int(rng.integers(1, 4 * CHUNKLEN))
        return ("append", {name: _values(rng, state.cols[name].dtype.str, k)
                           for name in state.names})
    if r < 0.5 and n:
        a = int(rng.integers(0, n))
        b = min(n, a + int(rng.integers(1, 3 * CHUNKLEN)))
        return ("setslice", a, {name: _values(rng, state.cols[name].dtype.str, b - a)
                                for name in state.names})
    if r < 0.58 and n and family != "ctable":
        pos = np.unique(rng.integers(0, n, int(rng.integers(1, 20))))
        return ("setpos", pos, _values(rng, state.cols[main].dtype.str, len(pos)))
    if r < 0.66 and n:
        return ("trim", int(rng.integers(0, min(n, 2 * CHUNKLEN) + 1)))
    if r < 0.74:
        return ("resize", max(0, n + int(rng.integers(-2 * CHUNKLEN, 2 * CHUNKLEN))))
    if r < 0.82:
        target = "" if family != "ctable" or rng.random() < 0.5 else \
            state.names[int(rng.integers(0, len(state.names)))]
        if state.attrs.get(target) and rng.random() < 0.3:
            key = sorted(state.attrs[target])[0]
            return ("delattr", target, key)
        return ("setattr", target, f"k{int(rng.integers(0, 5))}", int(rng.integers(0, 1000)))
    if family == "ctable" and r < 0.9:
        extra = [x for x in state.names if x not in BASE_COLUMNS]
        if extra and (rng.random() < 0.5 or len(extra) > 2):
            return ("delcol", extra[int(rng.integers(0, len(extra)))])
        name = f"x{int(rng.integers(0, 100))}"
        if name in state.names:
            return ("flush",)
        return ("addcol", name, _values(rng, "i4", n))
    if family != "legacy" and r < 0.95:
        return ("compact",)
    return ("flush",)


# -- the model -------------------------------------------------------------------------


def apply_model(state: State, op: tuple) -> State:
    """The state after `op` (a new State; `state` is unchanged)."""
    s = state.copy()
    kind = op[0]
    if kind == "append":
        for name in s.names:
            s.cols[name] = np.concatenate([s.cols[name], op[1][name]])
    elif kind == "setslice":
        a = op[1]
        for name in s.names:
            v = op[2][name]
            s.cols[name][a:a + len(v)] = v
    elif kind == "setpos":
        s.cols[s.names[0]][op[1]] = op[2]
    elif kind == "trim":
        for name in s.names:
            s.cols[name] = s.cols[name][:len(s.cols[name]) - op[1]]
    elif kind == "resize":
        for name in s.names:
            col = s.cols[name]
            if op[1] <= len(col):
                s.cols[name] = col[:op[1]]
            else:
                fill = np.full(op[1] - len(col), _dflt(col.dtype), dtype=col.dtype)
                s.cols[name] = np.concatenate([col, fill])
    elif kind == "setattr":
        s.attrs.setdefault(op[1], {})[op[2]] = op[3]
    elif kind == "delattr":
        del s.attrs[op[1]][op[2]]
    elif kind == "addcol":
        s.names.append(op[1])
        s.cols[op[1]] = op[2].copy()
        s.attrs.setdefault(op[1], {})
    elif kind == "delcol":
        s.names.remove(op[1])
        del s.cols[op[1]]
        s.attrs.pop(op[1], None)
    return s


def prefix_states(state: State, ops: list[tuple]) -> list[State]:
    """The state before `ops` and after each of them."""
    out = [state]
    for op in ops:
        out.append(apply_model(out[-1], op))
    return out


def rewritten(state: State, ops: list[tuple]) -> dict:
    """``{column: {row: {row bytes, ...}}}``: the values `ops` (run from `state`) wrote
    over rows, as raw bytes."""
    out: dict = {}
    for op in ops:
        if op[0] == "setslice":
            for name, v in op[2].items():
                rows = out.setdefault(name, {})
                for i in range(len(v)):
                    rows.setdefault(op[1] + i, set()).add(v[i:i + 1].tobytes())
        elif op[0] == "setpos":
            rows = out.setdefault(state.names[0], {})
            for r, i in zip(op[1], range(len(op[2]))):
                rows.setdefault(int(r), set()).add(op[2][i:i + 1].tobytes())
        state = apply_model(state, op)
    return out


def replay(base: State, family: str, seed: int, groups: int) -> list[list[tuple]]:
    """The operations of the first `groups` groups a writer seeded with `seed` runs
    from `base` (what :func:`run_writer` does, without a dataset)."""
    rng = np.random.default_rng(seed)
    state, out = base, []
    for _ in range(groups):
        ops = make_group(rng, state, family)
        out.append(ops)
        state = prefix_states(state, ops)[-1]
    return out


# -- reading a dataset as a State ----------------------------------------------------------


def read_state(rootdir: str) -> State:
    """The content of the dataset at `rootdir`, read with the public API (mode 'r')."""
    import bcolzx

    obj = bcolzx.open(rootdir, mode="r")
    if isinstance(obj, bcolzx.ctable):
        names = list(obj.names)
        cols = {n: obj.cols[n][:len(obj)] for n in names}
        attrs = {"": obj.attrs.getall()}
        attrs.update({n: obj.cols[n].attrs.getall() for n in names})
        return State(cols, names, attrs)
    return State({"": obj[:]}, [""], {"": obj.attrs.getall()})


# -- the writer ------------------------------------------------------------------------------


def _compact(obj) -> None:
    try:
        from bcolzx.compact import compact_carray, compact_ctable
    except ImportError:  # the public compact() does not exist yet: the engine's
        for col in (obj.cols.values() if hasattr(obj, "cols") else [obj]):
            col._engine.compact()
        return
    (compact_ctable if hasattr(obj, "cols") else compact_carray)(obj)


def apply_bcolzx(obj, op: tuple) -> None:
    """Do `op` on the open carray or ctable `obj` (what :func:`apply_model` models)."""
    kind = op[0]
    is_table = hasattr(obj, "cols")
    if kind == "append":
        obj.append([op[1][n] for n in obj.names] if is_table else op[1][""])
    elif kind == "setslice":
        a = op[1]
        if is_table:
            rows = np.empty(len(op[2][obj.names[0]]), dtype=obj.dtype)
            for n in obj.names:
                rows[n] = op[2][n]
            obj[a:a + len(rows)] = rows
        else:
            obj[a:a + len(op[2][""])] = op[2][""]
    elif kind == "setpos":
        obj[op[1]] = op[2]
    elif kind == "trim":
        obj.trim(op[1])
    elif kind == "resize":
        obj.resize(op[1])
    elif kind == "setattr":
        target = obj.cols[op[1]] if op[1] else obj
        target.attrs[op[2]] = op[3]
    elif kind == "delattr":
        target = obj.cols[op[1]] if op[1] else obj
        del target.attrs[op[2]]
    elif kind == "addcol":
        obj.addcol(op[2], name=op[1])
    elif kind == "delcol":
        obj.delcol(op[1])
    elif kind == "compact":
        _compact(obj)
    elif kind != "flush":  # pragma: no cover - programming error
        raise ValueError(kind)


def run_writer(rootdir: str, family: str, seed: int, log_fd: int, groups: int = 10**9) -> None:
    """Run groups of operations on `rootdir` until killed (or `groups` are done),
    logging ``B k`` before group k and ``D k`` after its flush to `log_fd`."""
    import bcolzx

    base = read_state(rootdir)
    obj = bcolzx.open(rootdir, mode="a")
    rng = np.random.default_rng(seed)
    state = base
    for k in range(groups):
        ops = make_group(rng, state, family)
        os_write(log_fd, f"B {k}\n")
        for op in ops:
            apply_bcolzx(obj, op)
        obj.flush()
        os_write(log_fd, f"D {k}\n")
        state = prefix_states(state, ops)[-1]


def os_write(fd: int, line: str) -> None:
    import os

    os.write(fd, line.encode())


def new_state(family: str) -> State:
    """The content of the dataset a campaign starts from (see :func:`create`)."""
    rng = np.random.default_rng(12345)
    if family == "ctable":
        cols = {n: _values(rng, dt, 700) for n, dt in BASE_COLUMNS.items()}
        return State(cols, list(BASE_COLUMNS), {"": {}, **{n: {} for n in BASE_COLUMNS}})
    dtype = "i4" if family == "legacy" else "f8"
    return State({"": _values(rng, dtype, 700)}, [""], {"": {}})


def create(rootdir: str, family: str) -> State:
    """Create the starting dataset of a campaign at `rootdir`; returns its content.

    For ``legacy``, `rootdir` must already hold a writable copy of a legacy
    bcolz int32 carray (with a zero ``dflt``): it is emptied and filled with
    :func:`new_state`'s rows, so it stays v1; the others are new bcolzx
    datasets.
    """
    import bcolzx

    st = new_state(family)
    if family == "ctable":
        bcolzx.ctable([st.cols[n] for n in st.names], names=st.names, rootdir=rootdir,
                      chunklen=CHUNKLEN).flush()
    elif family == "legacy":
        c = bcolzx.open(rootdir, mode="a")
        c.trim(len(c))
        c.append(st.cols[""])
        c.flush()
        for key in list(c.attrs.getall()):
            del c.attrs[key]
    else:
        from bcolzx._format.meta import Storage
        from bcolzx._storage import ChunkedArray, DirectoryStore

        # Four chunks per superchunk file: truncations and appends cross files.
        arr = ChunkedArray(DirectoryStore.create(
            rootdir, Storage(dtype="f8", chunklen=CHUNKLEN, chunks_per_superchunk=4)))
        arr.append(st.cols[""])
        arr.close()
    return read_state(rootdir)


def run_convert(rootdir: str, log_fd: int) -> None:
    """Convert the legacy dataset at `rootdir` in place, logging ``B 0`` and ``D 0``."""
    import bcolzx

    os_write(log_fd, "B 0\n")
    bcolzx.convert(rootdir)
    os_write(log_fd, "D 0\n")
