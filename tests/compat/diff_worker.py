"""Worker process of the differential test (``test_differential.py``): one bcolz, many ops.

Run as ``python diff_worker.py legacy`` (the real legacy bcolz, plain
``import bcolz``) or ``python diff_worker.py bcolzx`` (``bcolzx.compat.install()``
first, so that ``import bcolz`` gives bcolzx).  Both roles run this same
program, in their own working directory (the datasets they write use the same
relative names there).

Protocol, over stdin/stdout: every message is an 8-byte little-endian length
followed by a pickle.  The first message is the worker's greeting (what
``bcolz`` is); then for each request (a dict with ``'cmd'``) one reply:

* ``{'cmd': 'run', 'code': str, 'target': str | None, 'ref': str | None}``:
  evaluate `code` in the worker's namespace (an expression; a statement if it
  does not compile as one), bind the value to `target` if given, and reply
  ``{'result': <normalized>, 'ref': <normalized or None>}``; `ref`, when
  given, is a second expression evaluated after the first, even if that
  one raised (an oracle such as ``np.asarray(c0[:])[::-1]``).
* ``{'cmd': 'reset'}``: forget every name and empty the working directory.
* ``{'cmd': 'exit'}``.

The namespace holds ``bcolz``, ``np`` and :func:`data` (deterministic test
arrays).  A failing op replies with the exception normalized (its class name
and the builtin classes of its MRO) and the worker carries on.  Nothing here
is compared: the parent does that.  File descriptor 1 is moved aside for the
protocol, so that whatever a library prints goes to stderr instead.
"""

from __future__ import annotations

import builtins
import gc
import os
import pickle
import shutil
import struct
import sys
import warnings

import numpy as np

#: Items an iterator is consumed to at most (more is reported as truncated).
MAX_ITEMS = 20_000

_WORDS = ("", "a", "b", "ab", "ba", "abc", "zz", "hello", "x y", "\u00e9t\u00e9")


def data(dtype, shape, seed=0, pattern="rand"):
    """A deterministic NumPy array of `dtype` and `shape` (an int or a tuple).

    `pattern` is ``'rand'`` (small random values, duplicates likely, NaN
    in about one float in eight), ``'zeros'``, ``'ones'`` or ``'range'``
    (0, 1, 2, ... cast to `dtype`).  Structured dtypes are filled field by
    field.  Only NumPy is used, so both workers build the same bytes.
    """
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if dtype.names:
        out = np.zeros(shape, dtype=dtype)
        for i, name in enumerate(dtype.names):
            out[name] = data(dtype.fields[name][0], shape, seed * 31 + i, pattern)
        return out
    if dtype.shape:  # a subarray dtype: its dimensions join the shape
        return data(dtype.base, shape + dtype.shape, seed, pattern)
    size = int(np.prod(shape, dtype=np.int64))
    kind = dtype.kind
    if pattern == "zeros":
        return np.zeros(shape, dtype=dtype)
    if pattern == "ones":
        return np.ones(shape, dtype=dtype) if kind not in "SU" else \
            np.full(shape, "1", dtype=dtype)
    if pattern == "range":
        ints = np.arange(size, dtype=np.int64)
        if kind == "b":
            return (ints % 3 == 0).reshape(shape)
        if kind in "SU":
            return ints.astype(str).astype(dtype).reshape(shape)
        if kind == "M":
            return (np.datetime64("2000-01-01", "D") + ints).astype(dtype).reshape(shape)
        if kind in "iu":
            ints = ints % (int(np.iinfo(dtype).max) + 1)
        return ints.astype(dtype).reshape(shape)
    rng = np.random.default_rng(seed)
    if kind == "b":
        return (rng.random(shape) < 0.4)
    if kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(int(info.min), -100), min(int(info.max), 100), shape,
                            endpoint=True).astype(dtype)
    if kind == "f":
        out = (rng.integers(-400, 400, shape) / 4).astype(dtype)
        out[rng.random(shape) < 0.125] = np.nan
        return out
    if kind == "M":
        days = rng.integers(-1000, 1000, shape)
        return (np.datetime64("2000-01-01", "D") + days).astype(dtype)
    if kind in "SU":
        words = [_WORDS[i] for i in rng.integers(0, len(_WORDS), size)]
        if kind == "S":
            words = [w.encode("utf-8", "replace") for w in words]
        return np.array(words, dtype=dtype).reshape(shape)
    raise TypeError(f"data(): no pattern for {dtype}")


# -- normalization: library objects to plain, comparable values ------------------------------


def _builtin_mro(exc_type):
    return [c.__name__ for c in exc_type.__mro__ if c.__module__ == "builtins"]


def _raised(exc, stage="op"):
    return ("raise", type(exc).__name__, _builtin_mro(type(exc)),
            f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"[:300], stage)


def _plain_array(arr):
    """(class name, dtype.type name, plain ndarray copy) of an ndarray."""
    cls = type(arr).__name__
    type_name = arr.dtype.type.__name__
    plain = np.array(arr, copy=True, subok=False)
    if plain.dtype.names and plain.dtype.type is not np.void:
        plain = plain.view(np.dtype((np.void, plain.dtype)))
    return cls, type_name, plain


def normalize(value, bcolz, depth=0):
    """A picklable description of `value` made of builtins and NumPy arrays."""
    if depth > 4:
        return ("other", type(value).__name__)
    if value is None:
        return ("none",)
    if isinstance(value, bcolz.carray):
        contents = value[:]
        return ("carray", str(value.dtype), tuple(value.shape), len(value),
                _plain_array(np.asarray(contents))[2])
    if isinstance(value, bcolz.ctable):
        contents = value[:]
        return ("ctable", list(value.names), str(value.dtype), len(value),
                _plain_array(np.asarray(contents))[2],
                [len(value.cols[name]) for name in value.names])
    if isinstance(value, str):
        try:  # a code point beyond U+10FFFF encodes without complaint, but not back
            value.encode("utf-8").decode("utf-8")
        except UnicodeError:  # a str legacy built from garbage: not even picklable
            value = "\x00\U0010ffff (a str that cannot be encoded)"
        return ("py", "str", value)
    if isinstance(value, (bool, int, float, complex, bytes)):
        return ("py", type(value).__name__, value)
    if isinstance(value, np.ndarray):
        return ("ndarray",) + _plain_array(value)
    if isinstance(value, np.generic):
        return ("np", type(value).__name__, _plain_array(np.asarray(value))[2])
    if isinstance(value, np.dtype):
        return ("dtype", str(value))
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return ("namedtuple", type(value).__name__, list(value._fields),
                [normalize(v, bcolz, depth + 1) for v in value])
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, [normalize(v, bcolz, depth + 1) for v in value])
    if isinstance(value, dict):
        items = [(normalize(k, bcolz, depth + 1), normalize(v, bcolz, depth + 1))
                 for k, v in value.items()]
        return ("dict", sorted(items, key=repr))
    if isinstance(value, (set, frozenset)):
        return ("set", sorted((normalize(v, bcolz, depth + 1) for v in value), key=repr))
    if hasattr(value, "__next__") or type(value).__name__ in ("generator", "map", "zip"):
        items = []
        for item in value:
            if len(items) == MAX_ITEMS:
                return ("iter", items, True)
            items.append(normalize(item, bcolz, depth + 1))
        return ("iter", items, False)
    return ("other", type(value).__name__)


# -- the loop ------------------------------------------------------------------------------


def _read(stream):
    head = stream.read(8)
    if len(head) < 8:
        return None
    (size,) = struct.unpack("<Q", head)
    return pickle.loads(stream.read(size))


def _write(stream, obj):
    payload = pickle.dumps(obj, protocol=4)
    stream.write(struct.pack("<Q", len(payload)) + payload)
    stream.flush()


def _greeting(role):
    """Import bcolz as `role` says and describe what was imported."""
    if role == "bcolzx":
        import bcolzx.compat

        bcolzx.compat.install()
    elif role != "legacy":
        raise SystemExit(f"unknown role {role!r}")
    import bcolz

    info = {
        "role": role,
        "file": getattr(bcolz, "__file__", None),
        "alias": bool(getattr(bcolz, "__bcolzx_alias__", False)),
        "version": getattr(bcolz, "__version__", None),
        "numpy": np.__version__,
        "python": sys.version.split()[0],
        "pid": os.getpid(),
    }
    if role == "bcolzx":
        import bcolzx

        info["bcolzx_file"] = bcolzx.__file__
    for setter in ("set_nthreads", "blosc_set_nthreads"):  # results do not depend on it
        try:
            getattr(bcolz, setter)(1)
        except Exception:  # noqa: BLE001, S110 - a missing setter changes nothing compared
            pass
    return bcolz, info


def _fresh_namespace(bcolz):
    return {"__builtins__": builtins, "bcolz": bcolz, "np": np, "data": data}


def _evaluate(code, ns):
    try:
        compiled = compile(code, "<op>", "eval")
    except SyntaxError:
        exec(compile(code, "<op>", "exec"), ns)  # noqa: S102 - running ops is the point
        return None
    return eval(compiled, ns)


def _run(request, ns, bcolz):
    code, target, ref = request["code"], request.get("target"), request.get("ref")
    try:
        value = _evaluate(code, ns)
    except Exception as exc:  # noqa: BLE001 - every failure is a result
        result = _raised(exc)
    else:
        if target:
            ns[target] = value
        try:
            result = normalize(value, bcolz)
        except Exception as exc:  # noqa: BLE001
            result = _raised(exc, "normalize")
        del value
    ref_result = None
    if ref:
        try:
            ref_result = normalize(_evaluate(ref, ns), bcolz)
        except Exception as exc:  # noqa: BLE001
            ref_result = _raised(exc)
    return {"result": result, "ref": ref_result}


def _reset(ns, bcolz, workdir):
    ns.clear()
    ns.update(_fresh_namespace(bcolz))
    gc.collect()  # close (and flush) every dataset before its directory goes
    for entry in os.listdir(workdir):
        path = os.path.join(workdir, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def main(argv):
    role = argv[1]
    # The protocol owns the original stdout; prints from libraries go to stderr.
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    proto_in = sys.stdin.buffer
    warnings.simplefilter("ignore")
    workdir = os.getcwd()
    try:
        bcolz, info = _greeting(role)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, then exit
        _write(proto_out, {"error": f"{type(exc).__name__}: {exc}"})
        return 1
    _write(proto_out, info)
    ns = _fresh_namespace(bcolz)
    while True:
        request = _read(proto_in)
        if request is None or request["cmd"] == "exit":
            return 0
        if request["cmd"] == "reset":
            try:
                _reset(ns, bcolz, workdir)
                reply = {"result": ("none",), "ref": None}
            except Exception as exc:  # noqa: BLE001
                reply = {"result": _raised(exc, "reset"), "ref": None}
        else:
            reply = _run(request, ns, bcolz)
        try:
            _write(proto_out, reply)
        except pickle.PicklingError as exc:
            _write(proto_out, {"result": _raised(exc, "pickle"), "ref": None})


if __name__ == "__main__":
    sys.exit(main(sys.argv))
