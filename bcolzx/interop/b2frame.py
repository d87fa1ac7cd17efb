"""Copy carrays to and from Blosc2 contiguous frames (``.b2frame`` files).

A Blosc2 contiguous frame is the single-file format of C-Blosc2 and
python-blosc2: a super-chunk (a sequence of C-Blosc2 chunks) with its
metalayers and variable-length metadata.  bcolzx chunks already *are*
C-Blosc2 chunks, so :func:`to_b2frame` copies them into the frame as they
are stored, and :func:`from_b2frame` stores a frame's chunks as they are,
without decompressing and compressing them again, whenever the geometry
allows it (see below).  python-blosc2 is imported only when one of them is
called (``pip install 'bcolzx[blosc2]'``).

Writing
-------
With ``layout='auto'`` (the default) the frame is a python-blosc2
**NDArray** (``blosc2.open(path)`` returns a :class:`blosc2.NDArray` of the
carray's dtype and shape) whenever the chunks fit the NDArray's
chunk-and-block geometry: an NDArray chunk is ``chunklen`` rows, cut in
blocks of whole rows, all chunks with the same block size.  bcolzx chunks
have that geometry when the C-Blosc2 block size (``cparams.blocksize``,
32 KiB by default) is a multiple of the row size that divides the chunk:
always for 1-D arrays of 1, 2, 4 or 8-byte items and the default chunk
lengths.  The stored chunks then go into the frame unchanged, including
special (constant) chunks, which become the frame's special chunks.  The
only chunk that is compressed is the last one when it is partial: an NDArray
pads its last chunk to full size (and a chunk with another block size than
the first, should there be one).  Otherwise (e.g. rows of 24 bytes) the
frame is a plain **SChunk** holding the stored chunks unchanged, with the
dtype and shape in its metadata (below); ``layout='ndarray'`` makes an
NDArray anyway, compressing again the chunks whose geometry does not fit,
and ``layout='schunk'`` always makes an SChunk.

Metadata
--------
The frame's variable-length metadata (``vlmeta``) key ``"bcolzx"`` holds
``{"version": 1, "dtype", "shape", "chunklen", "dflt", "cparams"}``
(dtype and dflt encoded as in ``meta/storage``), so that
:func:`from_b2frame` restores the carray exactly; each of the carray's
attrs becomes a ``vlmeta`` entry of its own, readable by python-blosc2
(``arr.vlmeta["unit"]``).  The attribute name ``bcolzx`` is reserved.

Reading
-------
:func:`from_b2frame` reads frames written by python-blosc2 or bcolzx:

* an **NDArray** of any dtype and shape (at least one dimension);
* an **SChunk**: with bcolzx's metadata, the dtype and shape are restored;
  otherwise pass ``dtype=`` (an SChunk records only its item size) and the
  carray is 1-D.

A frame chunk is stored as it is when it holds whole rows in C order (for
an NDArray: chunked and blocked along the first axis only, the chunk length
a multiple of the block length), its item size is the dtype's, its codec is
one bcolzx's C-Blosc2 decodes, the carray's ``chunklen`` is the frame's
chunk length and ``cparams`` has no ``quantize``.  Each such chunk is
decoded once (that checks it and feeds the zone map), and the carray's
store gives it a checksum as for any chunk.  Other chunks, the padded last
chunk of an NDArray, and every chunk when ``recompress=True``, are
decompressed (by python-blosc2) and compressed again with the carray's
cparams.  Special chunks become bcolzx's constant chunks; *uninitialized*
chunks (of an array made by ``blosc2.empty`` and never written) read as
zeros when they are whole chunks.  The frame's other ``vlmeta`` entries
become attrs (those JSON cannot hold are skipped with a warning).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from bcolzx._ext import codec
from bcolzx._format.meta import dflt_from_json, dflt_to_json, dtype_from_json, dtype_to_json
from bcolzx._format.superchunk import Special
from bcolzx.errors import BcolzxError, CorruptDataError, UnsupportedFormatError
from bcolzx.interop._common import (
    block_rows,
    check_attr_names,
    discard_on_error,
    finish,
    import_optional,
    json_attrs,
    new_carray,
    nrows_of,
    prod,
    refuse_objects,
    remove_quietly,
    reporter,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from bcolzx.carray import carray

__all__ = ["to_b2frame", "from_b2frame"]

#: The vlmeta key of bcolzx's metadata (and a reserved attribute name).
META_KEY = "bcolzx"
META_VERSION = 1
LAYOUTS = ("auto", "ndarray", "schunk")
MODES = ("w", "x")
#: Stored chunks read at once when exporting.
READ_BATCH = 16
#: C-Blosc2 special-chunk kinds, from byte 31 of an extended chunk header.
SPECIAL_UNINIT = 4
_CNAMES = ("blosclz", "lz4", "lz4hc", "zlib", "zstd")


def _import_blosc2():
    return import_optional("blosc2", "blosc2", "reading or writing Blosc2 frames")


def special_kind(chunk) -> int:
    """The special kind of a C-Blosc2 chunk: 0 none, 1 zeros, 2 NaN, 3 value, 4 uninit.

    Read from the chunk header (C-Blosc2's ``README_CHUNK_FORMAT``): an
    extended header has both shuffle flag bits of byte 2 set, and the kind in
    bits 4-6 of byte 31.
    """
    head = memoryview(chunk)
    if len(head) < 32 or head[2] & 0x05 != 0x05:
        return 0
    return (head[31] >> 4) & 0x07


# -- writing ---------------------------------------------------------------------------


def _chunks_of(ca: carray) -> Iterator[tuple[Any, np.ndarray | None]]:
    """``(entry, None)`` for each stored full chunk (its bytes or a Special),
    ``(None, rows)`` for chunks that must be encoded (the leftover, legacy chunks)."""
    eng = ca.engine
    cl = eng.chunklen
    if eng.store.native:
        for c0 in range(0, eng.nfull, READ_BATCH):
            c1 = min(eng.nfull, c0 + READ_BATCH)
            for c, entry in zip(range(c0, c1), eng.store.get(c0, c1)):
                if not isinstance(entry, Special):
                    nbytes = codec.chunk_sizes(entry)[0]
                    if nbytes != eng.chunk_bytes:
                        raise CorruptDataError(f"chunk decodes to {nbytes} bytes, expected "
                                               f"{eng.chunk_bytes}", path=ca.rootdir, chunk=c)
                yield entry, None
    else:  # legacy chunks are C-Blosc 1 chunks: encode them again
        for c in range(eng.nfull):
            yield None, eng.read(c * cl, (c + 1) * cl)
    if eng.nleft:
        yield None, eng.read(eng.nfull * cl, len(eng))


def _largest_block_rows(chunklen: int, rowbytes: int, target: int) -> int:
    """The largest divisor of `chunklen` whose rows fit in `target` bytes (at least 1)."""
    best = 1
    d = 1
    while d * d <= chunklen:
        if chunklen % d == 0:
            for rows in (d, chunklen // d):
                if rows * rowbytes <= target and rows > best:
                    best = rows
        d += 1
    return best


@dataclass
class _Writer:
    """How chunks become frame chunks: the geometry and the compressor for new ones."""

    ca: Any
    ndarray: bool
    blocksize: int       # bytes of a block in every chunk (NDArray), or the storage's
    typesize: int        # typesize in the headers of the chunks written here

    def __post_init__(self):
        eng = self.ca.engine
        cp = self.ca.cparams
        self.eng = eng
        self.comp = codec.Compressor(cp.cname, cp.clevel, cp.shuffle, self.typesize,
                                     self.blocksize, max(1, eng.nthreads))
        self.dec = codec.Decompressor(max(1, eng.nthreads))

    def fits(self, entry) -> bool:
        info = codec.chunk_info(entry)
        return not self.ndarray or (info["blocksize"] == self.blocksize
                                    and info["typesize"] == self.typesize)

    def encode(self, entry, rows: np.ndarray | None) -> bytes:
        eng = self.eng
        if isinstance(entry, Special):
            ts = eng.itemsize if eng.itemsize <= 255 else 1
            return codec.special_chunk(entry.kind, eng.chunk_bytes, ts, entry.value)
        if entry is not None:
            if self.fits(entry):
                return bytes(entry)
            rows = np.empty((eng.chunklen, *eng.rowshape), eng.dtype)
            self.dec.decompress(entry, rows)
        if self.ndarray and len(rows) < eng.chunklen:  # an NDArray pads its last chunk
            full = np.zeros((eng.chunklen, *eng.rowshape), eng.dtype)
            full[:len(rows)] = rows
            rows = full
        return self.comp.compress(np.ascontiguousarray(rows))


def _frame_cparams(blosc2, cp, typesize: int | None, blocksize: int) -> Any:
    filters = [blosc2.Filter.NOFILTER] * 6
    if cp.shuffle == codec.SHUFFLE:
        filters[-1] = blosc2.Filter.SHUFFLE
        if cp.bytedelta == "on":
            filters[-2:] = [blosc2.Filter.SHUFFLE, blosc2.Filter.BYTEDELTA]
    elif cp.shuffle == codec.BITSHUFFLE:
        filters[-1] = blosc2.Filter.BITSHUFFLE
    kw = {"codec": blosc2.Codec[cp.cname.upper()], "clevel": cp.clevel, "filters": filters,
          "blocksize": blocksize}
    if typesize is not None:
        kw["typesize"] = typesize
    return blosc2.CParams(**kw)


def _metadata(ca: carray) -> dict[str, Any]:
    cp = ca.cparams
    return {"version": META_VERSION, "dtype": dtype_to_json(ca.dtype), "shape": list(ca.shape),
            "chunklen": ca.chunklen, "dflt": dflt_to_json(np.asarray(ca.dflt)),
            "cparams": {"clevel": cp.clevel, "shuffle": cp.shuffle, "cname": cp.cname,
                        "quantize": cp.quantize, "blocksize": cp.blocksize,
                        "bytedelta": cp.bytedelta}}


def _plan(ca: carray, layout: str, chunks: Iterator) -> tuple[_Writer, Iterator]:
    """The writer for `layout`, and the chunks (the first ones were looked at)."""
    eng = ca.engine
    head, first = [], None
    for item in chunks:  # up to the first stored data chunk: it tells the block size
        head.append(item)
        if item[0] is not None and not isinstance(item[0], Special):
            first = codec.chunk_info(item[0])
            break
    chunks = itertools.chain(head, chunks)
    nd_typesize = eng.itemsize if eng.itemsize <= 255 else 1
    storage_bs = eng.store.storage.blocksize
    if layout == "schunk":
        return _Writer(ca, False, storage_bs, min(eng.itemsize, 255)), chunks
    fits = first is not None and first["blocksize"] % eng.rowbytes == 0 \
        and eng.chunk_bytes % first["blocksize"] == 0 and first["typesize"] == nd_typesize
    if first is not None and not fits and layout == "auto":
        return _Writer(ca, False, storage_bs, min(eng.itemsize, 255)), chunks
    if fits:
        blocksize = first["blocksize"]
    else:
        target = storage_bs or 32 << 10
        blocksize = _largest_block_rows(eng.chunklen, eng.rowbytes, target) * eng.rowbytes
    return _Writer(ca, True, blocksize, nd_typesize), chunks


def to_b2frame(ca: carray, path, layout: str = "auto", mode: str = "w", *,
               progress=None, storage_options: dict | None = None) -> None:
    """Write a carray to a Blosc2 contiguous frame, copying its chunks as they are.

    See the module docstring for the layouts and the metadata.  The frame is
    written under a temporary name beside `path` and renamed over it when
    complete, so `path` never holds half a frame.  At a URL of object
    storage, it is written to a local temporary directory, then uploaded as
    one object (docs/remote.md).

    Parameters
    ----------
    ca : carray
    path : str or os.PathLike
        The frame file (``.b2frame`` or ``.b2nd`` by convention), or its URL
        (``s3://bucket/a.b2frame``, ``gs://...``).
    layout : {'auto', 'ndarray', 'schunk'}
        'auto': an NDArray when the stored chunks fit its geometry, else an
        SChunk; 'ndarray': an NDArray, compressing again the chunks that do
        not fit; 'schunk': an SChunk.
    mode : {'w', 'x'}
        'w' replaces an existing file; 'x' refuses to.
    progress : callable, optional
        Called with the uncompressed bytes of each chunk written; the calls
        add up to ``ca.nbytes``.  A callback with a ``set_total`` method is
        first told that total.
    storage_options : dict, optional
        For a URL: the options of its fsspec filesystem (credentials,
        endpoint...).

    Raises
    ------
    ImportError
        If python-blosc2 is not installed.
    ValueError
        For a bad `layout` or `mode`, an attribute named ``bcolzx``, or
        `storage_options` with a local path.
    FileExistsError
        With ``mode='x'`` when `path` exists.
    CorruptDataError
        If a stored chunk is damaged.
    RemoteError
        If the object store fails (nothing is published at the URL).
    OSError
        If the file cannot be written.

    Examples
    --------
    >>> import os, tempfile, numpy as np, blosc2, bcolzx
    >>> ca = bcolzx.carray(np.arange(10.0), chunklen=4)
    >>> path = os.path.join(tempfile.mkdtemp(), "a.b2frame")
    >>> ca.to_b2frame(path)
    >>> arr = blosc2.open(path)
    >>> type(arr).__name__, arr.dtype, arr.shape, arr.chunks
    ('NDArray', dtype('float64'), (10,), (4,))
    >>> bcolzx.from_b2frame(path)[:]
    array([0., 1., 2., 3., 4., 5., 6., 7., 8., 9.])
    """
    from bcolzx._publish import export_place

    refuse_objects(ca, "a Blosc2 frame")
    blosc2 = _import_blosc2()
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    path = export_place(path, storage_options, mode,
                        lambda local: to_b2frame(ca, local, layout, progress=progress),
                        what="Blosc2 frame", suffix=".b2frame")
    if path is None:
        return
    if mode == "x" and os.path.lexists(path):
        raise FileExistsError(f"{path} exists (mode 'x')")
    attrs = ca.attrs.getall()
    check_attr_names(attrs, META_KEY, "Blosc2 frames")
    ca._sync_threads()
    eng = ca.engine
    writer, chunks = _plan(ca, layout, _chunks_of(ca))
    report = reporter(progress, ca.nbytes)
    tmp = f"{path}.{os.getpid()}.tmp"
    remove_quietly(tmp)
    try:
        if writer.ndarray:
            arr = blosc2.uninit(ca.shape, dtype=ca.dtype, chunks=(eng.chunklen, *eng.rowshape),
                                blocks=(writer.blocksize // eng.rowbytes, *eng.rowshape),
                                urlpath=tmp, contiguous=True, mode="w",
                                cparams=_frame_cparams(blosc2, ca.cparams, None,
                                                       writer.blocksize))
            schunk = arr.schunk
            for i, (entry, rows) in enumerate(chunks):
                schunk.update_chunk(i, writer.encode(entry, rows))
                report(eng.chunk_bytes if rows is None else rows.nbytes)
        else:
            cparams = _frame_cparams(blosc2, ca.cparams, writer.typesize, writer.blocksize)
            arr = schunk = blosc2.SChunk(chunksize=eng.chunk_bytes, urlpath=tmp,
                                         contiguous=True, mode="w", cparams=cparams)
            for entry, rows in chunks:
                schunk.append_chunk(writer.encode(entry, rows))
                report(eng.chunk_bytes if rows is None else rows.nbytes)
        schunk.vlmeta[META_KEY] = _metadata(ca)
        for name, value in attrs.items():
            schunk.vlmeta[name] = value
        del schunk, arr  # python-blosc2 has written everything
        os.replace(tmp, path)
    except BaseException:
        remove_quietly(tmp)
        raise


# -- reading ---------------------------------------------------------------------------


@dataclass
class _Frame:
    """What was found in a frame, and how to read it."""

    schunk: Any
    dtype: np.dtype
    rowshape: tuple
    nrows: int
    chunk_rows: int | None   # rows per frame chunk when chunks are whole rows in order
    chunk: Callable[[int], np.ndarray]   # the rows of chunk i (with chunk_rows), by python-blosc2
    blocks: Callable[[], Iterator[np.ndarray]]   # every row, in blocks, by python-blosc2
    meta: dict[str, Any] | None
    blocksize: int


def _our_metadata(schunk, path: str) -> dict[str, Any] | None:
    if META_KEY not in schunk.vlmeta:
        return None
    meta = schunk.vlmeta[META_KEY]
    if not isinstance(meta, dict) or not isinstance(meta.get("version"), int):
        raise CorruptDataError(f"vlmeta[{META_KEY!r}] is not bcolzx metadata", path=path)
    if meta["version"] > META_VERSION:
        raise UnsupportedFormatError(f"{path}: bcolzx frame metadata version "
                                     f"{meta['version']} is newer than this bcolzx knows")
    try:
        dtype = dtype_from_json(meta["dtype"], path)
        shape = [int(x) for x in meta["shape"]]
        meta = {**meta, "dtype": dtype, "shape": shape, "chunklen": int(meta["chunklen"]),
                "dflt": dflt_from_json(meta.get("dflt", 0), dtype, path)}
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptDataError(f"vlmeta[{META_KEY!r}] is malformed: {exc}", path=path) from None
    if not shape or shape[0] < 0 or meta["chunklen"] < 1:
        raise CorruptDataError(f"vlmeta[{META_KEY!r}] has shape {shape} and chunklen "
                               f"{meta['chunklen']}", path=path)
    return meta


def _ndarray_frame(arr, path: str, dtype) -> _Frame:
    if arr.ndim == 0:
        raise ValueError(f"{path} holds a 0-d NDArray; a carray has at least one dimension")
    if dtype is not None and np.dtype(dtype) != arr.dtype:
        raise ValueError(f"{path} holds an NDArray of dtype {arr.dtype}, not {np.dtype(dtype)}")
    shape, chunks, blocks = tuple(arr.shape), tuple(arr.chunks), tuple(arr.blocks)
    in_order = chunks[1:] == shape[1:] and blocks[1:] == shape[1:] \
        and chunks[0] % blocks[0] == 0
    rowbytes = arr.dtype.itemsize * prod(shape[1:])
    cl = chunks[0]

    def blocks_of() -> Iterator[np.ndarray]:
        blen = block_rows(rowbytes, cl if in_order else 1)
        for lo in range(0, shape[0], blen):
            yield arr[lo:min(shape[0], lo + blen)]

    return _Frame(arr.schunk, arr.dtype, shape[1:], shape[0], cl if in_order else None,
                  lambda i: arr[i * cl:min(shape[0], (i + 1) * cl)], blocks_of,
                  _our_metadata(arr.schunk, path), blocks[0] * rowbytes if in_order else 0)


def _schunk_frame(schunk, path: str, dtype) -> _Frame:
    meta = _our_metadata(schunk, path)
    if meta is not None:
        if dtype is not None and np.dtype(dtype) != meta["dtype"]:
            raise ValueError(f"{path} holds {meta['dtype']} data, not {np.dtype(dtype)}")
        dtype, rowshape = meta["dtype"], tuple(meta["shape"][1:])
    elif dtype is None:
        raise ValueError(f"{path} is a Blosc2 SChunk of items of {schunk.typesize} bytes "
                         "without a recorded dtype: pass dtype=")
    else:
        dtype, rowshape = np.dtype(dtype), ()
    rowbytes = dtype.itemsize * prod(rowshape)
    nrows = nrows_of(schunk.nbytes, rowbytes, path)
    if meta is not None and meta["shape"][0] != nrows:
        raise CorruptDataError(f"the frame holds {nrows} rows, its metadata says "
                               f"{meta['shape'][0]}", path=path)
    chunksize = int(schunk.chunksize)
    in_order = chunksize > 0 and chunksize % rowbytes == 0

    def data(i: int) -> bytes:
        if special_kind(schunk.get_chunk(i)) == SPECIAL_UNINIT:
            return bytes(codec.chunk_sizes(schunk.get_chunk(i))[0])
        return schunk.decompress_chunk(i)

    def chunk(i: int) -> np.ndarray:
        return np.frombuffer(data(i), dtype=dtype).reshape((-1, *rowshape))

    def blocks_of() -> Iterator[np.ndarray]:
        carry = b""
        for i in range(schunk.nchunks):
            buf = carry + data(i) if carry else data(i)
            whole = len(buf) - len(buf) % rowbytes
            carry = buf[whole:]
            if whole:
                yield np.frombuffer(buf, dtype=dtype, count=whole // dtype.itemsize).reshape(
                    (-1, *rowshape))

    return _Frame(schunk, dtype, rowshape, nrows, chunksize // rowbytes if in_order else None,
                  chunk, blocks_of, meta, int(schunk.cparams.blocksize))


def _cparams_of(blosc2, frame: _Frame) -> dict[str, Any]:
    """The cparams a frame was compressed with, as bcolzx cparams keywords."""
    if frame.meta is not None and isinstance(frame.meta.get("cparams"), dict):
        return dict(frame.meta["cparams"])
    cp = frame.schunk.cparams
    out: dict[str, Any] = {"clevel": int(cp.clevel)}
    name = cp.codec.name.lower() if hasattr(cp.codec, "name") else str(cp.codec)
    if name in _CNAMES and name in codec.compressor_list():
        out["cname"] = name
    filters = list(cp.filters)
    out["shuffle"] = codec.BITSHUFFLE if blosc2.Filter.BITSHUFFLE in filters else \
        codec.SHUFFLE if blosc2.Filter.SHUFFLE in filters else codec.NOSHUFFLE
    if blosc2.Filter.BYTEDELTA in filters and out["shuffle"] == codec.SHUFFLE:
        out["bytedelta"] = "on"
    if frame.blocksize > 0:
        out["blocksize"] = int(frame.blocksize)
    return out


def _take_chunks(ca: carray, frame: _Frame, path: str, report: Callable[[int], Any]) -> None:
    """Store the frame's chunks as they are where they fit, else their rows."""
    eng = ca.engine
    cl, rowbytes = eng.chunklen, eng.rowbytes
    typesize = eng.itemsize if eng.itemsize <= 255 else None
    dec = codec.Decompressor(max(1, eng.nthreads))
    buf = np.empty((cl, *eng.rowshape), eng.dtype)
    for i in range(frame.schunk.nchunks):
        nrows = min(cl, frame.nrows - i * cl)
        if nrows <= 0:
            break
        rows = buf[:nrows]
        chunk = frame.schunk.get_chunk(i)
        kind = special_kind(chunk)
        take = False
        if kind == SPECIAL_UNINIT:
            rows[...] = 0
        else:
            nbytes = codec.chunk_sizes(chunk)[0]
            if nbytes not in (nrows * rowbytes, cl * rowbytes):
                raise CorruptDataError(f"frame chunk decodes to {nbytes} bytes, expected "
                                       f"{nrows * rowbytes}", path=path, chunk=i)
            try:  # our C-Blosc2 checks the chunk (it may use a codec only python-blosc2 has)
                dec.decompress(chunk, buf if nbytes == cl * rowbytes else rows)
                take = not kind and nbytes == nrows * rowbytes and (
                    typesize is None or codec.chunk_info(chunk)["typesize"] == typesize)
            except BcolzxError:
                try:
                    rows[...] = frame.chunk(i)[:nrows]
                except (RuntimeError, ValueError) as exc:
                    raise CorruptDataError(f"frame chunk cannot be decoded: {exc}", path=path,
                                           chunk=i) from None
        if take:
            eng.append_chunk(chunk, rows)
        else:
            ca.append(rows)
        report(rows.nbytes)


def _copy_rows(ca: carray, frame: _Frame, report: Callable[[int], Any]) -> None:
    for rows in frame.blocks():
        ca.append(rows)
        report(rows.nbytes)


def from_b2frame(path, rootdir=None, *, dtype=None, recompress: bool = False,
                 progress=None, **kwargs) -> carray:
    """Read a Blosc2 frame (an NDArray or an SChunk) into a new carray.

    Frame chunks are stored as they are whenever their geometry allows it
    (see the module docstring), so importing costs one decompression per
    chunk (a check) and no compression.

    Parameters
    ----------
    path : str or os.PathLike
        A frame file written by python-blosc2 or :func:`to_b2frame`.
    rootdir : str, optional
        Where to store the carray (default: in memory).
    dtype : numpy.dtype, optional
        The dtype of an SChunk that records none (required for those; for
        other frames, must match theirs).
    recompress : bool
        Decompress every chunk and compress it again with the carray's cparams.
    progress : callable, optional
        Called with the uncompressed bytes of each chunk (or block) stored;
        the calls add up to the carray's ``nbytes``.  A callback with a
        ``set_total`` method is first told that total.
    **kwargs
        For the :class:`~bcolzx.carray.carray` constructor: ``mode``,
        ``cparams``, ``chunklen``, ``dflt``, ``expectedlen``.  Defaults: those
        recorded by :func:`to_b2frame`, else the frame's codec, level,
        shuffle and chunk length; a ``cparams`` dict changes only the keys it
        names of those (a cparams replaces them).  A different ``chunklen``,
        or cparams with ``quantize``, means compressing again.

    Returns
    -------
    carray

    Raises
    ------
    ImportError
        If python-blosc2 is not installed.
    FileNotFoundError
        If `path` does not exist.
    UnsupportedFormatError
        If python-blosc2 cannot open `path`, or bcolzx's metadata in it is of
        a newer version.
    TypeError
        If the frame holds something else than an NDArray or an SChunk.
    ValueError
        For an SChunk without a recorded dtype and no `dtype`, a `dtype` that
        differs from the frame's, a 0-d NDArray, or data that is not a whole
        number of rows.
    CorruptDataError
        If a chunk cannot be decoded, or bcolzx's metadata is malformed.
    FileExistsError, ReadOnlyError
        As the carray constructor, for `rootdir` and ``mode``.

    Warns
    -----
    UserWarning
        For ``vlmeta`` entries that attrs (JSON) cannot hold; they are skipped.
    """
    blosc2 = _import_blosc2()
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no Blosc2 frame {path}")
    try:
        obj = blosc2.open(path, mode="r")
    except (RuntimeError, ValueError, TypeError, KeyError) as exc:
        raise UnsupportedFormatError(f"{path} is not a Blosc2 frame python-blosc2 opens: "
                                     f"{exc}") from None
    if isinstance(obj, blosc2.NDArray):
        frame = _ndarray_frame(obj, path, dtype)
    elif isinstance(obj, blosc2.SChunk):
        frame = _schunk_frame(obj, path, dtype)
    else:
        raise TypeError(f"{path} holds a {type(obj).__name__}; bcolzx reads NDArray and "
                        "SChunk frames")
    defaults: dict[str, Any] = {"cparams": _cparams_of(blosc2, frame),
                                "expectedlen": max(frame.nrows, 1)}
    if frame.meta is not None:
        defaults["chunklen"] = int(frame.meta["chunklen"])
        defaults["dflt"] = frame.meta["dflt"]
    elif frame.chunk_rows:
        defaults["chunklen"] = frame.chunk_rows
    ca = new_carray(frame.dtype, frame.rowshape, {**defaults, "rootdir": rootdir}, kwargs)
    raw = not recompress and frame.chunk_rows is not None \
        and ca.chunklen == frame.chunk_rows and not ca.cparams.quantize \
        and ca.engine.store.native
    report = reporter(progress, frame.nrows * ca.atomsize)
    with discard_on_error(ca):
        if raw:
            _take_chunks(ca, frame, path, report)
        else:
            _copy_rows(ca, frame, report)
        if len(ca) != frame.nrows:
            raise CorruptDataError(f"the frame's chunks hold {len(ca)} rows, its shape says "
                                   f"{frame.nrows}", path=path)
        vlmeta = frame.schunk.vlmeta
        for name, value in json_attrs(((k, vlmeta[k]) for k in vlmeta.keys()
                                       if k != META_KEY), path).items():
            ca.attrs[name] = value
        finish(ca)
    return ca
