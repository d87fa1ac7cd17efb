"""How the differential test compares what legacy bcolz and bcolzx reported.

:func:`differences` compares two normalized results (see
:func:`diff_worker.normalize`) by the rules stated in the docstring of
``test_differential.py``, and says what differs; :func:`describe` and
:func:`signature` are for reports.
"""

from __future__ import annotations

import math

import numpy as np

from .diff_model import Op


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.names:
        return all(_same_values(a[name], b[name]) for name in a.dtype.names)
    if a.dtype.kind in "fcmM":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def _show(value) -> str:
    try:
        if isinstance(value, np.ndarray):
            return np.array2string(value, threshold=12, edgeitems=4, max_line_width=200) + \
                f" (dtype {value.dtype}, shape {value.shape})"
        text = repr(value)
    except (ValueError, SystemError):  # U data with code points no str can (legacy garbage)
        raw = value.tobytes() if isinstance(value, np.ndarray) else str(value).encode()
        return f"<unprintable: {raw[:60]!r}...>"
    return text if len(text) < 300 else text[:300] + "..."


def _array_difference(a: np.ndarray, b: np.ndarray, path: str) -> str | None:
    if a.dtype != b.dtype:
        return f"{path}: dtype legacy {a.dtype} != bcolzx {b.dtype}"
    if a.shape != b.shape:
        return f"{path}: shape legacy {a.shape} != bcolzx {b.shape}"
    if not _same_values(a, b):
        where = ""
        if a.ndim and a.dtype.names is None:
            same = (a == b) | (np.isnan(a) & np.isnan(b)) if a.dtype.kind in "fcmM" else a == b
            bad = np.argwhere(~same)[:5]
            where = "; first differences at " + ", ".join(
                f"{tuple(int(i) for i in ix)}: legacy {a[tuple(ix)]!r} bcolzx {b[tuple(ix)]!r}"
                for ix in bad)
        elif a.ndim:
            rows = [i for i in range(len(a)) if not _same_values(a[i:i + 1], b[i:i + 1])][:3]
            where = "; first differences at rows " + ", ".join(
                f"{i}: legacy {a[i]!r} bcolzx {b[i]!r}" for i in rows)
        return f"{path}: values differ{where}:\n  legacy {_show(a)}\n  bcolzx {_show(b)}"
    return None


def describe(result) -> str:
    """A short text for a normalized result."""
    if result[0] == "raise":
        return f"raised {result[3]}" + (f" (while {result[4]})" if result[4] != "op" else "")
    if result[0] == "py":
        return f"{result[1]} {result[2]!r}"
    if result[0] in ("np", "ndarray"):
        return f"{result[1]} {_show(result[-1])}"
    if result[0] == "carray":
        return f"carray dtype {result[1]} shape {result[2]}: {_show(result[4])}"
    if result[0] == "ctable":
        return f"ctable {result[1]} len {result[3]}: {_show(result[4])}"
    return _show(result)


def exceptions_match(legacy, ours) -> bool:
    """The rule of the module docstring: same name, or a subclass of legacy's builtin."""
    if legacy[1] == ours[1]:
        return True
    legacy_is_builtin = legacy[2] and legacy[2][0] == legacy[1]
    return bool(legacy_is_builtin and legacy[1] in ours[2])


def differences(legacy, ours, path: str = "result") -> str | None:
    """None if `legacy` and `ours` (normalized results) agree, else what differs."""
    if legacy[0] == "raise" or ours[0] == "raise":
        if legacy[0] == ours[0] == "raise":
            if exceptions_match(legacy, ours) and legacy[4] == ours[4]:
                return None
            return f"{path}: legacy {describe(legacy)}; bcolzx {describe(ours)}"
        return f"{path}: legacy {describe(legacy)}; bcolzx {describe(ours)}"
    if legacy[0] != ours[0]:
        return f"{path}: legacy gives {describe(legacy)}; bcolzx {describe(ours)}"
    tag = legacy[0]
    if tag == "none":
        return None
    if tag == "py":
        if legacy[1] != ours[1]:
            return f"{path}: type legacy {legacy[1]} {legacy[2]!r} != bcolzx {ours[1]} {ours[2]!r}"
        a, b = legacy[2], ours[2]
        if isinstance(a, float) and math.isnan(a) and math.isnan(b):
            return None
        return None if a == b else f"{path}: legacy {a!r} != bcolzx {b!r}"
    if tag == "np":
        if legacy[2].dtype.kind == "V" and legacy[1] != ours[1]:
            return f"{path}: type legacy {legacy[1]} != bcolzx {ours[1]}"
        return _array_difference(legacy[2], ours[2], path)
    if tag == "ndarray":
        if legacy[1] != ours[1]:
            return f"{path}: class legacy {legacy[1]} != bcolzx {ours[1]}"
        if legacy[3].dtype.kind == "V" and legacy[2] != ours[2]:
            return f"{path}: dtype.type legacy {legacy[2]} != bcolzx {ours[2]}"
        return _array_difference(legacy[3], ours[3], path)
    if tag == "carray":
        for i, what in ((1, "dtype"), (2, "shape"), (3, "len")):
            if legacy[i] != ours[i]:
                return f"{path}: carray {what} legacy {legacy[i]} != bcolzx {ours[i]}"
        return _array_difference(legacy[4], ours[4], path + "[:]")
    if tag == "ctable":
        for i, what in ((1, "names"), (2, "dtype"), (3, "len"), (5, "column lengths")):
            if legacy[i] != ours[i]:
                return f"{path}: ctable {what} legacy {legacy[i]} != bcolzx {ours[i]}"
        return _array_difference(legacy[4], ours[4], path + "[:]")
    if tag == "namedtuple":
        if legacy[1:3] != ours[1:3]:
            return f"{path}: namedtuple legacy {legacy[1]}{legacy[2]} != bcolzx " \
                   f"{ours[1]}{ours[2]}"
        return _sequence_difference(legacy[3], ours[3], path)
    if tag in ("list", "tuple", "set"):
        return _sequence_difference(legacy[1], ours[1], path)
    if tag == "iter":
        if legacy[2] != ours[2]:
            return f"{path}: iterator truncated in one library only"
        return _sequence_difference(legacy[1], ours[1], path)
    if tag == "dict":
        if len(legacy[1]) != len(ours[1]):
            return f"{path}: dict legacy {_show(legacy[1])} != bcolzx {_show(ours[1])}"
        for i, ((lk, lv), (ok, ov)) in enumerate(zip(legacy[1], ours[1])):
            found = differences(lk, ok, f"{path}.key{i}") or \
                differences(lv, ov, f"{path}[{_show(lk[-1])}]")
            if found:
                return found
        return None
    if legacy != ours:
        return f"{path}: legacy {_show(legacy)} != bcolzx {_show(ours)}"
    return None


def _sequence_difference(a: list, b: list, path: str) -> str | None:
    if len(a) != len(b):
        return f"{path}: {len(a)} items from legacy, {len(b)} from bcolzx:\n" \
               f"  legacy {_show([describe(x) for x in a[:6]])}\n" \
               f"  bcolzx {_show([describe(x) for x in b[:6]])}"
    for i, (x, y) in enumerate(zip(a, b)):
        found = differences(x, y, f"{path}[{i}]")
        if found:
            return found
    return None


def reply_differences(lrep: dict, brep: dict) -> str | None:
    return differences(lrep["result"], brep["result"]) or \
        (differences(lrep["ref"], brep["ref"], "ref") if lrep["ref"] or brep["ref"] else None)


def outcome(result) -> str:
    return f"raise:{result[1]}" if result[0] == "raise" else f"value:{result[0]}"


def signature(op: Op, lrep: dict, brep: dict) -> str:
    """What kind of difference this is, for grouping an exploration's findings."""
    return f"{op.kind}|{outcome(lrep['result'])}|{outcome(brep['result'])}"
