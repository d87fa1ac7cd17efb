"""The interface of a system under test (:class:`System`) and the helpers its adapters share.

An adapter (:mod:`bcolzx.bench.systems` lists them) subclasses
:class:`System`: it names its library and what it can run (``WORKLOADS``,
a subset of :data:`ARRAY_OPS` and :data:`TABLE_OPS`), and implements those
workloads' methods.  The helpers measure and settle what a system wrote
(:func:`disk_usage`, :func:`sync_tree`, :func:`rmtree`) and sum an array
block by block where a library has no reduction of its own
(:func:`blockwise_sum`).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
from contextlib import contextmanager

import numpy as np

CHUNK_BYTES = 1 << 20
CODEC = "lz4"
CLEVEL = 5


def rmtree(path: str) -> None:
    """Remove a file or a directory tree, if it exists."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def disk_usage(path: str) -> tuple[int, int]:
    """Files and bytes (apparent sizes) under `path`, a file or a directory."""
    if os.path.isfile(path):
        return 1, os.path.getsize(path)
    files = size = 0
    for root, _, names in os.walk(path):
        for name in names:
            files += 1
            size += os.path.getsize(os.path.join(root, name))
    return files, size


def sync_tree(path: str) -> None:
    """fsync every file and directory under `path` (what a durable commit costs)."""
    if os.path.isfile(path):
        paths = [path]
        dirs = [os.path.dirname(os.path.abspath(path))]
    else:
        paths, dirs = [], []
        for root, _, names in os.walk(path):
            dirs.append(root)
            paths.extend(os.path.join(root, n) for n in names)
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    for d in dirs:
        try:
            fd = os.open(d, os.O_RDONLY)
        except OSError:  # pragma: no cover - platforms without directory fds
            continue
        try:
            os.fsync(fd)
        except OSError:  # pragma: no cover
            pass
        finally:
            os.close(fd)


def blockwise_sum(n: int, dtype: np.dtype, read_into, blen: int):
    """Sum `n` items read `blen` at a time into one reused buffer.

    Parameters
    ----------
    n : int
        Items.
    dtype : numpy.dtype
        Their dtype.
    read_into : callable
        ``read_into(start, stop, out)`` fills ``out`` (a view of ``stop - start``
        items) with the items ``[start:stop]``.
    blen : int
        Items per read.

    Returns
    -------
    scalar
        The sum, accumulated as NumPy would (float64 or int64).
    """
    dtype = np.dtype(dtype)
    acc = dtype.type(0) if dtype.kind == "f" else np.int64(0)
    buf = np.empty(max(1, min(blen, n)), dtype=dtype)
    for start in range(0, n, blen):
        stop = min(n, start + blen)
        view = buf[:stop - start]
        read_into(start, stop, view)
        acc += view.sum()
    return acc


def have_pandas() -> bool:
    """Whether pandas is installed (``ct-todf`` needs it), without importing it."""
    return importlib.util.find_spec("pandas") is not None


ARRAY_OPS = frozenset({"build-mem", "build-disk", "append", "open", "read", "slice",
                       "hot-slice", "getitem", "sum"})
TABLE_OPS = frozenset({"ct-build", "ct-open", "ct-query-sel", "ct-query-and", "ct-query-broad",
                       "ct-todf"})


class System:
    """One system under test (the interface; see the module docstring).

    Parameters
    ----------
    variant : {'same', 'default'}
        Comparable settings, or the library's defaults.
    nthreads : int
        Threads for the ``same`` variant, where the library has a knob.
    chunk_bytes : int
        Chunk size of the ``same`` variant, in bytes.
    """

    key = ""
    label = ""
    modules: tuple[str, ...] = ()
    pip = ""
    where = "disk"  # where the datasets of the read workloads live
    WORKLOADS: frozenset = frozenset()
    self_durable = False  # it fsyncs its own writes (no sync_tree after it)
    thread_knob = False
    suffix = ""
    #: How the queries and sum run when not natively (for the reports).
    notes: dict[str, str] = {}

    def __init__(self, variant: str = "same", nthreads: int = 2,
                 chunk_bytes: int = CHUNK_BYTES) -> None:
        if variant not in ("same", "default"):
            raise ValueError(f"variant must be 'same' or 'default', not {variant!r}")
        self.variant = variant
        self.nthreads = nthreads
        self.chunk_bytes = chunk_bytes
        self.mods = {m: self._import(m) for m in self.modules}
        self._setup()

    @staticmethod
    def _import(name: str):
        """Import module `name` (a system may find its library another way)."""
        return importlib.import_module(name)

    def _setup(self) -> None:
        """Library-specific initialisation (after the imports)."""

    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether the libraries import; else the reason (for the reports)."""
        for m in cls.modules:
            try:
                cls._import(m)
            except Exception as exc:  # ImportError, or a broken install
                return False, f"{m} not importable ({type(exc).__name__}: {exc})"
        return True, ""

    def version(self) -> str:
        """The library's version."""
        m = self.mods[self.modules[0]] if self.modules else np
        return str(getattr(m, "__version__", "?"))

    def settings(self) -> str:
        """A short description of the settings in use."""
        return ""

    def supports(self, workload: str) -> bool:
        """Whether this system runs `workload`."""
        return workload in self.WORKLOADS and (workload != "ct-todf" or have_pandas())

    def chunklen(self, itemsize: int, n: int | None = None) -> int:
        """Items per chunk in the ``same`` variant (at most `n`, the length, when given)."""
        cl = max(1, self.chunk_bytes // itemsize)
        return cl if not n else max(1, min(cl, n))

    #: Set by the threads experiment: use ``nthreads`` whatever the variant and library.
    force_threads = False

    @contextmanager
    def active(self):
        """Context around every measurement: applies the thread settings."""
        self.set_threads(self.nthreads if self.variant == "same" or self.force_threads
                         else None)
        yield

    def set_threads(self, n: int | None) -> None:
        """Use `n` threads (None: the library's default)."""

    # Array workloads ------------------------------------------------------------
    def build_mem(self, a):
        raise NotImplementedError

    def build_disk(self, a, path: str) -> None:
        raise NotImplementedError

    def append(self, a, batch: int, path: str) -> None:
        raise NotImplementedError

    def open(self, path: str):
        raise NotImplementedError

    def memory_handle(self, data, table: bool):
        """The in-memory dataset the read workloads use (systems with ``where = 'memory'``).

        By default a build; NumPy and pandas use the data without copying it,
        which keeps the memory of a large run down.
        """
        return self.ct_build(data, None) if table else self.build_mem(data)

    def close(self, h) -> None:
        """Release a handle from :meth:`open` (or :meth:`ct_open`)."""

    def length(self, h) -> int:
        return len(h)

    def read(self, h):
        return h[:]

    def slice(self, h, i: int, j: int):
        return h[i:j]

    def item(self, h, i: int):
        return h[i]

    def sum(self, h):
        return h.sum()

    # Table workloads ------------------------------------------------------------
    def ct_build(self, cols: dict, path: str):
        raise NotImplementedError

    def ct_open(self, path: str):
        raise NotImplementedError

    def ct_query(self, t, expr: str):
        raise NotImplementedError

    def ct_length(self, t) -> int:
        """Rows of a table from :meth:`ct_open`."""
        return len(t)

    def ct_close(self, t) -> None:
        """Release a table from :meth:`ct_open`."""
        self.close(t)

    def ct_todf(self, t):
        raise NotImplementedError

