"""The programs of the differential test: hypothesis strategies for the next op.

A program is a list of :class:`diff_model.Op`, each one line of Python that
both workers (:mod:`diff_worker`) run against their ``bcolz``.  The parent
draws them one at a time from :func:`step`, which looks at the
:class:`diff_model.Model` of what exists
(carrays ``c0``..``c2``, ctables ``t0``..``t1``, their dtype, length and
row shape, and the directories on disk).  The model is updated from what
*legacy* bcolz reported (the reference), so a program keeps making sense
(indices near the length, expressions over columns that exist, reopening
directories that were flushed and closed).

Only NumPy and hypothesis are imported here; arrays are written in the ops as
calls to ``data(dtype, shape, seed, pattern)``, the deterministic generator
both workers share (:func:`diff_worker.data`).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from .diff_model import Model, Obj, Op
from .diff_worker import data

#: Row dtypes of carrays and ctable columns.
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "float32", "float64",
          "S3", "U4", "datetime64[D]", "datetime64[ns]")
NUMERIC = ("int8", "int16", "int32", "int64", "uint8", "uint16", "float32", "float64")
CARRAY_NAMES = ("c0", "c1", "c2")
CTABLE_NAMES = ("t0", "t1")
COLUMN_NAMES = ("a", "b", "c", "d", "e")
CHUNKLENS = (1, 2, 3, 4, 5, 7, 8, 16, 64, 100)


# -- code for values -----------------------------------------------------------------------


def dt_code(dtype) -> str:
    """A short literal for `dtype` in generated code."""
    dtype = np.dtype(dtype)
    if dtype.names:
        fields = []
        for n in dtype.names:
            field_dtype = dtype.fields[n][0]
            base = dt_code(field_dtype.base).strip("'")
            fields.append((n, base, field_dtype.shape) if field_dtype.shape else (n, base))
        return repr(fields)
    if dtype.shape:
        return f"({dt_code(dtype.base)}, {dtype.shape!r})"
    if dtype.kind == "S":
        return f"'S{dtype.itemsize}'"
    if dtype.kind == "U":
        return f"'U{dtype.itemsize // 4}'"
    return f"'{dtype.name}'"


def shape_code(n: int, rowshape: tuple) -> str:
    return str(n) if not rowshape else repr((n, *rowshape))


_SCALARS = {
    "b": ["True", "False", "np.True_", "1"],
    "i": ["0", "1", "-1", "7", "-100", "np.int8(5)", "3.0", "127"],
    "u": ["0", "1", "7", "200", "np.uint8(3)", "3.0"],
    "f": ["0.0", "1.5", "-2.25", "float('nan')", "np.float32(0.5)", "7", "-0.0", "1e30"],
    "S": ["b''", "b'ab'", "b'abc'", "'xy'", "b'abcdef'"],
    "U": ["''", "'ab'", "'\u00e9t\u00e9'", "'abcd'", "'abcdefg'"],
    "M": ["np.datetime64('2001-02-03')", "np.datetime64('1999-12-31T12:00')",
          "'2010-10-10'", "np.datetime64('NaT')", "0"],
}


@st.composite
def scalar_code(draw, dtype) -> str:
    """A literal suited to `dtype` (sometimes one needing conversion)."""
    kind = np.dtype(dtype).base.kind
    return draw(st.sampled_from(_SCALARS[kind]))


@st.composite
def array_code(draw, dtype, shape: str) -> str:
    seed = draw(st.integers(0, 20))
    pattern = draw(st.sampled_from(["rand", "rand", "rand", "range", "zeros", "ones"]))
    tail = "" if pattern == "rand" else f", '{pattern}'"
    return f"data({dt_code(dtype)}, {shape}, {seed}{tail})"


@st.composite
def value_code(draw, obj: Obj, count: int, allow_list: bool = True) -> str:
    """Values for `count` rows of carray `obj`: a scalar (broadcast) or an array."""
    how = draw(st.sampled_from(["scalar", "array", "array", "array"]
                               + (["list"] if allow_list and not obj.rowshape else [])
                               + ["wrong"]))
    if how == "scalar":
        return draw(scalar_code(obj.dtype))
    if how == "list":
        return "[" + ", ".join(draw(scalar_code(obj.dtype)) for _ in range(count)) + "]"
    if how == "wrong":  # another length or another dtype
        other = draw(st.sampled_from(DTYPES))
        n = draw(st.sampled_from([count, count + 1, max(count - 1, 0)]))
        return draw(array_code(other, shape_code(n, obj.rowshape)))
    return draw(array_code(obj.dtype, shape_code(count, obj.rowshape)))


@st.composite
def length(draw) -> int:
    size = draw(st.sampled_from(["tiny", "small", "small", "mid", "big"]))
    return {"tiny": lambda: draw(st.integers(0, 3)),
            "small": lambda: draw(st.integers(0, 40)),
            "mid": lambda: draw(st.integers(40, 400)),
            "big": lambda: draw(st.integers(400, 3000))}[size]()


@st.composite
def index_code(draw, n: int) -> tuple[str, set]:
    """An integer index near the bounds of length `n`, and tags.

    No negative index on an empty container: legacy reads memory it does not own there
    (and sometimes dies of it), the bug of diff_known 'legacy-below-range-index'.
    """
    i = draw(st.integers(-n - 3 if n else 0, n + 2))
    tags = set()
    if i >= n or i < -n:
        tags.add("out_of_range")
    if i < -n:
        tags.add("below_range")
    wrap = draw(st.sampled_from(["", "", "", "np.int64", "np.int32", "np.uint8"]))
    if wrap == "np.uint8" and i < 0:
        wrap = ""
    return (f"{wrap}({i})" if wrap else str(i)), tags


@st.composite
def slice_code(draw, n: int) -> tuple[str, set, int]:
    """A slice near the bounds of length `n`: code, tags, selected length."""
    bound = st.one_of(st.none(), st.integers(-n - 3, n + 3))
    start, stop = draw(bound), draw(bound)
    step = draw(st.sampled_from([None, None, 1, 2, 3, 5, -1, -2, -3, 0]))
    tags = set()
    if step is not None and step < 0:
        tags.add("neg_step")
    if step == 0:
        tags.add("zero_step")
        count = 0
    else:
        count = len(range(*slice(start, stop, step).indices(n)))
    text = f"{'' if start is None else start}:{'' if stop is None else stop}"
    if step is not None:
        text += f":{step}"
    return text, tags, count


@st.composite
def mask_code(draw, n: int) -> tuple[str, set, int | None]:
    """A boolean mask over `n` rows: code, tags, number of True (None if unknown)."""
    how = draw(st.sampled_from(["array", "array", "list", "wrong"]))
    seed = draw(st.integers(0, 20))
    if how == "wrong":
        m = draw(st.sampled_from([n + 1, max(n - 1, 0), 0]))
        if m == n:
            m = n + 1
        return f"data('bool', {m}, {seed})", {"mask_wrong_len"}, None
    mask = data("bool", n, seed)
    if how == "list":
        return repr([bool(x) for x in mask]), {"bool_list"}, int(mask.sum())
    return f"data('bool', {n}, {seed})", set(), int(mask.sum())


@st.composite
def int_list_code(draw, n: int) -> tuple[str, set, int]:
    k = draw(st.integers(0, 5))
    hi = max(n - 1, 0)
    items = draw(st.lists(st.integers(-n - 1, hi + 1) if n else st.integers(-2, 2),
                          min_size=k, max_size=k))
    tags = set()
    if any(i >= n or i < -n for i in items):
        tags.add("out_of_range")
    if any(i < -n for i in items):
        tags.add("below_range")
    if any(i < 0 for i in items):
        tags.add("neg_index")
    how = draw(st.sampled_from(["list", "list", "np.array", "np.array_i4", "np.array_u1"]))
    if how == "list":
        return repr(items), tags, k
    if how == "np.array_i4":
        tags.add("int32_array")
        return f"np.array({items!r}, dtype='int32')", tags, k
    if how == "np.array_u1" and all(i >= 0 for i in items):
        tags.add("uint8_array")
        return f"np.array({items!r}, dtype='uint8')", tags, k
    if not items:
        tags.add("empty_int_array")
        return "np.array([], dtype='int64')", tags, 0
    return f"np.array({items!r})", tags, k


# -- expressions ---------------------------------------------------------------------------


def _expr_templates(dtype) -> list[str]:
    kind = np.dtype(dtype).base.kind
    if kind == "b":
        return ["{x}", "~{x}", "{x} & {y}", "{x} | ({y} == {y})"]
    if kind in "iuf":
        return ["{x} > 0", "{x} + 1", "{x} * 2 - {y}", "({x} > -5) & ({x} < 20)",
                "{x} == {y}", "-{x}", "{x} / 4", "abs({x})", "{x} ** 2", "where({x} > 0, {x}, 0)",
                "sqrt({x})", "{x} != 3"]
    if kind == "S":
        return ["{x} == b'ab'", "{x} > b'a'"]
    return ["{x} == {x}"]


@st.composite
def expression_code(draw, x: str, dtype, y: str | None = None, ydtype=None,
                    boolean: bool = False) -> tuple[str, set]:
    """An expression over name `x` (and `y` of the same length if given)."""
    templates = _expr_templates(dtype)
    if y is None or np.dtype(ydtype).kind != np.dtype(dtype).kind and \
            {np.dtype(ydtype).kind, np.dtype(dtype).kind} - set("iuf"):
        templates = [t for t in templates if "{y}" not in t]
        y = x
    if boolean:
        booleans = [t for t in templates
                    if t.startswith(("{x} >", "(", "{x} ==", "{x} !=", "~")) or t == "{x}"
                    or "&" in t or "|" in t]
        templates = booleans or templates
    tags = set()
    template = draw(st.sampled_from(templates))
    expr = template.format(x=x, y=y)
    if np.dtype(dtype).base.kind == "S" and ">" in template:
        tags.add("bytes_order")  # legacy's numexpr orders bytes as signed chars
    if draw(st.integers(0, 30)) == 0:
        expr = expr.replace(x, "nosuchname", 1)
        tags.add("unknown_name")
    return expr, tags


# -- constructors --------------------------------------------------------------------------


@st.composite
def carray_kwargs(draw, model: Model, dtype,
                  ndim: bool = False) -> tuple[list[str], set, str | None, str | None]:
    """Keyword arguments of a carray constructor: code parts, tags, rootdir, mode.

    N-D carrays never get chunklen=1: legacy corrupts its own heap when whole rows of
    those are assigned (diff_known 'legacy-ndim-row-assign'), and crashes at some later,
    unrelated op.
    """
    parts, tags = [], set()
    chunklen = draw(st.one_of(st.sampled_from(CHUNKLENS[1:] if ndim else CHUNKLENS), st.none()))
    if chunklen is not None:
        parts.append(f"chunklen={chunklen}")
        tags.add(f"chunklen={chunklen}")
    if draw(st.integers(0, 4)) == 0:
        parts.append(f"expectedlen={draw(st.sampled_from([0, 1, 10, 1000, 100000]))}")
    if dtype is not None and draw(st.integers(0, 3)) == 0:
        parts.append(f"dflt={draw(scalar_code(dtype))}")
        tags.add("dflt")
    rootdir = mode = None
    disk = draw(st.sampled_from(["mem", "mem", "new", "existing"]))
    if disk == "new":
        rootdir = model.new_dir()
    elif disk == "existing" and model.free_dirs():
        rootdir = draw(st.sampled_from(model.free_dirs()))
        tags.add("existing_rootdir")
    if rootdir is not None:
        parts.append(f"rootdir={rootdir!r}")
        mode = draw(st.sampled_from([None, "w", "a"]))
        if mode is not None:
            parts.append(f"mode={mode!r}")
            tags.add(f"mode={mode}")
        mode = mode or "a"
    return parts, tags, rootdir, mode


@st.composite
def new_carray(draw, model: Model, name: str) -> Op:
    dtype = draw(st.sampled_from(DTYPES))
    rowshape = draw(st.sampled_from([(), (), (), (2,), (3, 2)]))
    n = draw(length())
    how = draw(st.sampled_from(["carray", "carray", "carray", "list", "empty", "zeros", "ones",
                                "fill", "arange", "fromiter", "copy", "eval"]))
    ref = None
    kw, tags, rootdir, mode = draw(carray_kwargs(model, dtype, ndim=bool(rowshape) or how in (
        "copy", "eval")))
    if how == "carray":
        args = [draw(array_code(dtype, shape_code(n, rowshape)))]
        if draw(st.integers(0, 4)) == 0:
            args.append(f"dtype={dt_code(draw(st.sampled_from(DTYPES)))}")
            tags.add("dtype_conversion")
        code = f"bcolz.carray({', '.join(args + kw)})"
    elif how == "list":
        k = draw(st.integers(0, 6))
        items = ", ".join(draw(scalar_code(dtype)) for _ in range(k))
        code = f"bcolz.carray([{items}]{''.join(', ' + p for p in kw)})"
    elif how == "empty":
        code = f"bcolz.carray([], dtype={dt_code(dtype)}{''.join(', ' + p for p in kw)})"
    elif how in ("zeros", "ones"):
        code = f"bcolz.{how}({shape_code(n, rowshape)}, dtype={dt_code(dtype)}" \
               f"{''.join(', ' + p for p in kw if not p.startswith('dflt'))})"
    elif how == "fill":
        code = f"bcolz.fill({shape_code(n, rowshape)}, {draw(scalar_code(dtype))}, " \
               f"dtype={dt_code(dtype)}{''.join(', ' + p for p in kw if not p.startswith('dflt'))})"
    elif how == "arange":
        start = draw(st.integers(-20, 20))
        stop = draw(st.integers(-20, 400))
        step = draw(st.sampled_from([None, 1, 2, 3, 7, -1, -3, 0.5, 0.25]))
        if step is not None and step < 0 and start < stop:
            # Legacy arange loops for ever on a negative step with start < stop.
            start, stop = stop, start
        args = [str(start), str(stop)] + ([] if step is None else [str(step)])
        if step is not None and (step < 0 or step != int(step)):
            tags.add("arange_negative_or_fractional_step")
        num = draw(st.sampled_from([None, "int8", "int32", "int64", "float32", "float64",
                                    "uint16"]))
        if num is not None:
            args.append(f"dtype={dt_code(num)}")
            if np.dtype(num).kind in "iu" and not (np.iinfo(num).min <= start
                                                    <= np.iinfo(num).max):
                tags.add("arange_start_overflow")
        code = f"bcolz.arange({', '.join(args + [p for p in kw if not p.startswith('dflt')])})"
        ref = f"np.array_equal(np.asarray({name}[:]), np.arange({', '.join(args)}))"
    elif how == "fromiter":
        k = draw(st.integers(0, 60))
        count = draw(st.sampled_from([k, k, -1, max(k - 3, 0), k + 5]))
        if count > k:
            tags.add("fromiter_short")
        if 0 <= count < k:
            tags.add("fromiter_long")
        tags.add(f"count={count}")
        num = draw(st.sampled_from(["int8", "int32", "int64", "float64", "bool"]))
        code = f"bcolz.fromiter((i % 11 for i in range({k})), dtype={dt_code(num)}, " \
               f"count={count}{''.join(', ' + p for p in kw if not p.startswith('dflt'))})"
    elif how == "copy" and model.carrays():
        src = draw(st.sampled_from(model.carrays()))
        code = f"{src}.copy({', '.join(p for p in kw if not p.startswith('dflt'))})"
    elif how == "eval" and model.carrays():
        src = draw(st.sampled_from(model.carrays()))
        expr, etags = draw(expression_code(src, model.objs[src].dtype))
        tags |= etags
        code = f"bcolz.eval({expr!r}{''.join(', ' + p for p in kw if not p.startswith('dflt'))})"
    else:
        how = "carray"
        code = f"bcolz.carray({draw(array_code(dtype, shape_code(n, rowshape)))}" \
               f"{''.join(', ' + p for p in kw)})"
    tags.add(how)
    return Op(code, f"new.carray.{how}", frozenset(tags), target=name, rootdir=rootdir,
              mode=mode, ref=ref)


@st.composite
def new_ctable(draw, model: Model, name: str) -> Op:
    ncols = draw(st.integers(1, 4))
    names = list(COLUMN_NAMES[:ncols])
    dtypes = [draw(st.sampled_from(DTYPES)) for _ in names]
    n = draw(length())
    how = draw(st.sampled_from(["arrays", "arrays", "structured", "zeros", "fromiter",
                                "carrays", "bad_names", "bad_lengths", "copy"]))
    kw, tags, rootdir, mode = draw(carray_kwargs(model, None, ndim=how in ("carrays", "copy")))
    tail = "".join(", " + p for p in kw)
    struct = [(nm, dt) for nm, dt in zip(names, dtypes)]
    if how == "arrays" or how == "bad_lengths":
        lens = [n] * ncols
        if how == "bad_lengths":
            lens[-1] = n + 1
        cols = ", ".join(draw(array_code(dt, str(m))) for dt, m in zip(dtypes, lens))
        names_code = draw(st.sampled_from([repr(names), repr(tuple(names)), None]))
        code = f"bcolz.ctable([{cols}]" + (f", names={names_code}" if names_code else "") \
            + tail + ")"
    elif how == "bad_names":
        cols = ", ".join(draw(array_code(dt, str(n))) for dt in dtypes)
        bad = draw(st.sampled_from([names + ["z"], names[:-1], [names[0]] * ncols,
                                    " ".join(names), [1] + names[1:]]))
        if isinstance(bad, list) and len(set(map(str, bad))) < len(bad):
            tags.add("duplicate_names")
        if isinstance(bad, str):
            tags.add("names_string")
        code = f"bcolz.ctable([{cols}], names={bad!r}{tail})"
    elif how == "structured":
        code = f"bcolz.ctable({draw(array_code(struct, str(n)))}{tail})"
    elif how == "zeros":
        code = f"bcolz.zeros({n}, dtype={dt_code(struct)}{tail})"
    elif how == "fromiter":
        k = draw(st.integers(0, 40))
        count = draw(st.sampled_from([k, -1, k + 2]))
        if count > k:
            tags.add("fromiter_short")
        tags.add(f"count={count}")
        num = [(nm, "int32") if i % 2 == 0 else (nm, "float64") for i, nm in enumerate(names)]
        row = "(" + ", ".join("i" if i % 2 == 0 else "i / 2" for i in range(ncols)) + \
            ("," if ncols == 1 else "") + ")"
        code = f"bcolz.fromiter(({row} for i in range({k})), dtype={dt_code(num)}, " \
               f"count={count}{tail})"
    elif how == "carrays" and len(model.carrays()) >= 1:
        srcs = draw(st.lists(st.sampled_from(model.carrays()), min_size=1, max_size=3,
                             unique=True))
        code = f"bcolz.ctable([{', '.join(srcs)}], names={names[:len(srcs)]!r}{tail})"
        # The model drops the sources afterwards (see diff_model.Model.learn).
        tags |= {"shares_carrays"} | {f"source={s}" for s in srcs}
    elif how == "copy" and model.ctables():
        src = draw(st.sampled_from(model.ctables()))
        code = f"{src}.copy({', '.join(kw)})"
    else:
        how = "structured"
        code = f"bcolz.ctable({draw(array_code(struct, str(n)))}{tail})"
    tags.add(how)
    return Op(code, f"new.ctable.{how}", frozenset(tags), target=name, rootdir=rootdir,
              mode=mode)


@st.composite
def reopen(draw, model: Model, name: str) -> Op:
    if not model.free_dirs() or draw(st.integers(0, 9)) == 0:  # a directory that is not there
        mode = draw(st.sampled_from(["a", "r", None]))
        how = draw(st.sampled_from(["open", "carray", "ctable"]))
        mode_code = "" if mode is None else f", mode={mode!r}"
        code = f"bcolz.{how}({'' if how == 'open' else 'rootdir='}'nosuchdir'{mode_code})"
        return Op(code, f"reopen.missing.{how}", frozenset({f"mode={mode}"}), target=name)
    rootdir = draw(st.sampled_from(model.free_dirs()))
    mode = draw(st.sampled_from(["a", "a", "r", "r", "w", None]))
    how = draw(st.sampled_from(["open", "open", "open", "carray", "ctable"]))
    mode_code = "" if mode is None else f", mode={mode!r}"
    if how == "open":
        code = f"bcolz.open({rootdir!r}{mode_code})"
    else:
        code = f"bcolz.{how}(rootdir={rootdir!r}{mode_code})"
    return Op(code, f"reopen.{how}", frozenset({f"mode={mode}"}), target=name,
              rootdir=rootdir, mode=mode or "a")


# -- operations on a carray ----------------------------------------------------------------


def _object_tags(o: Obj) -> set:
    tags = set(o.flags)
    if o.rootdir is not None:
        tags.add("persistent")
    if o.chunklen is not None:
        tags.add(f"chunklen={o.chunklen}")
    return tags


@st.composite
def carray_op(draw, model: Model, name: str) -> Op:
    o = model.objs[name]
    n = o.length
    what = draw(st.sampled_from(
        ["getitem"] * 5 + ["setitem"] * 3 + ["append"] * 3 +
        ["trim", "resize", "iter", "where", "wheretrue", "sum", "attrs", "attrs", "props",
         "eval", "flush", "close", "misc", "iterblocks"]))
    tags: set = set()
    if o.rowshape:
        tags.add("ndim")
    if o.mode == "r":
        tags.add("mode_r")
    if n == 0:
        tags.add("empty")
    tags |= _object_tags(o)
    if what == "getitem":
        key, ktags, ref = draw(carray_key(model, name))
        return Op(f"{name}[{key}]", "carray.getitem", frozenset(tags | ktags), obj=name,
                  ref=ref)
    if what == "setitem":
        key, ktags, count = draw(carray_key(model, name, for_set=True))
        value = draw(value_code(o, count if count is not None else 1))
        if count is None:
            value = draw(scalar_code(o.dtype))
        return Op(f"{name}[{key}] = {value}", "carray.setitem", frozenset(tags | ktags),
                  obj=name, mutates=True)
    if what == "append":
        how = draw(st.sampled_from(["rows", "rows", "one", "wrong_shape", "values"]))
        if how == "one":
            value = draw(scalar_code(o.dtype)) if not o.rowshape else \
                draw(array_code(o.dtype, repr(o.rowshape)))
        elif how == "wrong_shape":
            shape = draw(st.sampled_from([(2, 3), (3,), (2, 2, 2), (0, 4)]))
            value = draw(array_code(o.dtype, repr(shape)))
            tags.add("append_wrong_shape")
        else:
            k = draw(st.one_of(st.integers(0, 10), st.integers(10, 300)))
            value = draw(value_code(o, k)) if how == "values" else \
                draw(array_code(o.dtype, shape_code(k, o.rowshape)))
        return Op(f"{name}.append({value})", "carray.append", frozenset(tags), obj=name,
                  mutates=True)
    if what == "trim":
        k = draw(st.integers(-5, n + 3))
        if k > n:
            tags.add("trim_too_many")
        return Op(f"{name}.trim({k})", "carray.trim", frozenset(tags), obj=name, mutates=True)
    if what == "resize":
        k = draw(st.one_of(st.integers(0, n + 20), st.integers(-2, -1)))
        return Op(f"{name}.resize({k})", "carray.resize", frozenset(tags), obj=name,
                  mutates=True)
    if what == "iter":
        args = []
        for kwname, strat in (("start", st.integers(-n - 2, n + 2)),
                              ("stop", st.integers(-n - 2, n + 2)),
                              ("step", st.sampled_from([1, 2, 3, 7, 0, -1])),
                              ("limit", st.integers(0, 12)), ("skip", st.integers(0, 12))):
            if draw(st.booleans()):
                v = draw(strat)
                args.append(f"{kwname}={v}")
                if kwname == "step" and v <= 0:
                    tags.add("iter_nonpositive_step")
        form = draw(st.sampled_from(["iter", "iter", "plain"]))
        code = f"list({name})" if form == "plain" else f"list({name}.iter({', '.join(args)}))"
        return Op(code, "carray.iter", frozenset(tags), obj=name)
    if what == "where":
        mask, mtags, _ = draw(mask_code(n))
        tags |= mtags
        src = draw(st.sampled_from(["mask", "mask", "carray_expr", "list"]))
        if src == "carray_expr" and o.dtype.kind in "iuf" and not o.rowshape:
            mask = f"bcolz.eval('{name} > 0')"
            tags.discard("mask_wrong_len")
        elif src == "list":
            mask = mask if mask.startswith("[") else f"list({mask})"
            tags.add("where_list")
        args = [mask]
        if draw(st.booleans()):
            args.append(f"limit={draw(st.integers(0, 10))}")
        if draw(st.booleans()):
            args.append(f"skip={draw(st.integers(0, 10))}")
        return Op(f"list({name}.where({', '.join(args)}))", "carray.where", frozenset(tags),
                  obj=name)
    if what == "wheretrue":
        args = []
        if draw(st.booleans()):
            args.append(f"limit={draw(st.integers(0, 10))}")
        if draw(st.booleans()):
            args.append(f"skip={draw(st.integers(0, 10))}")
        if o.dtype.kind != "b":
            tags.add("not_bool")
        return Op(f"list({name}.wheretrue({', '.join(args)}))", "carray.wheretrue",
                  frozenset(tags), obj=name)
    if what == "sum":
        dt = draw(st.sampled_from([None, "float64", "int64", "int8", "bool"]))
        arg = "" if dt is None else "dtype=" + dt_code(dt)
        return Op(f"{name}.sum({arg})", "carray.sum", frozenset(tags), obj=name,
                  ref=f"np.asarray({name}[:]).sum({arg})")
    if what == "attrs":
        return draw(attrs_op(name, tags, "carray"))
    if what == "props":
        props = ["len({0})", "{0}.shape", "{0}.dtype", "{0}.ndim", "{0}.dflt", "{0}.nbytes",
                 "{0}.itemsize", "{0}.atomsize", "{0}.size", "{0}.mode", "{0}.len",
                 "np.asarray({0})", "{0}[:]"]
        if o.chunklen is not None:
            props += ["{0}.chunklen", "{0}.nchunks", "{0}.nleftover"]
        prop = draw(st.sampled_from(props))
        return Op(prop.format(name), "carray.prop." + prop.format("x"), frozenset(tags),
                  obj=name)
    if what == "eval":
        others = [c for c in model.carrays() if model.objs[c].length == n
                  and model.objs[c].rowshape == o.rowshape]
        y = draw(st.sampled_from(others)) if others else None
        expr, etags = draw(expression_code(name, o.dtype, y, model.objs[y].dtype if y else None))
        tags |= etags
        how = draw(st.sampled_from(["plain", "plain", "numpy", "python", "user_dict", "getitem",
                                    "setitem"]))
        if how == "getitem":
            bexpr, etags = draw(expression_code(name, o.dtype, y,
                                                model.objs[y].dtype if y else None, True))
            return Op(f"{name}[{bexpr!r}]", "carray.getitem", frozenset(tags | etags | {"expr"}),
                      obj=name)
        if how == "setitem":
            bexpr, etags = draw(expression_code(name, o.dtype, y,
                                                model.objs[y].dtype if y else None, True))
            return Op(f"{name}[{bexpr!r}] = {draw(scalar_code(o.dtype))}", "carray.setitem",
                      frozenset(tags | etags | {"expr"}), obj=name, mutates=True)
        extra = {"plain": "", "numpy": ", out_flavor='numpy'", "python": ", vm='python'",
                 "user_dict": ""}[how]
        if how == "user_dict":
            expr2 = expr.replace(name, "x")
            return Op(f"bcolz.eval({expr2!r}, user_dict={{'x': {name}}})", "eval",
                      frozenset(tags | {"user_dict"}), obj=name)
        ref = None
        if how == "python":  # the oracle: the same expression on the default (numexpr) vm
            tags.add("vm_python")
            ref = f"bcolz.eval({expr!r})"
        return Op(f"bcolz.eval({expr!r}{extra})", "eval", frozenset(tags), obj=name, ref=ref)
    if what == "flush":
        return Op(f"{name}.flush()", "carray.flush", frozenset(tags), obj=name)
    if what == "close":
        if o.rootdir is None:
            return Op(f"{name}.flush()", "carray.flush", frozenset(tags), obj=name)
        return Op(f"{name}.flush(); del {name}", "close", frozenset(tags), obj=name,
                  closes=True)
    if what == "iterblocks":
        blen = draw(st.sampled_from(["", ", blen=1", ", blen=3", ", blen=16", ", blen=1000"]))
        rng = draw(st.sampled_from(["", f", start={n // 3}", f", start=1, stop={n // 2}"]))
        return Op(f"list(bcolz.iterblocks({name}{blen}{rng}))", "iterblocks", frozenset(tags),
                  obj=name)
    # misc
    misc = draw(st.sampled_from(["copy", "view", "reshape", "array", "purge"]))
    if misc == "copy":
        return Op(f"{name}.copy()", "carray.copy", frozenset(tags), obj=name)
    if misc == "view":
        return Op(f"{name}.view()[:]", "carray.view", frozenset(tags), obj=name)
    if misc == "reshape":
        total = n * math.prod(o.rowshape)
        shape = draw(st.sampled_from([(total,), (-1,), (max(total // 2, 1), 2), (total, 1)]))
        return Op(f"{name}.reshape({shape!r})", "carray.reshape", frozenset(tags), obj=name)
    if misc == "purge":
        return Op(f"{name}.purge()", "carray.purge", frozenset(tags), obj=name)
    return Op(f"np.array({name})", "carray.array", frozenset(tags), obj=name)


@st.composite
def carray_key(draw, model: Model, name: str, for_set: bool = False):
    """A key for carray `name`: (code, tags, ref or selected count)."""
    o = model.objs[name]
    n = o.length
    how = draw(st.sampled_from(["int", "int", "slice", "slice", "slice", "list", "mask",
                                "tuple", "odd"]))
    if how == "int":
        key, tags = draw(index_code(n))
        return key, tags | {"int"}, 1 if for_set else None
    if how == "slice":
        key, tags, count = draw(slice_code(n))
        if for_set:
            return key, tags | {"slice"}, count
        return key, tags | {"slice"}, f"np.asarray({name}[:])[{key}]"
    if how == "list":
        key, tags, count = draw(int_list_code(n))
        return key, tags | {"fancy"}, count if for_set else None
    if how == "mask":
        key, tags, count = draw(mask_code(n))
        if for_set:
            return key, tags | {"mask"}, count
        ref = None if "mask_wrong_len" in tags else f"np.asarray({name}[:])[np.asarray({key})]"
        return key, tags | {"mask"}, ref
    if how == "tuple":
        first = draw(st.sampled_from(["int", "slice"]))
        if first == "int":
            k0, tags = draw(index_code(n))
        else:
            k0, tags, _ = draw(slice_code(n))
        dims = len(o.rowshape)
        rest = []
        for _ in range(draw(st.integers(0, dims + 1))):
            rest.append(draw(st.sampled_from(["0", "1", "-1", ":", "1:", "::2", "5"])))
        key = ", ".join([k0] + rest) + ("," if not rest else "")
        tags = tags | {"tuple"}
        if len(rest) > dims:
            tags.add("too_many_indices")
        if for_set:
            return key, tags, None
        return key, tags, f"np.asarray({name}[:])[{key}]"
    odd = draw(st.sampled_from(["1.0", "None", "...", "'nosuchname > 1'", "np.float64(2)",
                                "[True, 2]", "()"]))
    if odd == "()" and not for_set:  # every row, as NumPy (legacy refused it)
        return odd, {"odd_key", f"odd={odd}"}, f"np.asarray({name}[:])[()]"
    return odd, {"odd_key", f"odd={odd}"}, None


@st.composite
def attrs_op(draw, name: str, tags: set, kind: str) -> Op:
    key = draw(st.sampled_from(["'k'", "'k'", "'other'", "'x y'"]))
    what = draw(st.sampled_from(["set", "set", "get", "del", "len", "list", "getall", "in"]))
    mutates = what in ("set", "del")
    if what == "set":
        value = draw(st.sampled_from(["1", "2.5", "'text'", "[1, 2]", "{'a': 1}", "None",
                                      "True", "(1, 2)", "np.int64(3)", "b'raw'"]))
        code = f"{name}.attrs[{key}] = {value}"
        if value in ("(1, 2)",):
            tags = tags | {"attrs_tuple"}
        if value in ("np.int64(3)", "b'raw'"):
            tags = tags | {"attrs_not_json"}
    elif what == "get":
        code = f"{name}.attrs[{key}]"
    elif what == "del":
        code = f"del {name}.attrs[{key}]"
    elif what == "len":
        code = f"len({name}.attrs)"
    elif what == "list":
        code = f"list({name}.attrs)"
    elif what == "getall":
        code = f"{name}.attrs.getall()"
    else:
        code = f"{key} in {name}.attrs"
        tags = tags | {"attrs_in"}
    # An attribute change is seen by reading them all back afterwards.
    return Op(code, f"attrs.{what}", frozenset(tags), obj=name, mutates=mutates,
              ref=f"[[k, v] for k, v in sorted({name}.attrs.getall().items())]"
              if mutates else None)


# -- operations on a ctable ----------------------------------------------------------------


@st.composite
def row_code(draw, o: Obj) -> str:
    parts = [draw(scalar_code(o.dtype.fields[nm][0])) for nm in o.names]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


@st.composite
def column_expr(draw, o: Obj, boolean: bool = True) -> tuple[str, set]:
    names = o.names
    x = draw(st.sampled_from(names))
    y = draw(st.sampled_from(names))
    return draw(expression_code(x, o.dtype.fields[x][0], y, o.dtype.fields[y][0], boolean))


@st.composite
def outcols_code(draw, o: Obj) -> str | None:
    how = draw(st.sampled_from([None, "list", "list", "string", "nrow", "bad"]))
    if how is None:
        return None
    cols = draw(st.lists(st.sampled_from(o.names), min_size=1, max_size=len(o.names),
                         unique=True))
    if how == "string":
        return repr(draw(st.sampled_from([",", ", "])).join(cols))
    if how == "nrow":
        return repr(["nrow__"] + cols)
    if how == "bad":
        return repr(cols + ["nosuchcol"])
    return repr(cols)


@st.composite
def ctable_op(draw, model: Model, name: str) -> Op:
    o = model.objs[name]
    n = o.length
    names = o.names
    tags: set = set()
    if o.mode == "r":
        tags.add("mode_r")
    tags |= _object_tags(o)
    if any(o.dtype.fields[nm][0].shape for nm in names):
        tags.add("ndim_column")
    what = draw(st.sampled_from(
        ["getitem"] * 5 + ["setitem"] * 2 + ["append"] * 3 +
        ["trim", "resize", "iter", "where", "where", "fetchwhere", "whereblocks", "eval",
         "addcol", "delcol", "attrs", "props", "flush", "close", "iterblocks"]))
    if what == "getitem":
        how = draw(st.sampled_from(["col", "col", "cols", "int", "slice", "slice", "list", "mask",
                                    "expr", "expr", "badcol", "odd"]))
        ref = None
        if how == "col":
            key = repr(draw(st.sampled_from(names)))
        elif how == "cols":
            key = repr(draw(st.lists(st.sampled_from(names), min_size=1, unique=True)))
        elif how == "int":
            key, ktags = draw(index_code(n))
            tags |= ktags
        elif how == "slice":
            key, ktags, _ = draw(slice_code(n))
            tags |= ktags
            ref = f"np.asarray({name}[:])[{key}]"
        elif how == "list":
            key, ktags, _ = draw(int_list_code(n))
            tags |= ktags
        elif how == "mask":
            key, ktags, _ = draw(mask_code(n))
            tags |= ktags
            if "mask_wrong_len" not in ktags:
                ref = f"np.asarray({name}[:])[np.asarray({key})]"
        elif how == "expr":
            expr, etags = draw(column_expr(o))
            key = repr(expr)
            tags |= etags
        elif how == "badcol":
            key = "'nosuchcol'"
        else:
            key = draw(st.sampled_from(["1.0", "None", "(0, 1)", "(0,)", "[]"]))
            tags.add(f"odd={key}")
        return Op(f"{name}[{key}]", f"ctable.getitem.{how}", frozenset(tags), obj=name, ref=ref)
    if what == "setitem":
        how = draw(st.sampled_from(["int", "slice", "expr", "col", "mask"]))
        if how == "int":
            key, ktags = draw(index_code(n))
            tags |= ktags
            value = draw(row_code(o))
        elif how == "slice":
            key, ktags, count = draw(slice_code(n))
            tags |= ktags
            if draw(st.booleans()):
                value = draw(row_code(o))
            else:
                value = draw(array_code(o.dtype, str(count)))
                if count == n and n > 0 and "neg_step" not in ktags and \
                        (key.count(":") < 2 or key.endswith(":1")):
                    tags.add("full_range_array")
        elif how == "mask":
            key, ktags, _ = draw(mask_code(n))
            tags |= ktags
            value = draw(row_code(o))
        elif how == "expr":
            expr, etags = draw(column_expr(o))
            key = repr(expr)
            tags |= etags
            value = draw(row_code(o))
        else:
            col = draw(st.sampled_from(names))
            key = repr(col)
            m = draw(st.sampled_from([n, n, n + 1]))
            value = draw(array_code(o.dtype.fields[col][0], str(m)))
        return Op(f"{name}[{key}] = {value}", f"ctable.setitem.{how}", frozenset(tags),
                  obj=name, mutates=True)
    if what == "append":
        how = draw(st.sampled_from(["row", "row", "arrays", "structured", "extra_col",
                                    "bad_lengths", "scalars_list"]))
        if how == "row":
            value = draw(row_code(o))
        elif how == "scalars_list":
            value = "[" + draw(row_code(o))[1:-1].rstrip(",") + "]"
        elif how in ("arrays", "bad_lengths", "extra_col"):
            k = draw(st.integers(0, 150))
            cols = [draw(array_code(o.dtype.fields[nm][0], str(k))) for nm in names]
            if how == "bad_lengths" and cols:
                cols[-1] = draw(array_code(o.dtype.fields[names[-1]][0], str(k + 1)))
            if how == "extra_col":
                cols.append(draw(array_code("int32", str(k))))
                tags.add("append_extra_column")
            value = "[" + ", ".join(cols) + "]"
        else:
            k = draw(st.integers(0, 150))
            value = draw(array_code(o.dtype, str(k)))
        return Op(f"{name}.append({value})", f"ctable.append.{how}", frozenset(tags), obj=name,
                  mutates=True)
    if what == "trim":
        k = draw(st.integers(-3, n + 3))
        return Op(f"{name}.trim({k})", "ctable.trim", frozenset(tags), obj=name, mutates=True)
    if what == "resize":
        k = draw(st.integers(0, n + 20))
        return Op(f"{name}.resize({k})", "ctable.resize", frozenset(tags), obj=name,
                  mutates=True)
    if what == "iter":
        args = []
        for kwname, strat in (("start", st.integers(-n - 2, n + 2)),
                              ("stop", st.integers(-n - 2, n + 2)),
                              ("step", st.sampled_from([1, 2, 3, 0, -1])),
                              ("limit", st.integers(0, 12)), ("skip", st.integers(0, 12))):
            if draw(st.booleans()):
                v = draw(strat)
                args.append(f"{kwname}={v}")
                if kwname == "step" and v <= 0:
                    tags.add("iter_nonpositive_step")
        outcols = draw(outcols_code(o))
        if outcols is not None:
            args.append(f"outcols={outcols}")
            tags |= _outcols_tags(outcols)
        return Op(f"list({name}.iter({', '.join(args)}))", "ctable.iter", frozenset(tags),
                  obj=name)
    if what in ("where", "fetchwhere", "whereblocks"):
        expr, etags = draw(column_expr(o))
        tags |= etags
        args = [repr(expr)]
        outcols = draw(outcols_code(o))
        if outcols and "nosuchcol" in outcols and "unknown_name" in etags:
            outcols = None  # one fault at a time: which one is reported first is not compared
        if outcols is not None:
            args.append(f"outcols={outcols}")
            tags |= _outcols_tags(outcols)
        if draw(st.booleans()):
            args.append(f"limit={draw(st.integers(0, 10))}")
        if draw(st.booleans()):
            args.append(f"skip={draw(st.integers(0, 10))}")
        if what == "where":
            flavor = draw(st.sampled_from([None, "tuple", "'tuple'"]))
            if flavor:
                args.append(f"out_flavor={flavor}")
            code = f"list({name}.where({{}}))"
        elif what == "whereblocks":
            args.insert(1, f"blen={draw(st.sampled_from([1, 3, 10, 1000]))}")
            code = f"list({name}.whereblocks({{}}))"
        else:
            flavor = draw(st.sampled_from([None, "'numpy'", "'bcolz'"]))
            if flavor:
                args.append(f"out_flavor={flavor}")
            code = f"{name}.fetchwhere({{}})"
        # the oracle of a bytes ordering: the same query on the python vm, which orders
        # bytes as NumPy does in both libraries (legacy's numexpr does not)
        ref = code.format(", ".join([*args, "vm='python'"])) if "bytes_order" in tags else None
        return Op(code.format(", ".join(args)), f"ctable.{what}", frozenset(tags), obj=name,
                  ref=ref)
    if what == "eval":
        expr, etags = draw(column_expr(o, boolean=False))
        tags |= etags
        extra = draw(st.sampled_from(["", ", out_flavor='numpy'", ", vm='python'"]))
        ref = None
        if "python" in extra:
            tags.add("vm_python")
            ref = f"{name}.eval({expr!r})"
        return Op(f"{name}.eval({expr!r}{extra})", "ctable.eval", frozenset(tags), obj=name,
                  ref=ref)
    if what == "addcol":
        dt = draw(st.sampled_from(DTYPES))
        m = draw(st.sampled_from([n, n, n, n + 1]))
        newname = draw(st.sampled_from(["x", "y", names[0]]))
        args = [draw(array_code(dt, str(m))), f"name={newname!r}"]
        if draw(st.booleans()):
            args.append(f"pos={draw(st.integers(0, len(names)))}")
        return Op(f"{name}.addcol({', '.join(args)})", "ctable.addcol", frozenset(tags),
                  obj=name, mutates=True)
    if what == "delcol":
        how = draw(st.sampled_from(["name", "name", "pos", "unknown", "none", "keep"]))
        if how == "name":
            code = f"{name}.delcol({draw(st.sampled_from(names))!r})"
        elif how == "keep":
            code = f"{name}.delcol({draw(st.sampled_from(names))!r}, keep=True)"
        elif how == "pos":
            code = f"{name}.delcol(pos={draw(st.integers(0, len(names)))})"
        elif how == "unknown":
            code = f"{name}.delcol('nosuchcol')"
        else:
            code = f"{name}.delcol()"
        return Op(code, f"ctable.delcol.{how}", frozenset(tags), obj=name, mutates=True)
    if what == "attrs":
        return draw(attrs_op(name, tags, "ctable"))
    if what == "props":
        prop = draw(st.sampled_from(["len({0})", "{0}.names", "{0}.dtype", "{0}.shape",
                                     "{0}.ndim", "{0}.size", "{0}.nbytes", "list({0}.cols)",
                                     "len({0}.cols)", "{0}.mode", "np.asarray({0})",
                                     "{0}.cols[{1!r}]", "{0}.len"]))
        return Op(prop.format(name, names[0]), "ctable.prop." + prop.format("x", "a"),
                  frozenset(tags), obj=name)
    if what == "flush":
        return Op(f"{name}.flush()", "ctable.flush", frozenset(tags), obj=name)
    if what == "close":
        if o.rootdir is None:
            return Op(f"{name}.flush()", "ctable.flush", frozenset(tags), obj=name)
        return Op(f"{name}.flush(); del {name}", "close", frozenset(tags), obj=name,
                  closes=True)
    blen = draw(st.sampled_from(["", ", blen=1", ", blen=4", ", blen=1000"]))
    return Op(f"list(bcolz.iterblocks({name}{blen}))", "iterblocks", frozenset(tags), obj=name)


def _outcols_tags(outcols: str) -> set:
    tags = set()
    if "nrow__" in outcols:
        tags.add("nrow")
    if "nosuchcol" in outcols:
        tags.add("bad_outcols")
    if not outcols.startswith("["):
        tags.add("outcols_string")
    return tags


# -- one step ------------------------------------------------------------------------------


@st.composite
def step(draw, model: Model) -> Op:
    """The next op of a program, given what exists."""
    carrays, ctables = model.carrays(), model.ctables()
    choices = ["new_carray"] * (3 if len(carrays) < 2 else 1) + \
        ["new_ctable"] * (2 if not ctables else 1)
    choices += ["carray"] * (6 * len(carrays)) + ["ctable"] * (6 * len(ctables))
    choices += ["reopen"] * (2 if model.free_dirs() else 1)
    kind = draw(st.sampled_from(choices))
    if kind == "new_carray":
        return draw(new_carray(model, draw(st.sampled_from(CARRAY_NAMES))))
    if kind == "new_ctable":
        return draw(new_ctable(model, draw(st.sampled_from(CTABLE_NAMES))))
    if kind == "reopen":
        return draw(reopen(model, draw(st.sampled_from(CARRAY_NAMES + CTABLE_NAMES))))
    if kind == "carray":
        return draw(carray_op(model, draw(st.sampled_from(carrays))))
    return draw(ctable_op(model, draw(st.sampled_from(ctables))))
