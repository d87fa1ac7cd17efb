"""``bcolzx demo``: compress, persist, reopen and read back built-in data.

The demo exercises the foundation end to end on a synthetic market-data
table (timestamps, prices, volumes): it compresses each column in chunks,
writes the chunks with a crc32c each to a directory, reopens it, verifies
every checksum, decompresses all chunks in parallel into one array and
checks the result against the original, printing sizes and timings.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from bcolzx._ext.checksum import crc32c
from bcolzx._ext.codec import SHUFFLE, Compressor, Decompressor, blosc2_version
from bcolzx.errors import ChecksumError

CHUNK_BYTES = 1 << 20


def builtin_dataset(nrows: int = 5_000_000, seed: int = 42) -> dict[str, np.ndarray]:
    """A deterministic, synthetic tick table.

    Parameters
    ----------
    nrows : int
        Number of rows.
    seed : int
        Seed of the random generator.

    Returns
    -------
    dict of str to numpy.ndarray
        ``timestamp`` (datetime64[s], one tick a second with gaps), ``price``
        (float64 random walk in cents) and ``volume`` (int32).

    Raises
    ------
    ValueError
        If `nrows` is negative.
    """
    if nrows < 0:
        raise ValueError(f"nrows must be >= 0, not {nrows}")
    rng = np.random.default_rng(seed)
    start = np.datetime64("2026-01-02T09:30:00", "s").astype(np.int64)
    gaps = rng.choice(np.array([1, 1, 1, 1, 2, 5], dtype=np.int64), size=nrows)
    timestamp = (start + np.cumsum(gaps)).astype("datetime64[s]")
    price = np.round(100.0 + np.cumsum(rng.normal(0.0, 0.02, size=nrows)), 2)
    volume = (rng.geometric(0.01, size=nrows) * 10).astype(np.int32)
    return {"timestamp": timestamp, "price": price, "volume": volume}


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def persist(name: str, arr: np.ndarray, rootdir: Path, comp: Compressor) -> dict:
    """Write one column as consecutive chunks, each with a crc32c, then its index."""
    rows = max(1, CHUNK_BYTES // arr.itemsize)
    chunks = [comp.compress(arr[i:i + rows]) for i in range(0, len(arr), rows)]
    blob = b"".join(chunks)
    index = {
        "dtype": arr.dtype.str,
        "shape": list(arr.shape),
        "sizes": [len(ch) for ch in chunks],
        "crc32c": [crc32c(ch) for ch in chunks],
    }
    _write_atomic(rootdir / f"{name}.chunks", blob)  # data first ...
    _write_atomic(rootdir / f"{name}.json", json.dumps(index).encode())  # ... index last
    return index


def reopen(name: str, rootdir: Path, dec: Decompressor) -> np.ndarray:
    """Read a column back: verify every checksum, decompress all chunks at once."""
    index = json.loads((rootdir / f"{name}.json").read_text())
    blob = memoryview((rootdir / f"{name}.chunks").read_bytes())
    views, pos = [], 0
    for n, (size, crc) in enumerate(zip(index["sizes"], index["crc32c"])):
        view = blob[pos:pos + size]
        if crc32c(view) != crc:
            raise ChecksumError("crc32c mismatch", path=str(rootdir / f"{name}.chunks"), chunk=n)
        views.append(view)
        pos += size
    out = np.empty(index["shape"], dtype=np.dtype(index["dtype"]))
    dec.decompress_many(views, out)
    return out


def run(nrows: int = 5_000_000, cname: str = "lz4", clevel: int = 5, nthreads: int = 2,
        rootdir: str | None = None, keep: bool = False, out=print) -> dict:
    """Run the demo and print a report.

    Parameters
    ----------
    nrows : int
        Rows of built-in data.
    cname, clevel : str, int
        Codec and level.
    nthreads : int
        Threads for decompression.
    rootdir : str, optional
        Where to write; a temporary directory by default.
    keep : bool
        Keep the directory afterwards.
    out : callable
        Receives each line of the report.

    Returns
    -------
    dict
        Per column: raw and compressed bytes and the timings in seconds.

    Raises
    ------
    ChecksumError
        If data read back does not match its checksum.
    AssertionError
        Never, unless data read back differs from what was written.
    """
    data = builtin_dataset(nrows)
    root = Path(rootdir) if rootdir else Path(tempfile.mkdtemp(prefix="bcolzx-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    dec = Decompressor(nthreads)
    out(f"bcolzx demo: {nrows:,} rows, codec {cname} level {clevel}, shuffle, "
        f"C-Blosc2 {blosc2_version()}, directory {root}")
    out(f"{'column':<10} {'dtype':<14} {'raw MB':>8} {'stored MB':>10} {'ratio':>7} "
        f"{'write MB/s':>11} {'read MB/s':>10}")
    report = {}
    try:
        for name, arr in data.items():
            comp = Compressor(cname, clevel, SHUFFLE, arr.itemsize)
            t0 = time.perf_counter()
            index = persist(name, arr, root, comp)
            t1 = time.perf_counter()
            back = reopen(name, root, dec)
            t2 = time.perf_counter()
            assert back.dtype == arr.dtype and np.array_equal(back, arr), f"{name} differs"
            stored = sum(index["sizes"])
            mb = arr.nbytes / 1e6
            out(f"{name:<10} {str(arr.dtype):<14} {mb:8.1f} {stored / 1e6:10.2f} "
                f"{arr.nbytes / max(stored, 1):7.1f} {mb / (t1 - t0):11.0f} {mb / (t2 - t1):10.0f}")
            report[name] = {"nbytes": arr.nbytes, "cbytes": stored,
                            "write_s": t1 - t0, "read_s": t2 - t1}
        raw = sum(r["nbytes"] for r in report.values())
        stored = sum(r["cbytes"] for r in report.values())
        out(f"total: {raw / 1e6:.1f} MB in {stored / 1e6:.2f} MB on disk "
            f"(ratio {raw / max(stored, 1):.1f}); every value read back verified")
    finally:
        if not keep and not rootdir:
            shutil.rmtree(root, ignore_errors=True)
    return report
