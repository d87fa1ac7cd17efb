"""The chunked, compressed anchors of the benchmark: HDF5 (h5py, PyTables), Blosc2, Zarr.

Adapters of :class:`bcolzx.bench.adapter.System`, registered in
:data:`bcolzx.bench.systems.SYSTEMS`; each imports its library when it is
set up (a missing library makes the system skipped, never an error).
"""

from __future__ import annotations

import importlib
import itertools
import os
from contextlib import contextmanager

import numpy as np

from bcolzx.bench.adapter import ARRAY_OPS, CLEVEL, CODEC, TABLE_OPS, System, blockwise_sum
from bcolzx.bench.data import query_mask, structured

_MEMFILES = itertools.count()


def _memname() -> str:
    """A unique name for an in-memory HDF5 file (never created on disk)."""
    return f"bcolzx-bench-mem-{os.getpid()}-{next(_MEMFILES)}.h5"


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
