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

The interface and the helpers are in :mod:`bcolzx.bench.adapter`; the HDF5,
Blosc2 and Zarr adapters in :mod:`bcolzx.bench.chunked`; here the others
(NumPy, ``.npy`` files, pandas, bcolzx and legacy bcolz) and the registry.
"""

from __future__ import annotations

import os

import numpy as np

from bcolzx.bench.adapter import ARRAY_OPS, CLEVEL, CODEC, TABLE_OPS, System
from bcolzx.bench.chunked import B2nd, H5py, SChunk, Tables, Zarr, ZarrSharded
from bcolzx.bench.data import query_mask, structured

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



SYSTEMS = {cls.key: cls for cls in (Bcolzx, NumpyMemory, Npy, Pandas, H5py, Tables, SChunk,
                                    B2nd, Zarr, ZarrSharded, Bcolz)}

#: Aliases accepted by ``--systems``.
ALIASES = {"blosc2": ("schunk", "b2nd"), "hdf5": ("h5py", "tables"),
           "pytables": ("tables",), "legacy": ("bcolz",), "zarr3": ("zarr", "zarr-shard"),
           "anchors": tuple(k for k in SYSTEMS if k != "bcolzx"), "all": tuple(SYSTEMS)}

