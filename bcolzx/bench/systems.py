"""The systems under test: bcolzx and its anchors, behind one small interface.

Every system is an adapter class with the same methods (``build_mem``,
``build_disk``, ``append``, ``open``, ``read``, ``slice``, ``item``, ``sum``
for one-dimensional arrays; ``ct_build``, ``ct_open``, ``ct_query``,
``ct_todf`` for tables) and a ``WORKLOADS`` set naming what it can do.
Adapters import their library lazily: a system whose library is missing is
reported as skipped, never an error.

Each adapter runs in one of two *variants*:

``same``
    Comparable settings: LZ4, clevel 5, byte shuffle, chunks of about
    ``chunk_bytes`` (1 MiB), ``nthreads`` threads where the library has a knob.
``default``
    The library's own defaults (chunking, codec, threads), with compression
    switched on through its Blosc2 filter for the HDF5 libraries, whose literal
    default is no compression at all.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import os
import shutil
from contextlib import contextmanager

import numpy as np

from bcolzx.bench.data import query_mask, structured

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


_MEMFILES = itertools.count()


def _memname() -> str:
    """A unique name for an in-memory HDF5 file (never created on disk)."""
    return f"bcolzx-bench-mem-{os.getpid()}-{next(_MEMFILES)}.h5"


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


# ---------------------------------------------------------------------- NumPy


class NumpyMemory(System):
    """NumPy arrays in memory: the physical limit (a copy of the bytes)."""

    key = "numpy"
    label = "NumPy (memory)"
    modules = ("numpy",)
    pip = "numpy"
    where = "memory"
    WORKLOADS = frozenset({"build-mem", "append", "read", "slice", "hot-slice", "getitem",
                           "sum", "ct-build", "ct-query-sel", "ct-query-and", "ct-query-broad",
                           "ct-todf"})
    notes = {"append": "into a preallocated array", "ct-build": "copies of the columns",
             "ct-query": "NumPy boolean masks", "ct-todf": "pandas.DataFrame(columns)"}

    def settings(self) -> str:
        return "uncompressed, in memory"

    def memory_handle(self, data, table):
        return data

    def build_mem(self, a):
        return a.copy()

    def append(self, a, batch, path):
        out = np.empty(len(a), dtype=a.dtype)
        for i in range(0, len(a), batch):
            out[i:i + batch] = a[i:i + batch]
        return out

    def read(self, h):
        return h.copy()

    def slice(self, h, i, j):
        return h[i:j].copy()

    def ct_build(self, cols, path):
        return {k: v.copy() for k, v in cols.items()}

    def ct_query(self, t, expr):
        mask = query_mask(t, expr)
        return structured({k: v[mask] for k, v in t.items()})

    def ct_todf(self, t):
        import pandas as pd
        return pd.DataFrame(t)


class Npy(System):
    """Raw ``.npy`` files (np.save / np.load): the physical limit on disk."""

    key = "npy"
    label = "NumPy .npy"
    modules = ("numpy",)
    pip = "numpy"
    suffix = ".npy"
    WORKLOADS = frozenset({"build-disk", "append", "open", "read", "slice", "hot-slice",
                           "getitem", "sum", "ct-build", "ct-open", "ct-query-sel",
                           "ct-query-and", "ct-query-broad", "ct-todf"})
    notes = {"open": "np.load(mmap_mode='r')", "slice": "memory map", "getitem": "memory map",
             "sum": "memory map .sum()", "ct-build": "one .npy per column",
             "ct-query": "memory maps + NumPy masks"}

    def settings(self) -> str:
        return "uncompressed files"

    def build_disk(self, a, path):
        np.save(path, a)

    def append(self, a, batch, path):
        with open(path, "wb") as f:
            np.lib.format.write_array_header_1_0(
                f, {"descr": np.lib.format.dtype_to_descr(a.dtype), "fortran_order": False,
                    "shape": (len(a),)})
            for i in range(0, len(a), batch):
                a[i:i + batch].tofile(f)

    def open(self, path):
        return np.load(path, mmap_mode="r")

    def close(self, h):
        mm = getattr(h, "_mmap", None)
        if mm is not None:
            mm.close()

    def read(self, h):
        return np.array(h)  # every byte read from the file (page cache)

    def slice(self, h, i, j):
        return np.array(h[i:j])

    def item(self, h, i):
        return h[i]

    def ct_build(self, cols, path):
        os.makedirs(path)
        for k, v in cols.items():
            np.save(os.path.join(path, k + ".npy"), v)

    def ct_open(self, path):
        names = sorted(f[:-4] for f in os.listdir(path) if f.endswith(".npy"))
        return {k: np.load(os.path.join(path, k + ".npy"), mmap_mode="r") for k in names}

    def ct_length(self, t):
        return len(next(iter(t.values())))

    def ct_close(self, t):
        for col in t.values():
            self.close(col)

    def ct_query(self, t, expr):
        mask = query_mask(t, expr)
        return structured({k: v[mask] for k, v in t.items()})

    def ct_todf(self, t):
        import pandas as pd
        return pd.DataFrame({k: np.array(v) for k, v in t.items()})


class Pandas(System):
    """pandas DataFrames in memory (table workloads only)."""

    key = "pandas"
    label = "pandas (memory)"
    modules = ("pandas",)
    pip = "pandas"
    where = "memory"
    WORKLOADS = frozenset({"ct-build", "ct-query-sel", "ct-query-and", "ct-query-broad"})
    notes = {"ct-build": "pandas.DataFrame(columns), copied", "ct-query": "DataFrame.query"}

    def settings(self) -> str:
        return "uncompressed, in memory"

    def memory_handle(self, data, table):
        return self.mods["pandas"].DataFrame(data, copy=False)

    def ct_build(self, cols, path):
        return self.mods["pandas"].DataFrame({k: v.copy() for k, v in cols.items()})

    def ct_query(self, t, expr):
        return t.query(expr)


# --------------------------------------------------------------------- bcolzx


class Bcolzx(System):
    """bcolzx ``carray`` / ``ctable``."""

    key = "bcolzx"
    label = "bcolzx"
    modules = ("bcolzx",)
    pip = "bcolzx"
    WORKLOADS = ARRAY_OPS | TABLE_OPS
    self_durable = True
    thread_knob = True
    notes = {"ct-query": "fetchwhere(out_flavor='numpy')"}

    def _setup(self) -> None:
        self.mod = self.mods[self.modules[0]]
        self._default_threads = self.mod.defaults.nthreads

    def settings(self) -> str:
        cp = self.cparams()
        cp = cp if cp is not None else self.mod.cparams()
        return f"{cp.cname} clevel {cp.clevel} shuffle {cp.shuffle}, {self.chunkdoc(cp)}"

    def chunkdoc(self, cp) -> str:
        blocks = f"{cp.blocksize // 1024} KiB blocks" if cp.blocksize else "automatic blocks"
        return (f"~1 MiB chunks, {blocks}, byte-delta {cp.bytedelta} "
                "(its defaults; 'auto' keeps it on the chunks where it pays)")

    def cparams(self):
        if self.variant == "default":
            return None
        return self.mod.cparams(clevel=CLEVEL, shuffle=1, cname=CODEC)

    def kw(self, itemsize: int) -> dict:
        cp = self.cparams()
        return {} if cp is None else {"cparams": cp}

    def set_threads(self, n):
        self.mod.set_nthreads(self._default_threads if n is None else n)

    def build_mem(self, a):
        return self.mod.carray(a, **self.kw(a.itemsize))

    def build_disk(self, a, path):
        c = self.mod.carray(a, rootdir=path, mode="w", **self.kw(a.itemsize))
        c.flush()

    def append(self, a, batch, path):
        c = self.mod.carray(np.empty(0, dtype=a.dtype), rootdir=path, mode="w",
                            expectedlen=len(a), **self.kw(a.itemsize))
        for i in range(0, len(a), batch):
            c.append(a[i:i + batch])
        c.flush()

    def open(self, path):
        return self.mod.open(path, mode="r")

    def ct_build(self, cols, path):
        ct = self.mod.ctable(list(cols.values()), names=list(cols), rootdir=path, mode="w",
                             **self.kw(8))
        ct.flush()

    def ct_open(self, path):
        return self.mod.open(path, mode="r")

    def ct_query(self, t, expr):
        return t.fetchwhere(expr, out_flavor="numpy")

    def ct_todf(self, t):
        return t.todataframe()


class Bcolz(Bcolzx):
    """Legacy bcolz 1.x ``carray`` / ``ctable`` (the ``bcolz-zipline`` wheel)."""

    key = "bcolz"
    label = "legacy bcolz"
    modules = ("bcolz",)
    pip = "bcolz-zipline"
    self_durable = False

    @staticmethod
    def _import(name: str):
        # The real legacy bcolz, even where the bcolzx shim answers to
        # 'import bcolz' (python -m bcolzx.compat install-shim).
        from bcolzx.compat import import_legacy

        return import_legacy()

    def _setup(self) -> None:
        self.mod = self.mods["bcolz"]
        self._default_threads = self.mod.defaults.nthreads if hasattr(
            self.mod.defaults, "nthreads") else self.mod.detect_number_of_cores()

    def chunkdoc(self, cp) -> str:
        return "chunklen for 1 MiB" if self.variant == "same" else "its default chunklen"

    def kw(self, itemsize):
        if self.variant == "default":
            return {}
        return {"cparams": self.cparams(), "chunklen": self.chunklen(itemsize)}

    def set_threads(self, n):
        self.mod.set_nthreads(self._default_threads if n is None else n)

    def open(self, path):
        return self.mod.open(path, mode="r")

    def ct_open(self, path):
        return self.mod.open(path, mode="r")


# ----------------------------------------------------------------------- HDF5


class H5py(System):
    """h5py with hdf5plugin's Blosc2 filter."""

    key = "h5py"
    label = "h5py+Blosc2"
    modules = ("h5py", "hdf5plugin")
    pip = "h5py hdf5plugin"
    suffix = ".h5"
    WORKLOADS = ARRAY_OPS | TABLE_OPS
    thread_knob = True
    notes = {"sum": "blockwise read_direct + np.sum", "ct-build": "compound dataset",
             "ct-query": "read the whole table + NumPy mask (no query engine)",
             "ct-todf": "pandas.DataFrame(dataset[:])",
             "threads": "the filter runs with its default 1 thread; BLOSC_NTHREADS=2 (its only "
                        "knob) was slower, and is used only in the threads experiment"}

    def _setup(self) -> None:
        self.h5py = self.mods["h5py"]
        hp = self.mods["hdf5plugin"]
        if self.variant == "same":
            self.filt = dict(hp.Blosc2(cname=CODEC, clevel=CLEVEL, filters=hp.Blosc2.SHUFFLE))
        else:
            self.filt = dict(hp.Blosc2())

    def settings(self) -> str:
        if self.variant == "same":
            return ("Blosc2 filter lz4 clevel 5 shuffle, 1 MiB chunks, the filter's 1 thread "
                    "(see the notes)")
        return "Blosc2 filter defaults (blosclz clevel 5 shuffle), h5py automatic chunks"

    @contextmanager
    def active(self):
        # The Blosc2 filter has no thread setting but the BLOSC_NTHREADS
        # environment variable, and with 2 it was slower here than with its
        # default of 1 (it starts threads for every chunk): so it runs at its
        # default in both variants, and with BLOSC_NTHREADS only in the threads
        # experiment. The variable would reach every other C-Blosc2 in the
        # process too, so it is set only around this system's measurements.
        old = os.environ.get("BLOSC_NTHREADS")
        if self.force_threads:
            os.environ["BLOSC_NTHREADS"] = str(self.nthreads)
        try:
            yield
        finally:
            if old is None:
                os.environ.pop("BLOSC_NTHREADS", None)
            else:
                os.environ["BLOSC_NTHREADS"] = old

    def version(self):
        return f"{self.h5py.__version__} (hdf5plugin {self.mods['hdf5plugin'].version})"

    def chunks(self, itemsize, n):
        return (self.chunklen(itemsize, n),) if self.variant == "same" else True

    def build_mem(self, a):
        # An in-memory file (core driver, no backing store); closing frees it.
        with self.h5py.File(_memname(), "w", driver="core", backing_store=False) as f:
            f.create_dataset("x", data=a, chunks=self.chunks(a.itemsize, len(a)), **self.filt)

    def build_disk(self, a, path):
        with self.h5py.File(path, "w") as f:
            f.create_dataset("x", data=a, chunks=self.chunks(a.itemsize, len(a)), **self.filt)

    def append(self, a, batch, path):
        with self.h5py.File(path, "w") as f:
            d = f.create_dataset("x", shape=(0,), maxshape=(None,), dtype=a.dtype,
                                 chunks=(self.chunklen(a.itemsize),) if self.variant == "same"
                                 else True, **self.filt)
            for i in range(0, len(a), batch):
                b = a[i:i + batch]
                n0 = d.shape[0]
                d.resize((n0 + len(b),))
                d[n0:] = b

    def open(self, path):
        return self.h5py.File(path, "r")["x"]

    def close(self, h):
        h.file.close()

    def sum(self, h):
        blen = (h.chunks[0] if h.chunks else 1 << 17) * max(1, (8 << 20) // (
            (h.chunks[0] if h.chunks else 1 << 17) * h.dtype.itemsize))

        def read_into(i, j, out):
            h.read_direct(out, np.s_[i:j])
        return blockwise_sum(h.shape[0], h.dtype, read_into, blen)

    def ct_build(self, cols, path):
        st = structured(cols)
        rows = self.chunklen(st.dtype.itemsize, len(st))
        with self.h5py.File(path, "w") as f:
            f.create_dataset("t", data=st, chunks=(rows,) if self.variant == "same" else True,
                             **self.filt)

    def ct_open(self, path):
        return self.h5py.File(path, "r")["t"]

    def ct_query(self, t, expr):
        st = t[:]
        return st[query_mask({k: st[k] for k in st.dtype.names}, expr)]

    def ct_todf(self, t):
        import pandas as pd
        return pd.DataFrame(t[:])


class Tables(System):
    """PyTables with its Blosc2 filter (``complib='blosc2:...'``)."""

    key = "tables"
    label = "PyTables+Blosc2"
    modules = ("tables",)
    pip = "tables"
    suffix = ".h5"
    WORKLOADS = ARRAY_OPS | TABLE_OPS
    thread_knob = True
    notes = {"sum": "blockwise reads + np.sum", "ct-build": "Table",
             "ct-query": "Table.read_where (in-kernel, numexpr)",
             "ct-todf": "pandas.DataFrame(Table.read())"}

    def _setup(self) -> None:
        tb = self.tb = self.mods["tables"]
        if self.variant == "same":
            self.filt = tb.Filters(complevel=CLEVEL, complib=f"blosc2:{CODEC}", shuffle=True)
        else:
            self.filt = tb.Filters(complevel=5, complib="blosc2")
        self._default_threads = tb.parameters.MAX_BLOSC_THREADS

    def settings(self) -> str:
        if self.variant == "same":
            return "Blosc2 filter lz4 clevel 5 shuffle, 1 MiB chunks"
        return "Filters(complevel=5, complib='blosc2') (blosclz shuffle), automatic chunkshape"

    def set_threads(self, n):
        self.tb.set_blosc_max_threads(self._default_threads if n is None else n)

    def chunkshape(self, itemsize, n=None):
        return (self.chunklen(itemsize, n),) if self.variant == "same" else None

    def build_mem(self, a):
        # An in-memory file (core driver, no backing store); closing frees it.
        with self.tb.open_file(_memname(), "w", driver="H5FD_CORE",
                               driver_core_backing_store=0) as f:
            f.create_carray("/", "x", obj=a, filters=self.filt,
                            chunkshape=self.chunkshape(a.itemsize, len(a)))

    def build_disk(self, a, path):
        with self.tb.open_file(path, "w") as f:
            f.create_carray("/", "x", obj=a, filters=self.filt,
                            chunkshape=self.chunkshape(a.itemsize, len(a)))

    def append(self, a, batch, path):
        with self.tb.open_file(path, "w") as f:
            ea = f.create_earray("/", "x", atom=self.tb.Atom.from_dtype(a.dtype), shape=(0,),
                                 filters=self.filt, expectedrows=len(a),
                                 chunkshape=self.chunkshape(a.itemsize, len(a)))
            for i in range(0, len(a), batch):
                ea.append(a[i:i + batch])

    def open(self, path):
        return self.tb.open_file(path, "r").root.x

    def close(self, h):
        h._v_file.close()

    def length(self, h):
        return h.nrows

    def sum(self, h):
        blen = max(h.chunkshape[0], (8 << 20) // h.dtype.itemsize)

        def read_into(i, j, out):
            h.read(i, j, out=out)
        return blockwise_sum(h.nrows, h.dtype, read_into, blen)

    def ct_build(self, cols, path):
        st = structured(cols)
        rows = self.chunklen(st.dtype.itemsize, len(st))
        with self.tb.open_file(path, "w") as f:
            f.create_table("/", "t", obj=st, filters=self.filt, expectedrows=len(st),
                           chunkshape=(rows,) if self.variant == "same" else None)

    def ct_open(self, path):
        return self.tb.open_file(path, "r").root.t

    def ct_query(self, t, expr):
        return t.read_where(expr)

    def ct_todf(self, t):
        import pandas as pd
        return pd.DataFrame(t.read())


# ---------------------------------------------------------------------- Blosc2


def _blosc2_cparams(blosc2, nthreads: int | None, typesize: int):
    cp = {"codec": blosc2.Codec.LZ4, "clevel": CLEVEL, "filters": [blosc2.Filter.SHUFFLE],
          "typesize": typesize}
    if nthreads:
        cp["nthreads"] = nthreads
    return blosc2.CParams(**cp)


class Blosc2Base(System):
    modules = ("blosc2",)
    pip = "blosc2"
    thread_knob = True

    def _setup(self) -> None:
        self.b2 = self.mods["blosc2"]
        self._default_threads = self.b2.nthreads

    def set_threads(self, n):
        self.b2.set_nthreads(self._default_threads if n is None else n)

    def cparams(self, itemsize):
        if self.variant == "default":
            return None
        return _blosc2_cparams(self.b2, self.nthreads, itemsize)

    def dparams(self):
        if self.variant == "default":
            return None
        return self.b2.DParams(nthreads=self.nthreads)


class SChunk(Blosc2Base):
    """python-blosc2 ``SChunk`` (a contiguous ``.b2frame`` on disk)."""

    key = "schunk"
    label = "blosc2 SChunk"
    suffix = ".b2frame"
    WORKLOADS = ARRAY_OPS
    notes = {"sum": "chunk by chunk get_slice + np.sum",
             "getitem": "schunk[i] (8 bytes) + np.frombuffer"}

    def settings(self) -> str:
        if self.variant == "same":
            return "lz4 clevel 5 shuffle, 1 MiB chunks"
        return "its defaults (zstd clevel 5 shuffle), chunksize = the data"

    def kw(self, a):
        cp = self.cparams(a.itemsize)
        kw = {"chunksize": self.chunklen(a.itemsize) * a.itemsize} if self.variant == "same" \
            else {}
        if cp is not None:
            kw["cparams"] = cp
            kw["dparams"] = self.dparams()
        else:  # the defaults, but items of the data's size (a frame is typeless)
            kw["cparams"] = self.b2.CParams(typesize=a.itemsize)
        return kw

    def _tag(self, s, dtype):
        s.vlmeta["dtype"] = np.dtype(dtype).str

    def build_mem(self, a):
        s = self.b2.SChunk(data=a, **self.kw(a))
        self._tag(s, a.dtype)
        return s

    def build_disk(self, a, path):
        s = self.b2.SChunk(data=a, urlpath=path, contiguous=True, mode="w", **self.kw(a))
        self._tag(s, a.dtype)
        del s

    def append(self, a, batch, path):
        kw = self.kw(a)
        kw["chunksize"] = batch * a.itemsize
        s = self.b2.SChunk(urlpath=path, contiguous=True, mode="w", **kw)
        self._tag(s, a.dtype)
        for i in range(0, len(a), batch):
            s.append_data(a[i:i + batch])
        del s

    def open(self, path):
        kw = {} if self.variant == "default" else {"dparams": self.dparams()}
        s = self.b2.open(path, mode="r", **kw)
        s._bench_dtype = np.dtype(s.vlmeta["dtype"])
        return s

    def length(self, h):
        return h.nbytes // h.typesize

    def read(self, h):
        out = np.empty(self.length(h), dtype=h._bench_dtype)
        h.get_slice(out=out)
        return out

    def slice(self, h, i, j):
        out = np.empty(j - i, dtype=h._bench_dtype)
        h.get_slice(i, j, out=out)
        return out

    def item(self, h, i):
        return np.frombuffer(h[i], dtype=h._bench_dtype)[0]

    def sum(self, h):
        per_chunk = h.chunksize // h.typesize

        def read_into(i, j, out):
            h.get_slice(i, j, out=out)
        return blockwise_sum(self.length(h), h._bench_dtype, read_into, per_chunk)


class B2nd(Blosc2Base):
    """python-blosc2 ``NDArray`` (``.b2nd``) and, for tables, ``CTable``."""

    key = "b2nd"
    label = "blosc2 NDArray"
    suffix = ".b2nd"
    WORKLOADS = ARRAY_OPS | TABLE_OPS
    notes = {"sum": "NDArray.sum()", "ct-build": "blosc2.CTable (from a structured array)",
             "ct-query": "CTable.where(expr), then np.asarray",
             "ct-todf": "CTable.to_pandas()"}

    @classmethod
    def available(cls):
        ok, why = super().available()
        if ok and not hasattr(importlib.import_module("blosc2"), "NDArray"):
            return False, "blosc2 has no NDArray (too old)"
        return ok, why

    def supports(self, workload: str) -> bool:
        if workload in TABLE_OPS and not hasattr(self.b2, "CTable"):
            return False  # CTable came with python-blosc2 4
        return super().supports(workload)

    def settings(self) -> str:
        if self.variant == "same":
            return "lz4 clevel 5 shuffle, 1 MiB chunks, automatic blocks"
        return "its defaults (zstd clevel 5 shuffle, automatic chunks and blocks)"

    def kw(self, a, n=None):
        kw = {}
        if self.variant == "same":
            kw["chunks"] = (self.chunklen(a.itemsize, len(a)),)
            kw["cparams"] = self.cparams(a.itemsize)
            kw["dparams"] = self.dparams()
        return kw

    def build_mem(self, a):
        return self.b2.asarray(a, **self.kw(a))

    def build_disk(self, a, path):
        nd = self.b2.asarray(a, urlpath=path, mode="w", **self.kw(a))
        del nd

    def append(self, a, batch, path):
        kw = self.kw(a)
        if self.variant == "default":
            # An empty array's automatic chunks are empty: take the ones blosc2
            # picks for the final size, as a user appending would have to.
            kw["chunks"] = self.b2.compute_chunks_blocks((len(a),), dtype=a.dtype)[0]
        nd = self.b2.empty((0,), dtype=a.dtype, urlpath=path, mode="w", **kw)
        for i in range(0, len(a), batch):
            nd.append(a[i:i + batch])
        del nd

    def open(self, path):
        kw = {} if self.variant == "default" else {"dparams": self.dparams()}
        return self.b2.open(path, mode="r", **kw)

    def length(self, h):
        return h.shape[0]

    def sum(self, h):
        return h.sum()

    def _row(self, cols):
        import dataclasses
        b2 = self.b2
        spec = {"i8": b2.int64, "f8": b2.float64, "i4": b2.int32}
        fields = []
        for k, v in cols.items():
            make = spec.get(v.dtype.str[1:])
            if make is None:
                raise NotImplementedError(f"no blosc2 schema type for {v.dtype}")
            fields.append((k, int if v.dtype.kind == "i" else float, b2.field(make())))
        return dataclasses.make_dataclass("BenchRow", fields)

    def ct_build(self, cols, path):
        kw = {}
        if self.variant == "same":
            kw["cparams"] = {"codec": self.b2.Codec.LZ4, "clevel": CLEVEL,
                             "filters": [self.b2.Filter.SHUFFLE], "nthreads": self.nthreads}
        t = self.b2.CTable(self._row(cols), structured(cols), urlpath=path, mode="w", **kw)
        t.close()

    def ct_open(self, path):
        return self.b2.CTable.open(path, mode="r")

    def close(self, h):
        if isinstance(h, self.b2.CTable):
            h.close()

    def ct_query(self, t, expr):
        return np.asarray(t.where(expr))

    def ct_todf(self, t):
        return t.to_pandas()


# ------------------------------------------------------------------------ Zarr


class Zarr(System):
    """Zarr v3 arrays on a local store, one file per chunk."""

    key = "zarr"
    label = "Zarr v3"
    modules = ("zarr",)
    pip = "'zarr>=3'"
    suffix = ".zarr"
    WORKLOADS = ARRAY_OPS
    thread_knob = True
    sharded = False
    notes = {"sum": "blockwise reads (one shard or 8 chunks) + np.sum",
             "codec": "zarr's BloscCodec runs C-Blosc 1.x (numcodecs)",
             "threads": "numcodecs.blosc.set_nthreads; zarr's own I/O concurrency unchanged"}

    @classmethod
    def available(cls):
        ok, why = super().available()
        if ok:
            zarr = importlib.import_module("zarr")
            if int(zarr.__version__.split(".")[0]) < 3:
                return False, f"zarr {zarr.__version__} is not v3"
        return ok, why

    def _setup(self) -> None:
        self.zarr = self.mods["zarr"]
        try:
            from numcodecs import blosc as nblosc
        except ImportError:  # pragma: no cover
            nblosc = None
        self.nblosc = nblosc
        self._default_threads = nblosc.get_nthreads() if nblosc is not None else None

    def settings(self) -> str:
        shard = ", sharded (64 chunks a shard)" if self.sharded else ""
        if self.variant == "same":
            return f"BloscCodec lz4 clevel 5 shuffle, 1 MiB chunks{shard}"
        shard = ", shards='auto'" if self.sharded else ""
        return f"its defaults (zstd level 0, automatic chunks{shard})"

    def set_threads(self, n):
        if self.nblosc is not None:
            self.nblosc.set_nthreads(self._default_threads if n is None else n)

    def create(self, store, n, dtype, final_n=None):
        dtype = np.dtype(dtype)
        kw = {}
        if self.variant == "same":
            cl = self.chunklen(dtype.itemsize)
            kw["chunks"] = (cl,)
            kw["compressors"] = self.zarr.codecs.BloscCodec(
                cname=CODEC, clevel=CLEVEL, shuffle="shuffle", typesize=dtype.itemsize)
            if self.sharded:
                kw["shards"] = (cl * 64,)
        else:
            if n == 0:  # automatic chunks of an empty array are useless: size for the final
                kw["chunks"] = self.zarr.create_array(
                    store=self.zarr.storage.MemoryStore(), shape=(final_n,),
                    dtype=dtype).chunks
            if self.sharded:
                kw["shards"] = "auto"
        return self.zarr.create_array(store=store, shape=(n,), dtype=dtype, overwrite=True,
                                      **kw)

    def build_mem(self, a):
        z = self.create(self.zarr.storage.MemoryStore(), len(a), a.dtype)
        z[:] = a
        return z

    def build_disk(self, a, path):
        z = self.create(path, len(a), a.dtype)
        z[:] = a

    def append(self, a, batch, path):
        z = self.create(path, 0, a.dtype, final_n=len(a))
        for i in range(0, len(a), batch):
            z.append(a[i:i + batch])

    def open(self, path):
        return self.zarr.open_array(path, mode="r")

    def length(self, h):
        return h.shape[0]

    def sum(self, h):
        unit = (h.shards or h.chunks)[0] if self.sharded else h.chunks[0] * 8
        blen = max(unit, (8 << 20) // h.dtype.itemsize // unit * unit)

        def read_into(i, j, out):
            out[:] = h[i:j]
        return blockwise_sum(h.shape[0], h.dtype, read_into, blen)


class ZarrSharded(Zarr):
    """Zarr v3 with the sharding codec (many chunks per file)."""

    key = "zarr-shard"
    label = "Zarr v3 sharded"
    sharded = True


#: Every system, in the order of the report columns.
SYSTEMS = {cls.key: cls for cls in (Bcolzx, NumpyMemory, Npy, Pandas, H5py, Tables, SChunk,
                                    B2nd, Zarr, ZarrSharded, Bcolz)}

#: Aliases accepted by ``--systems``.
ALIASES = {"blosc2": ("schunk", "b2nd"), "hdf5": ("h5py", "tables"),
           "pytables": ("tables",), "legacy": ("bcolz",), "zarr3": ("zarr", "zarr-shard"),
           "anchors": tuple(k for k in SYSTEMS if k != "bcolzx"), "all": tuple(SYSTEMS)}
