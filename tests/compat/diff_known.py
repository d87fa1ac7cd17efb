"""The known differences between legacy bcolz and bcolzx, for the differential test.

:data:`KNOWN` is the table of differences that
are accepted: each entry is documented in ``docs/migration.md`` (section
named in its reference) or is a legacy bug that bcolzx does not reproduce
("legacy bug: ..."), and matches narrowly on the op (its kind and tags, see
:mod:`diff_ops`) and both outcomes.  :data:`WITNESSES` holds, for every
entry, a short program whose last line shows the difference (the test
suite checks that the entry accepts it, so no entry is dead).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .diff_compare import _same_values, differences, reply_differences
from .diff_model import Op

# == the known differences =======================================================================


def raised(result, *names) -> bool:
    """`result` is an exception of one of the classes `names` (its own or a builtin base)."""
    return result[0] == "raise" and (not names or bool({result[1], *result[2]} & set(names)))


def ok(result) -> bool:
    return result[0] != "raise"


def _walk(value, on_array, on_str=lambda s: s):
    """A copy of a normalized result with `on_array` applied to its arrays (`on_str` to str)."""
    if isinstance(value, np.ndarray):
        return on_array(value)
    if isinstance(value, str):
        return on_str(value)
    if isinstance(value, tuple):
        return tuple(_walk(v, on_array, on_str) for v in value)
    if isinstance(value, list):
        return [_walk(v, on_array, on_str) for v in value]
    return value


#: Code points our programs never put in strings (diff_worker.data, diff_ops scalars) but
#: uninitialised memory read as UCS4 is full of: beyond Latin Extended-A.
_FOREIGN_CODE_POINT = 0x24F


def _garbage_codes(codes: np.ndarray) -> np.ndarray:
    """Which UCS4 strings (last axis: code units) are legacy's garbage, not our data."""
    nonzero = codes != 0
    # an embedded NUL (a zero followed by a non-zero unit), or a foreign code point
    embedded_nul = (~nonzero[..., :-1] & nonzero[..., 1:]).any(axis=-1)
    return embedded_nul | (codes > _FOREIGN_CODE_POINT).any(axis=-1)


def _without_unicode_garbage(result, changed: list | None = None):
    """`result` with every U string legacy read back as garbage made ''.

    Appends True to `changed` (if given) when something was repaired.
    """
    def fix(arr):
        if arr.dtype.names:
            arr = arr.copy()
            for name in arr.dtype.names:
                arr[name] = fix(arr[name])
            return arr
        if arr.dtype.kind != "U" or arr.dtype.itemsize == 0 or arr.size == 0:
            return arr
        # On the code points: garbage may hold values no Python str can.
        codes = np.ascontiguousarray(arr).view(np.uint32).reshape(arr.shape + (-1,)).copy()
        garbage = _garbage_codes(codes)
        if garbage.any():
            if changed is not None:
                changed.append(True)
            codes[garbage] = 0
        return codes.view(arr.dtype).reshape(arr.shape)

    def fix_str(text):
        try:
            codes = np.array([ord(c) for c in text], dtype=np.uint32)
        except (SystemError, ValueError):  # a str object legacy built from invalid UCS4
            codes = np.array([0, _FOREIGN_CODE_POINT + 1], dtype=np.uint32)
        if codes.size and _garbage_codes(codes):
            if changed is not None:
                changed.append(True)
            return ""
        return text
    return _walk(result, fix, fix_str)


def repair_legacy_garbage(lrep: dict) -> dict | None:
    """legacy's reply without the garbage of 'legacy-unicode-empty-chunk', or None if clean.

    That garbage is uninitialised memory: it differs from run to run, and
    would make the programs hypothesis replays take other paths.  The runner
    repairs it before comparing (and keeps going), so runs are reproducible.
    """
    changed: list = []
    fixed = {"result": _without_unicode_garbage(lrep["result"], changed),
             "ref": _without_unicode_garbage(lrep["ref"], changed)}
    return fixed if changed else None


def _json_form(result):
    """`result` as bcolzx keeps attribute values: NumPy scalars as Python ones, tuples as lists."""
    if not isinstance(result, tuple) or not result:
        return result
    if result[0] == "np" and result[2].dtype.kind in "biuf":
        value = result[2].item()
        return ("py", type(value).__name__, value)
    if result[0] == "tuple":
        return ("list", [_json_form(v) for v in result[1]])
    if result[0] in ("list", "iter", "set"):
        return (result[0], [_json_form(v) for v in result[1]]) + tuple(result[2:])
    if result[0] == "dict":
        return ("dict", [(_json_form(k), _json_form(v)) for k, v in result[1]])
    return result


def _attrs_json_form(op: Op, result):
    """Attribute values in `result` (of an attrs op) in their JSON form."""
    if result is None or result[0] == "raise":
        return result
    if op.kind in ("attrs.list",) or result[0] == "list" and all(
            r[0] in ("list", "tuple") and len(r[1]) == 2 for r in result[1]):
        # (name, value) pairs, or the [[name, value], ...] oracle
        return (result[0], [(pair[0], [pair[1][0], _json_form(pair[1][1])])
                            for pair in result[1]]) + tuple(result[2:])
    return _json_form(result)


def _agree_after(repair, lrep: dict, brep: dict) -> bool:
    """legacy's reply, repaired, agrees with bcolzx's (result and oracle)."""
    return reply_differences({"result": repair(lrep["result"]), "ref": repair(lrep["ref"])},
                             brep) is None


def _legacy_refused(leg: dict, bz: dict, cls: str, words: str) -> bool:
    """legacy raised `cls` with `words` in its message where bcolzx gave a value."""
    return raised(leg["result"], cls) and words in leg["result"][3] and ok(bz["result"])


def _follows_numpy(brep: dict) -> bool:
    """bcolzx's value equals the oracle computed beside it (NumPy applied to ``x[:]``)."""
    return brep["ref"] is not None and differences(brep["ref"], brep["result"]) is None


def _tag_value(op: Op, prefix: str) -> str | None:
    for tag in op.tags:
        if tag.startswith(prefix):
            return tag[len(prefix):]
    return None


@dataclass(frozen=True)
class Known:
    """A difference that is documented (docs/migration.md) or a legacy bug bcolzx fixed."""

    id: str
    reference: str       # the section of docs/migration.md, or "legacy bug: ..."
    applies: Callable[[Op, dict, dict], bool]


def _k(id_, reference):
    """Decorator: register a matcher ``(op, legacy_reply, bcolzx_reply) -> bool`` in KNOWN."""
    def register(fn):
        KNOWN.append(Known(id_, reference, fn))
        return fn
    return register


KNOWN: list[Known] = []

# -- deliberate differences documented in docs/migration.md --------------------------------------


@_k("negative-step-getitem", "migration.md §2 carray/ctable __getitem__: negative-step slices "
    "work (legacy NotImplementedError); bcolzx must give NumPy's value")
def _(op, leg, bz):
    return op.kind in ("carray.getitem", "ctable.getitem.slice") and "neg_step" in op.tags \
        and raised(leg["result"], "NotImplementedError") and _follows_numpy(bz)


@_k("negative-step-setitem", "migration.md §2 carray __setitem__: slices with any step "
    "(legacy NotImplementedError for a negative step; bcolzx then checks the value)")
def _(op, leg, bz):
    return op.kind in ("carray.setitem", "ctable.setitem.slice") and "neg_step" in op.tags \
        and raised(leg["result"], "NotImplementedError") \
        and (ok(bz["result"]) or raised(bz["result"], "ValueError", "TypeError"))


@_k("iter-nonpositive-step", "migration.md §2 carray.iter: a negative step iterates backwards "
    "(as the slice start:stop:step), step=0 raises ValueError (legacy NotImplementedError for "
    "both)")
def _(op, leg, bz):
    return op.kind in ("carray.iter", "ctable.iter") and "iter_nonpositive_step" in op.tags \
        and raised(leg["result"], "NotImplementedError") \
        and (ok(bz["result"]) or raised(bz["result"], "ValueError"))


@_k("unsupported-key", "migration.md §2 carray __getitem__, §4: an unsupported key (c[1.5]) "
    "raises IndexError (legacy NotImplementedError)")
def _(op, leg, bz):
    return op.kind in ("carray.getitem", "carray.setitem", "ctable.getitem.odd") \
        and raised(leg["result"], "NotImplementedError") and raised(bz["result"], "IndexError")


@_k("where-ndim", "migration.md §2 carray.where: works on N-D carrays, yielding rows "
    "(legacy NotImplementedError; also for c[mask], which legacy ran through where())")
def _(op, leg, bz):
    if "ndim" not in op.tags or not raised(leg["result"], "NotImplementedError"):
        return False
    if op.kind == "carray.where":
        return ok(bz["result"]) \
            or "mask_wrong_len" in op.tags and raised(bz["result"], "IndexError", "ValueError")
    return op.kind == "carray.getitem" and "mask" in op.tags and _follows_numpy(bz)


@_k("where-ndim-column", "migration.md §2 carray.where (N-D carrays): a row mask on a ctable "
    "with an N-D column works (legacy NotImplementedError)")
def _(op, leg, bz):
    return op.kind == "ctable.getitem.mask" and "ndim_column" in op.tags \
        and raised(leg["result"], "NotImplementedError") and _follows_numpy(bz)


@_k("ndim-expression-setitem", "migration.md §2 carray __setitem__: an expression key on an "
    "N-D carray must give one boolean per row (legacy: nothing when no item matched)")
def _(op, leg, bz):
    return op.kind == "carray.setitem" and {"expr", "ndim"} <= op.tags and ok(leg["result"]) \
        and raised(bz["result"], "IndexError")


@_k("fromiter-count", "migration.md §2 fromiter: reads at most `count` items (legacy read the "
    "whole iterable)")
def _(op, leg, bz):
    count = _tag_value(op, "count=")
    return op.kind.startswith("new.") and "fromiter" in op.tags and "fromiter_long" in op.tags \
        and ok(leg["result"]) and ok(bz["result"]) and bz["result"][0] in ("carray", "ctable") \
        and str(bz["result"][3]) == count


@_k("arange-steps", "migration.md §2 arange: negative and fractional steps give NumPy's "
    "result (legacy an empty carray or zeros)")
def _(op, leg, bz):
    return op.kind == "new.carray.arange" and "arange_negative_or_fractional_step" in op.tags \
        and bz["ref"] == ("py", "bool", True)


@_k("arange-start-overflow", "migration.md §2 arange: a start the dtype cannot hold raises "
    "OverflowError, as numpy.arange (legacy: an empty carray for a negative step)")
def _(op, leg, bz):
    return op.kind == "new.carray.arange" and "arange_start_overflow" in op.tags \
        and ok(leg["result"]) and raised(bz["result"], "OverflowError")


@_k("empty-tuple-key", "migration.md §2 carray __getitem__/__setitem__: c[()] is every row, "
    "as in NumPy (legacy ValueError)")
def _(op, leg, bz):
    if op.kind not in ("carray.getitem", "carray.setitem") or "odd=()" not in op.tags \
            or not raised(leg["result"], "ValueError"):
        return False
    return ok(bz["result"]) if op.kind == "carray.setitem" else _follows_numpy(bz)


@_k("arange-wraps", "migration.md §2 arange: with an integer dtype the values wrap around as "
    "numpy.arange's do (legacy raised OverflowError once a block began beyond the dtype's range)")
def _(op, leg, bz):
    return op.kind == "new.carray.arange" and raised(leg["result"], "OverflowError") \
        and ok(bz["result"]) and bz["ref"] == ("py", "bool", True)


@_k("size-type", "migration.md §2 carray/ctable size: a Python int (legacy numpy.int64)")
def _(op, leg, bz):
    return op.kind in ("carray.prop.x.size", "ctable.prop.x.size") \
        and leg["result"][:2] == ("np", "int64") and bz["result"][:2] == ("py", "int") \
        and int(leg["result"][2]) == bz["result"][2]


@_k("delcol", "migration.md §2 ctable.delcol: an unknown name raises KeyError (legacy "
    "ValueError); no name and no pos deletes the last column (legacy raised)")
def _(op, leg, bz):
    if op.kind == "ctable.delcol.unknown":
        return raised(leg["result"], "ValueError") and raised(bz["result"], "KeyError")
    return op.kind == "ctable.delcol.none" and raised(leg["result"]) and ok(bz["result"])


@_k("ctable-duplicate-names", "migration.md §2 ctable(): duplicate names raise ValueError "
    "(legacy accepted them)")
def _(op, leg, bz):
    return op.kind == "new.ctable.bad_names" and "duplicate_names" in op.tags \
        and ok(leg["result"]) and raised(bz["result"], "ValueError")


@_k("ctable-append-extra-column", "migration.md §2 ctable.append: more columns than the table "
    "raise ValueError (legacy ignored the extra)")
def _(op, leg, bz):
    return op.kind == "ctable.append.extra_col" and ok(leg["result"]) \
        and raised(bz["result"], "ValueError")


@_k("ctable-new-mode", "migration.md §2 ctable(): a new persistent table reports mode 'a' "
    "(legacy 'w')")
def _(op, leg, bz):
    return op.kind == "ctable.prop.x.mode" and leg["result"] == ("py", "str", "w") \
        and bz["result"] == ("py", "str", "a")


@_k("ctable-array", "migration.md §2 ctable __array__ (new): np.asarray(ct) is the structured "
    "array of the rows (legacy: NumPy's conversion of an iterable of namedtuples)")
def _(op, leg, bz):
    return op.kind == "ctable.prop.np.asarray(x)" and ok(bz["result"]) \
        and bz["result"][0] == "ndarray" and bz["result"][3].dtype.names is not None


@_k("nrow-outcols", "migration.md §2 ctable fetchwhere/whereblocks: 'nrow__' in outcols works "
    "(legacy NameError)")
def _(op, leg, bz):
    return op.kind in ("ctable.fetchwhere", "ctable.whereblocks") and "nrow" in op.tags \
        and raised(leg["result"], "NameError") and (ok(bz["result"]) or "bad_outcols" in op.tags)


@_k("attrs-in", "migration.md §2 attrs: `name in attrs` tests names (legacy always False)")
def _(op, leg, bz):
    return op.kind == "attrs.in" and leg["result"] == ("py", "bool", False) and ok(bz["result"])


@_k("attrs-json-form", "migration.md §2 attrs: values are kept in their JSON form in memory "
    "too (a tuple reads back as a list, a NumPy scalar as a Python one)")
def _(op, leg, bz):
    return op.kind.startswith("attrs.") and _agree_after(lambda r: _attrs_json_form(op, r), leg, bz)


@_k("attrs-not-json", "migration.md §2 attrs: non-JSON values raise TypeError at once "
    "(legacy kept them in memory)")
def _(op, leg, bz):
    return op.kind == "attrs.set" and "attrs_not_json" in op.tags and ok(leg["result"]) \
        and raised(bz["result"], "TypeError")


@_k("object-dtype", "migration.md §3, §8: object dtype needs allow_pickle; without it "
    "PickleNotAllowedError, a TypeError and a ValueError (legacy stored objects)")
def _(op, leg, bz):
    return op.kind.startswith("new.") and leg["result"][0] == "carray" \
        and leg["result"][1] == "object" and raised(bz["result"], "PickleNotAllowedError")


@_k("ctable-existing-rootdir", "migration.md §4: creating a ctable over an existing rootdir in "
    "mode 'a' raises FileExistsError (legacy ValueError)")
def _(op, leg, bz):
    return op.kind.startswith("new.ctable") and "existing_rootdir" in op.tags \
        and raised(leg["result"], "ValueError") and raised(bz["result"], "FileExistsError")


@_k("ctable-names-string", "migration.md §2 ctable(): names may be a string, taken as one name "
    "(legacy refused strings)")
def _(op, leg, bz):
    return op.kind == "new.ctable.bad_names" and "names_string" in op.tags \
        and raised(leg["result"], "ValueError")


@_k("record-dtype", "migration.md §2 ctable __getitem__: rows come as a plain structured array "
    "(legacy: numpy.record dtype)")
def _(op, leg, bz):
    def plain(result):
        if result[0] == "ndarray" and result[2] == "record":
            return ("ndarray", result[1], "void", result[3])
        return result
    return _agree_after(lambda r: _walk_results(r, plain), leg, bz)


def _walk_results(result, fn):
    """Apply `fn` to `result` and to every normalized result nested in it."""
    if not isinstance(result, tuple) or not result or not isinstance(result[0], str):
        return result
    result = fn(result)
    if result[0] in ("list", "tuple", "set", "iter"):
        return (result[0], [_walk_results(v, fn) for v in result[1]]) + tuple(result[2:])
    return result


@_k("vm-python", "migration.md §3: expressions are parsed, and both virtual machines give "
    "identical results: vm='python' gives what the numexpr vm gives (legacy ran Python/NumPy, "
    "with NumPy's types and without numexpr's functions)")
def _(op, leg, bz):
    return "vm_python" in op.tags and ok(bz["result"]) and _follows_numpy(bz) \
        and differences(leg["ref"], bz["result"]) is None


@_k("where-list-mask", "migration.md §2 carray.where: a list of booleans is a mask too (legacy "
    "ValueError: boolarr is not an array)")
def _(op, leg, bz):
    return op.kind == "carray.where" and bool({"bool_list", "where_list"} & op.tags) \
        and _legacy_refused(leg, bz, "ValueError", "not an array")


@_k("nrow-ctable-flavor", "migration.md §2 ctable fetchwhere: with out_flavor='bcolz' (a ctable) "
    "'nrow__' cannot be a column name: ValueError (legacy NameError)")
def _(op, leg, bz):
    return op.kind == "ctable.fetchwhere" and "nrow" in op.tags \
        and raised(leg["result"], "NameError") and raised(bz["result"], "ValueError") \
        and "cannot be a column name" in bz["result"][3]


@_k("attrs-numpy-number-on-disk", "migration.md §2 attrs: a NumPy number is stored as the Python "
    "number, also in a persistent dataset (legacy TypeError: not JSON serializable)")
def _(op, leg, bz):
    return op.kind == "attrs.set" and "persistent" in op.tags and "np.int64(" in op.code \
        and _legacy_refused(leg, bz, "TypeError", "JSON serializable")


@_k("ctable-shares-carrays", "migration.md §2 ctable(): carrays given with keyword arguments are "
    "copied (legacy ignored the arguments and shared them); t[name] = values writes into the "
    "column (legacy replaced it); the test drops the source carrays after such a ctable")
def _(op, leg, bz):
    return "aliased" in op.tags and ok(leg["result"]) and ok(bz["result"])


@_k("ctable-shares-carrays-blocks", "migration.md §2 ctable(): carrays given with a chunklen "
    "are copied with it (legacy shared them with their own chunk length), so iterblocks' "
    "default blocks follow it; the rows are the same")
def _(op, leg, bz):
    lr, br = leg["result"], bz["result"]
    if op.kind != "iterblocks" or "shared_columns" not in op.tags or "blen=" in op.code \
            or lr[0] != "list" or br[0] != "list" or not lr[1] or not br[1] \
            or any(b[0] != "ndarray" for b in (*lr[1], *br[1])):
        return False
    return _same_values(np.concatenate([b[3] for b in lr[1]]),
                        np.concatenate([b[3] for b in br[1]]))


@_k("purge-closes", "migration.md §2 carray.purge: the carray is closed, later use raises "
    "ValueError (legacy went on in memory); the test drops a purged carray")
def _(op, leg, bz):
    return "purged" in op.tags and raised(bz["result"], "ValueError") \
        and "closed" in bz["result"][3]


# -- legacy bugs that bcolzx does not reproduce -------------------------------------------------


@_k("legacy-below-range-index", "legacy bug, fixed (migration.md §3): c[-len(c) - 1] did not "
    "raise IndexError (it read another row, or failed elsewhere)")
def _(op, leg, bz):
    return "below_range" in op.tags and not raised(leg["result"], "IndexError") \
        and raised(bz["result"], "IndexError")


@_k("legacy-empty-conversion", "legacy bug: an empty array of another dtype could not be "
    "converted (TypeError 'dtypes do not match'); bcolzx converts it (and then reports what "
    "else is wrong: a value out of range, a rootdir that exists)")
def _(op, leg, bz):
    return raised(leg["result"], "TypeError") and "dtypes do not match" in leg["result"][3] \
        and (ok(bz["result"]) or raised(bz["result"], "ValueError", "OverflowError",
                                         "FileExistsError"))


@_k("legacy-eval-empty", "legacy bug: eval over empty operands (and so string keys and "
    "queries on empty containers) raised UnboundLocalError")
def _(op, leg, bz):
    return raised(leg["result"], "UnboundLocalError") \
        and (ok(bz["result"]) or raised(bz["result"], "ValueError", "IndexError"))


@_k("legacy-unicode-empty-chunk", "legacy bug: a chunk of a U carray holding only '' reads "
    "back as garbage (uninitialised memory, e.g. '\\x00\u7f8d...'); bcolzx gives ''")
def _(op, leg, bz):
    return _agree_after(_without_unicode_garbage, leg, bz)


@_k("legacy-full-struct-assign", "legacy bug: ct[:] = <structured array of the full length> "
    "stored garbage (each column copied from a strided view as if contiguous)")
def _(op, leg, bz):
    return op.kind == "observe" and "after:ctable.setitem.slice" in op.tags \
        and "full_range_array" in op.tags and ok(leg["result"]) and ok(bz["result"])


@_k("legacy-numexpr-bytes-order", "legacy bug: numexpr compares bytes as signed chars, so "
    "b'\\xc3\\xa9t' > b'a' was False in queries (legacy's own vm='python' and NumPy say True; "
    "bcolzx follows them, migration.md §3, expressions)")
def _(op, leg, bz):
    if "bytes_order" not in op.tags or not (ok(leg["result"]) and ok(bz["result"])):
        return False
    if op.kind in ("ctable.where", "ctable.whereblocks", "ctable.fetchwhere"):
        # the oracle is the same query on legacy's python vm: bcolzx must agree with it
        return leg["ref"] is not None and differences(leg["ref"], bz["result"]) is None
    return True  # an eval, an expression key, or an observe after assigning through one


@_k("legacy-reshape-strings", "legacy bug: reshape() of an S/U carray raised AttributeError")
def _(op, leg, bz):
    return op.kind == "carray.reshape" and raised(leg["result"], "AttributeError") \
        and ok(bz["result"])


@_k("legacy-datetime-days-on-disk", "legacy bug: a persistent carray or ctable of "
    "datetime64[D] with a default value (zeros, ones, fill, ctable columns, addcol) could not be "
    "created (TypeError: date is not JSON serializable)")
def _(op, leg, bz):
    return (op.kind.startswith("new.") and op.rootdir is not None
            or op.kind == "ctable.addcol" and "persistent" in op.tags) \
        and raised(leg["result"], "TypeError") and "type date is not JSON" in leg["result"][3] \
        and (ok(bz["result"]) or raised(bz["result"], "ValueError"))


@_k("legacy-index-array-dtype", "legacy bug: integer index arrays other than int64 "
    "(int32, uint8) raised IndexError")
def _(op, leg, bz):
    # Legacy refused the key before looking at the value; bcolzx then may refuse the value
    # (an OverflowError, the fixed finding A17 in test_differential.FIXED, is never accepted).
    return ({"int32_array", "uint8_array"} & op.tags) and raised(leg["result"], "IndexError") \
        and (ok(bz["result"]) or raised(bz["result"], "ValueError", "TypeError", "RuntimeError"))


@_k("legacy-too-many-indices", "legacy bug: more indices than dimensions raised TypeError "
    "from the scalar it had read ('int' object is not subscriptable); bcolzx raises NumPy's "
    "IndexError")
def _(op, leg, bz):
    return "too_many_indices" in op.tags and raised(leg["result"], "TypeError") \
        and raised(bz["result"], "IndexError")


@_k("legacy-fetchwhere-outcols", "legacy bug: fetchwhere(out_flavor='bcolz') refused outcols "
    "as a string and reported an unknown outcol as NameError, unlike where() and iter() "
    "(bcolzx: strings accepted, unknown names ValueError)")
def _(op, leg, bz):
    if op.kind != "ctable.fetchwhere":
        return False
    if "outcols_string" in op.tags:
        return raised(leg["result"], "ValueError") and ok(bz["result"])
    return "bad_outcols" in op.tags and raised(leg["result"], "NameError") \
        and raised(bz["result"], "ValueError")


@_k("legacy-ctable-create-mode-a", "legacy bug: ctable(columns, rootdir=<new>, mode='a') "
    "raised FileNotFoundError (carray() creates in mode 'a')")
def _(op, leg, bz):
    return op.kind.startswith("new.ctable") and op.mode == "a" and "mode=a" in op.tags \
        and raised(leg["result"], "FileNotFoundError") \
        and (ok(bz["result"]) or raised(bz["result"], "ValueError", "TypeError"))

@_k("legacy-fancy-setitem-range", "legacy bug: an out-of-range index in a fancy assignment "
    "raised TypeError (object has no len()); bcolzx raises NumPy's IndexError")
def _(op, leg, bz):
    return op.kind == "carray.setitem" and "fancy" in op.tags and "out_of_range" in op.tags \
        and raised(leg["result"], "TypeError") and raised(bz["result"], "IndexError")


@_k("legacy-ctable-append-array", "legacy bug: ctable.append(<plain, unstructured ndarray>) "
    "raised IndexError from inside (its dtype has no names); bcolzx raises TypeError")
def _(op, leg, bz):
    return op.kind.startswith("ctable.append") and raised(leg["result"], "IndexError") \
        and raised(bz["result"], "TypeError")


@_k("legacy-ndim-row-assign", "legacy bug: assigning whole rows of an N-D carray with "
    "chunklen=1 corrupted the chunk (later reads: RuntimeError from Blosc)")
def _(op, leg, bz):
    return op.kind == "observe" and "after:carray.setitem" in op.tags and "ndim" in op.tags \
        and raised(leg["result"], "RuntimeError") and "Blosc" in leg["result"][3] \
        and ok(bz["result"])


@_k("legacy-partial-ctable-append", "legacy bug: a ctable.append that fails on a later column "
    "(lengths differ) leaves the earlier columns appended, so the columns' lengths differ")
def _(op, leg, bz):
    lr, br = leg["result"], bz["result"]
    return op.kind == "observe" and "after:ctable.append.bad_lengths" in op.tags \
        and lr[0] == br[0] == "ctable" and len(set(lr[5])) > 1 and len(set(br[5])) == 1



@_k("legacy-sum", "legacy bug: sum() strayed from NumPy's sum of the elements, which its "
    "docstring promised: uint8/uint16 accumulated in their own type (wrapping around), "
    "sum(dtype=...) came back in another type when chunks were constant, N-D carrays with "
    "constant chunks gave an array of the row shape, and U/datetime carrays gave a value "
    "(NumPy: TypeError); bcolzx gives NumPy's sum of c[:]")
def _(op, leg, bz):
    return op.kind == "carray.sum" and _follows_numpy(bz)


@_k("legacy-copy-dflt", "legacy bug: copy() (and so ctable(carrays, rootdir=...), "
    "ctable.copy()) dropped the default value; bcolzx keeps dflt")
def _(op, leg, bz):
    if "copied" not in op.tags:
        return False
    lr, br = leg["result"], bz["result"]
    if op.kind == "carray.prop.x.dflt":
        return lr[0] == br[0] and lr[0] in ("np", "ndarray") and not lr[-1].any()
    if op.kind != "observe" or lr[0] != br[0] or lr[0] not in ("carray", "ctable") \
            or lr[3] != br[3]:
        return False
    rows = [i for i in range(lr[3]) if not _same_values(lr[4][i:i + 1], br[4][i:i + 1])]
    zero = np.zeros_like(lr[4][:1])  # one row of zeros (N-D rows included)
    return all(_same_values(lr[4][i:i + 1], zero) for i in rows)  # legacy's rows are zeros


@_k("legacy-fetchwhere-empty", "legacy bug: fetchwhere(out_flavor='numpy') with no matching "
    "row raised StopIteration; bcolzx returns an empty array")
def _(op, leg, bz):
    return op.kind == "ctable.fetchwhere" and raised(leg["result"], "StopIteration") \
        and bz["result"][0] == "ndarray" and len(bz["result"][3]) == 0


@_k("legacy-iterblocks-ndim-column", "legacy bug: iterblocks over a ctable with an N-D "
    "column failed (could not broadcast)")
def _(op, leg, bz):
    return op.kind == "iterblocks" and "ndim_column" in op.tags \
        and _legacy_refused(leg, bz, "ValueError", "broadcast")


@_k("legacy-empty-fancy-ndim", "legacy bug: c[[]] on an N-D carray gave shape (0,); bcolzx "
    "gives NumPy's (0, *rowshape)")
def _(op, leg, bz):
    lr, br = leg["result"], bz["result"]
    # N-D by bcolzx's result itself; `[]` is drawn as an empty list of positions
    # ("fancy") or, for an empty carray, an empty mask ("mask"; stress run)
    return op.kind == "carray.getitem" and ("fancy" in op.tags or "mask" in op.tags) \
        and lr[0] == br[0] == "ndarray" and lr[3].shape == (0,) \
        and br[3].shape[:1] == (0,) and br[3].ndim > 1


def _values(result):
    """The array a carray or an array result holds (None for others)."""
    if result[0] == "carray":
        return result[4]
    return result[3] if result[0] == "ndarray" else None


@_k("legacy-ndim-zero-chunk", "legacy bug: a chunk of zeros of an N-D carray (rows of zeros "
    "appended to bcolz.zeros((1, k))) read back as one row of a later append, repeated; "
    "bcolzx reads the zeros")
def _(op, leg, bz):
    lv, bv = _values(leg["result"]), _values(bz["result"])
    if lv is None or bv is None or lv.shape != bv.shape or lv.dtype != bv.dtype \
            or bv.ndim < 2 or not bv.size:
        return False
    rows = ~(lv == bv).reshape(len(lv), -1).all(axis=1)
    if not rows.any():
        return False
    wrong = lv[rows]
    # bcolzx's rows there are zeros; legacy's are one non-zero row, over and over
    return not bv[rows].any() and wrong[0].any() and bool((wrong == wrong[0]).all())


@_k("legacy-expr-key-ndim", "legacy bug: an expression key giving N-D booleans raised "
    "NumPy's TypeError from inside; bcolzx raises IndexError (not a row mask)")
def _(op, leg, bz):
    return op.kind in ("carray.getitem", "carray.setitem") and "expr" in op.tags \
        and "ndim" in op.tags and raised(leg["result"], "TypeError") \
        and raised(bz["result"], "IndexError")


def known_difference(op: Op, lrep: dict, brep: dict) -> Known | None:
    for known in KNOWN:
        try:
            if known.applies(op, lrep, brep):
                return known
        except (IndexError, KeyError, TypeError, ValueError):
            continue
    return None


@_k("legacy-iterblocks-blen-1", "legacy bug: iterblocks(<carray>, blen=1) (also by default "
    "with chunklen=1) yielded rows (scalars, or the rows of an N-D carray), not blocks; bcolzx "
    "yields 1-row arrays")
def _(op, leg, bz):
    lr, br = leg["result"], bz["result"]
    one = "blen=1" in op.code or "blen=" not in op.code and "chunklen=1" in op.tags
    if op.kind != "iterblocks" or not one or lr[0] != "list" \
            or br[0] != "list" or len(lr[1]) != len(br[1]):
        return False
    for row, block in zip(lr[1], br[1]):
        # 'np' (a 0-d array), 'py' (np.float64, np.str_: Python subclasses), or the row of
        # an N-D carray ('ndarray')
        value = row[3] if row[0] == "ndarray" else row[2]
        if row[0] not in ("np", "py", "ndarray") \
                or not isinstance(value, (np.ndarray, np.generic)) or block[0] != "ndarray":
            return False
        value = np.asarray(value)
        if block[3].shape != (1, *value.shape) \
                or not _same_values(value.reshape(block[3].shape).astype(block[3].dtype),
                                    block[3]):
            return False
    return True


@_k("legacy-ctable-no-columns", "legacy bug: a ctable whose columns were all deleted could "
    "not be read (KeyError: cannot retrieve data from a ctable with no columns); bcolzx gives "
    "its empty rows")
def _(op, leg, bz):
    return op.kind == "observe" and raised(leg["result"], "KeyError") \
        and "no columns" in leg["result"][3] and bz["result"][0] == "ctable" \
        and bz["result"][1] == []


@_k("legacy-delcol-mode-r", "legacy bug: delcol in mode 'r' raised IOError after deleting the "
    "column (from the object and from the directory); bcolzx raises ReadOnlyError first")
def _(op, leg, bz):
    lr, br = leg["result"], bz["result"]
    return op.kind == "observe" and any(t.startswith("after:ctable.delcol") for t in op.tags) \
        and lr[0] == br[0] == "ctable" and set(lr[1]) < set(br[1])


@_k("legacy-reshape-on-disk", "legacy bug: reshape() of a persistent carray moved the new "
    "array into the same rootdir, so the original then failed (chunkfile not found); bcolzx's "
    "reshape gives a new in-memory carray and leaves the original alone")
def _(op, leg, bz):
    return "reshaped" in op.tags and raised(leg["result"], "ValueError", "FileNotFoundError") \
        and ("not found" in leg["result"][3] or "No such file" in leg["result"][3]) \
        and (ok(bz["result"]) or not raised(bz["result"], "ValueError", "FileNotFoundError"))


@_k("legacy-partial-fancy-assign", "legacy bug: a fancy assignment with an out-of-range index "
    "raised IndexError after assigning the indices before it; bcolzx checks first")
def _(op, leg, bz):
    return op.kind == "observe" and "after:carray.setitem" in op.tags \
        and ("out_of_range" in op.tags or "odd=[True, 2]" in op.tags) \
        and ok(leg["result"]) and ok(bz["result"])


@_k("legacy-flush-mode-r", "legacy bug: flush() of a persistent carray (or ctable) opened in "
    "mode 'r' whose last chunk is partial raised IOError (it rewrote that chunk); bcolzx's "
    "flush has nothing to write")
def _(op, leg, bz):
    return op.kind in ("carray.flush", "ctable.flush", "close") and "mode_r" in op.tags \
        and raised(leg["result"], "OSError") and "cannot modify" in leg["result"][3] \
        and ok(bz["result"])


@_k("legacy-trim-mode-r", "legacy bug: trim() of a persistent carray opened in mode 'r' "
    "removed the rows from the carray in memory and their chunk files from the directory "
    "(a later open failed: chunkfile not found), then raised IOError or not at all; bcolzx "
    "raises ReadOnlyError first and changes nothing")
def _(op, leg, bz):
    lr, br = leg["result"], bz["result"]
    if "mode_r" not in op.tags:
        return False
    if op.kind == "carray.trim":  # the trim itself, when legacy did not even raise
        return ok(lr) and raised(br, "ReadOnlyError")
    if op.kind != "observe" or "after:carray.trim" not in op.tags or br[0] != "carray":
        return False
    if raised(lr, "ValueError"):  # the files it removed, read again
        return "not found" in lr[3]
    return lr[0] == "carray" and lr[3] < br[3] and _same_values(lr[4], br[4][:lr[3]])


@_k("legacy-attrs-failed-write", "legacy bug: an attribute value that cannot be written "
    "(TypeError, not JSON) stayed in memory all the same; bcolzx keeps the attributes as they "
    "were")
def _(op, leg, bz):
    return op.kind == "attrs.set" and "persistent" in op.tags \
        and raised(leg["result"], "TypeError") and raised(bz["result"], "TypeError") \
        and leg["ref"] is not None and differences(leg["ref"], bz["ref"]) is not None


@_k("legacy-scalar-full-assign", "legacy bug: assigning a NumPy scalar of the carray's own "
    "dtype to a full slice (c[:] = np.float32(0.5)) raised TypeError (it took len() of the "
    "scalar)")
def _(op, leg, bz):
    return op.kind == "carray.setitem" and raised(leg["result"], "TypeError") \
        and "has no len()" in leg["result"][3] and ok(bz["result"])


@_k("legacy-datetime-dflt", "legacy bug: a datetime64 dflt for a carray of another dtype "
    "raised TypeError (converted through a Python date); bcolzx converts it as NumPy does")
def _(op, leg, bz):
    return op.kind.startswith("new.carray") and "dflt" in op.tags \
        and raised(leg["result"], "TypeError") and "int() argument" in leg["result"][3] \
        and ok(bz["result"])


@_k("fault-precedence-mode-r", "not a behaviour difference: a write with a bad value to data "
    "opened in mode 'r' has two faults; legacy reported the value, bcolzx the mode "
    "(ReadOnlyError, an IOError); which fault is reported first is not compared")
def _(op, leg, bz):
    return "mode_r" in op.tags and raised(leg["result"], "ValueError", "TypeError", "IndexError") \
        and raised(bz["result"], "ReadOnlyError")


# -- witnesses: a program for every entry ------------------------------------------------------


def W(line: str, kind: str, *tags: str, ref: str | None = None, rootdir: str | None = None,  # noqa: N802 - reads as the Op it builds
      mode: str | None = None, mutates: bool = False) -> Op:
    """An op of a witness program (``name = expr`` binds `name`)."""
    target, code = None, line
    head, sep, rest = line.partition(" = ")
    if sep and head.isidentifier():
        target, code = head, rest
    return Op(code, kind, frozenset(tags), target=target, ref=ref, rootdir=rootdir, mode=mode,
              mutates=mutates)


_C10 = "c0 = bcolz.arange(10, chunklen=3)"
_T2 = "t0 = bcolz.ctable([np.arange(5), np.arange(5.0)], names=['a', 'b'], chunklen=2)"

#: For each KNOWN id: setup lines (must agree), then the op that shows the difference.
WITNESSES: dict[str, list] = {
    "negative-step-getitem": [_C10, W("c0[8:1:-3]", "carray.getitem", "neg_step",
                                      ref="np.asarray(c0[:])[8:1:-3]")],
    "negative-step-setitem": [_C10, W("c0[::-2] = 0", "carray.setitem", "neg_step")],
    "iter-nonpositive-step": [_C10, W("list(c0.iter(step=-1))", "carray.iter",
                                      "iter_nonpositive_step")],
    "unsupported-key": [_C10, W("c0[1.5]", "carray.getitem")],
    "where-ndim": ["c0 = bcolz.zeros((4, 2))",
                   W("list(c0.where(np.ones(4, bool)))", "carray.where", "ndim")],
    "ndim-expression-setitem": ["c0 = bcolz.ones((4, 2), dtype='S3')",
                                W("c0[\"c0 == b'ab'\"] = b'zz'", "carray.setitem", "expr",
                                  "ndim")],
    "fromiter-count": [W("c0 = bcolz.fromiter(iter(range(9)), dtype='i8', count=5)",
                         "new.carray.fromiter", "fromiter", "fromiter_long", "count=5")],
    "arange-steps": [W("c0 = bcolz.arange(10, 0, -2)", "new.carray.arange",
                       "arange_negative_or_fractional_step",
                       ref="np.array_equal(np.asarray(c0[:]), np.arange(10, 0, -2))")],
    "arange-start-overflow": [W("c0 = bcolz.arange(194, 12, -3, dtype='int8')",
                                "new.carray.arange", "arange_negative_or_fractional_step",
                                "arange_start_overflow")],
    "empty-tuple-key": [_C10, W("c0[()]", "carray.getitem", "odd=()",
                                ref="np.asarray(c0[:])[()]")],
    "where-list-mask": ["c0 = bcolz.arange(3)",
                        W("list(c0.where([True, False, True]))", "carray.where", "bool_list")],
    "nrow-ctable-flavor": [_T2, W("t0.fetchwhere('a > 1', outcols=['nrow__', 'b'])",
                                  "ctable.fetchwhere", "nrow")],
    "attrs-numpy-number-on-disk": ["c0 = bcolz.carray(np.arange(3), rootdir='d0')",
                                   W("c0.attrs['k'] = np.int64(3)", "attrs.set", "persistent")],
    "ctable-shares-carrays": ["c0 = bcolz.arange(4)",
                              "t0 = bcolz.ctable([c0], names=['a'], chunklen=2)",
                              "t0.append((5,))", W("len(c0)", "carray.len", "aliased")],
    "ctable-shares-carrays-blocks": [
        "c0 = bcolz.carray(np.arange(12))", "t0 = bcolz.ctable([c0], names=['a'], chunklen=5)",
        W("list(bcolz.iterblocks(t0))", "iterblocks", "shared_columns", "chunklen=5")],
    "purge-closes": ["c0 = bcolz.carray(np.arange(10), rootdir='d0')", "c0.purge()",
                     W("c0.append(5)", "carray.append", "purged")],
    "legacy-iterblocks-blen-1": ["c0 = bcolz.zeros(5, dtype='float64', chunklen=2)",
                                 W("list(bcolz.iterblocks(c0, blen=1, start=1))",
                                   "iterblocks")],
    "arange-wraps": [W("c0 = bcolz.arange(4, 273, dtype='int8', chunklen=100)",
                       "new.carray.arange",
                       ref="np.array_equal(np.asarray(c0[:]), np.arange(4, 273, dtype='int8'))")],
    "legacy-ctable-no-columns": ["t0 = bcolz.ctable([np.arange(3)], names=['a'])",
                                 "t0.delcol('a')", W("t0", "observe")],
    "legacy-delcol-mode-r": ["t0 = bcolz.ctable([np.arange(3), np.arange(3.0)], names=['a', 'b'], "
                             "rootdir='d0')", "t0.flush(); del t0",
                             "t0 = bcolz.open('d0', mode='r')",
                             W("t0.delcol('a')", "ctable.delcol.name", "mode_r"),
                             W("t0", "observe", "after:ctable.delcol.name", "mode_r")],
    "size-type": [_C10, W("c0.size", "carray.prop.x.size")],
    "delcol": [_T2, W("t0.delcol('nosuchcol')", "ctable.delcol.unknown")],
    "ctable-duplicate-names": [W("bcolz.ctable([np.arange(3), np.arange(3)], names=['a', 'a'])",
                                 "new.ctable.bad_names", "duplicate_names")],
    "ctable-append-extra-column": [_T2, W("t0.append([np.arange(2), np.arange(2.0), "
                                          "np.arange(2)])", "ctable.append.extra_col")],
    "ctable-new-mode": ["t0 = bcolz.ctable([np.arange(3)], names=['a'], rootdir='d0')",
                        W("t0.mode", "ctable.prop.x.mode")],
    "ctable-array": [_T2, W("np.asarray(t0)", "ctable.prop.np.asarray(x)")],
    "nrow-outcols": [_T2, W("list(t0.whereblocks('a > 0', outcols=['nrow__', 'a']))",
                            "ctable.whereblocks", "nrow")],
    "attrs-in": [_C10, "c0.attrs['k'] = 1", W("'k' in c0.attrs", "attrs.in")],
    "attrs-json-form": [_C10, W("c0.attrs['k'] = (1, 2)", "attrs.set",
                                ref="[[k, v] for k, v in sorted(c0.attrs.getall().items())]")],
    "attrs-not-json": [_C10, W("c0.attrs['k'] = b'raw'", "attrs.set", "attrs_not_json")],
    "object-dtype": [W("c0 = bcolz.carray([np.datetime64('2000-01-01'), 0])",
                       "new.carray.list")],
    "ctable-existing-rootdir": ["c0 = bcolz.carray(np.arange(3), rootdir='d0')",
                                "c0.flush(); del c0",
                                W("t0 = bcolz.ctable([np.arange(3)], names=['a'], rootdir='d0')",
                                  "new.ctable.arrays", "existing_rootdir", rootdir="d0")],
    "ctable-names-string": [W("t0 = bcolz.ctable([np.arange(3)], names='a')",
                              "new.ctable.bad_names", "names_string")],
    "record-dtype": [_T2, W("t0['a > 2']", "ctable.getitem.expr")],
    "vm-python": ["c0 = bcolz.carray(np.arange(5, dtype='uint8'))",
                  W("bcolz.eval('-c0', vm='python')", "eval", "vm_python",
                    ref="bcolz.eval('-c0')")],
    "legacy-below-range-index": [_C10, W("c0[-11]", "carray.getitem", "below_range")],
    "legacy-empty-conversion": [W("c0 = bcolz.carray(np.zeros(0, bool), dtype='int8')",
                                  "new.carray.carray", "dtype_conversion")],
    "legacy-eval-empty": ["c0 = bcolz.carray([], dtype='i8')",
                          W("bcolz.eval('c0 + 1')", "eval")],
    "legacy-unicode-empty-chunk": [W("c0 = bcolz.carray(np.array(['ab', ''], dtype='U4'), "
                                     "chunklen=1)", "new.carray.carray")],
    "legacy-full-struct-assign": [
        "t0 = bcolz.ctable([np.zeros(30, 'i4'), np.zeros(30)], names=['a', 'c'], chunklen=4)",
        "t0[:] = np.array([(i, -i) for i in range(30)], dtype=[('a', 'i4'), ('c', 'f8')])",
        W("t0", "observe", "after:ctable.setitem.slice", "full_range_array")],
    "legacy-numexpr-bytes-order": [
        "t0 = bcolz.ctable([np.array([b'zz', b'\\xc3\\xa9t', b'a'], dtype='S3')], names=['x'])",
        W("list(t0.whereblocks(\"x > b'a'\", blen=10))", "ctable.whereblocks", "bytes_order",
          ref="list(t0.whereblocks(\"x > b'a'\", blen=10, vm='python'))")],
    "legacy-reshape-strings": ["c0 = bcolz.carray(np.array(['ab', 'c'], dtype='U4'))",
                               W("c0.reshape((2, 1))", "carray.reshape")],
    "legacy-datetime-days-on-disk": [W("c0 = bcolz.zeros(3, dtype='datetime64[D]', "
                                       "rootdir='d0')", "new.carray.zeros", rootdir="d0")],
    "legacy-index-array-dtype": [_C10, W("c0[np.array([1, 2], dtype='int32')]",
                                         "carray.getitem", "int32_array")],
    "legacy-too-many-indices": [_C10, W("c0[1, 2]", "carray.getitem", "too_many_indices")],
    "legacy-fetchwhere-outcols": [_T2, W("t0.fetchwhere('a > 0', outcols='a')",
                                         "ctable.fetchwhere", "outcols_string")],
    "legacy-ctable-create-mode-a": [W("t0 = bcolz.ctable([np.arange(3)], names=['a'], "
                                      "rootdir='d0', mode='a')", "new.ctable.arrays", "mode=a",
                                      rootdir="d0", mode="a")],
    "legacy-fancy-setitem-range": ["c0 = bcolz.carray([1])",
                                   W("c0[[-2, -1]] = np.arange(2)", "carray.setitem", "fancy",
                                     "out_of_range")],
    "legacy-ctable-append-array": [_T2, W("t0.append(np.arange(3.0))",
                                          "ctable.append.structured")],
    "legacy-ndim-row-assign": ["c0 = bcolz.carray(np.zeros((6, 2)), chunklen=1)",
                               "c0[3] = 200",
                               W("c0", "observe", "after:carray.setitem", "ndim")],
    "legacy-partial-ctable-append": [_T2, "t0.append([np.arange(2), np.arange(3.0)])",
                                     W("t0", "observe", "after:ctable.append.bad_lengths")],
    "legacy-sum": ["c0 = bcolz.carray(np.full(300, 200, dtype='uint8'))",
                   W("c0.sum()", "carray.sum", ref="np.asarray(c0[:]).sum()")],
    "legacy-copy-dflt": ["c0 = bcolz.carray(np.arange(3, dtype='uint8'), dflt=3)",
                         "c1 = c0.copy()", W("c1.dflt", "carray.prop.x.dflt", "copied")],
    "legacy-fetchwhere-empty": [_T2, W("t0.fetchwhere('a > 100', out_flavor='numpy')",
                                       "ctable.fetchwhere")],
    "legacy-iterblocks-ndim-column": ["c0 = bcolz.zeros((4, 3, 2), dtype='i4')",
                                      "t0 = bcolz.ctable([c0], names=['a'])",
                                      W("list(bcolz.iterblocks(t0, blen=1))", "iterblocks",
                                        "ndim_column")],
    "legacy-ndim-zero-chunk": ["c0 = bcolz.zeros((1, 2), dtype='uint8', chunklen=5)",
                               "c0.append(np.zeros((120, 2), 'uint8'))",
                               "c0.append(np.full((10, 2), 7, 'uint8'))",
                               W("c0[:6]", "carray.getitem", "slice", "ndim")],
    "legacy-empty-fancy-ndim": ["c0 = bcolz.zeros((4, 2))",
                                W("c0[[]]", "carray.getitem", "ndim", "fancy")],
    "legacy-expr-key-ndim": ["c0 = bcolz.ones((4, 2))",
                             W("c0['c0 > 0'] = 1", "carray.setitem", "expr", "ndim")],
    "where-ndim-column": ["c0 = bcolz.zeros((4, 2))", "t0 = bcolz.ctable([c0], names=['a'])",
                          W("t0[np.ones(4, bool)]", "ctable.getitem.mask", "ndim_column",
                            ref="np.asarray(t0[:])[np.asarray(np.ones(4, bool))]")],
    "legacy-reshape-on-disk": ["c0 = bcolz.carray(np.arange(6), chunklen=1, rootdir='d0')",
                               W("c0.reshape((3, 2))", "carray.reshape", "persistent"),
                               W("c0[:]", "carray.getitem", "reshaped", "persistent")],
    "legacy-partial-fancy-assign": ["c0 = bcolz.carray(np.zeros((2, 3)), chunklen=2)",
                                    W("c0[[1, 2]] = -2.25", "carray.setitem", "fancy",
                                      "out_of_range"),
                                    W("c0", "observe", "after:carray.setitem", "fancy",
                                      "out_of_range")],
    "legacy-flush-mode-r": ["c0 = bcolz.carray(np.arange(6), chunklen=4, rootdir='d0')",
                            "c0.flush(); del c0", "c0 = bcolz.open('d0', mode='r')",
                            W("c0.flush()", "carray.flush", "mode_r")],
    "legacy-trim-mode-r": ["c0 = bcolz.carray(np.arange(20), chunklen=3, rootdir='d0')",
                           "c0.flush(); del c0", "c0 = bcolz.open('d0', mode='r')",
                           W("c0.trim(5)", "carray.trim", "mode_r", mutates=True)],
    "legacy-attrs-failed-write": [
        "c0 = bcolz.carray(np.arange(3), rootdir='d0')",
        W("c0.attrs['k'] = b'raw'", "attrs.set", "persistent",
          ref="[[k, v] for k, v in sorted(c0.attrs.getall().items())]")],
    "legacy-scalar-full-assign": ["c0 = bcolz.carray(np.zeros(3, dtype='float32'))",
                                  W("c0[:] = np.float32(0.5)", "carray.setitem")],
    "legacy-datetime-dflt": [W("c0 = bcolz.carray(np.arange(3), dtype='int32', "
                               "dflt=np.datetime64('2001-01-01'))", "new.carray.carray", "dflt")],
    "fault-precedence-mode-r": ["t0 = bcolz.ctable([np.arange(3)], names=['a'], rootdir='d0')",
                                "t0.flush(); del t0", "t0 = bcolz.open('d0', mode='r')",
                                W("t0['a'] = np.array(['x', 'y', 'z'])", "ctable.setitem.col",
                                  "mode_r")],
}
