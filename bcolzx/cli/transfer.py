"""``bcolzx export`` and ``bcolzx import``: datasets to and from other formats.

Formats: NumPy ``.npy`` (streamed by :mod:`bcolzx.interop.npy`), Blosc2
frames, Zarr v3, HDF5 and Parquet (through the library functions
``carray.to_b2frame``/``bcolzx.from_b2frame``, ``carray.to_zarr``/
``bcolzx.from_zarr``, ``carray.tohdf5``/``ctable.tohdf5``/
``bcolzx.fromhdf5``, ``ctable.to_parquet``/``bcolzx.from_parquet``).  Each
format names the module of the :mod:`bcolzx.interop` registry that reads it
(and writes it, behind the carray and ctable methods), imported only when
the command runs.

Each of these takes ``progress=``: the commands hand it their progress bar,
which the exporters advance by the uncompressed bytes of each block written
(of ``nbytes`` in all) and the importers first tell the ``nbytes`` to come
(``set_total``), then advance by each block stored.

Both commands write under a hidden temporary name beside the destination
and rename it into place when complete, so that a failure or Ctrl-C never
leaves half a file or half a dataset at the destination; an existing
destination is refused unless ``--force`` (then it is replaced, in one
rename).  The one exception is exporting into an HDF5 file that exists:
the new node is added to it, in place, as HDF5 does.

``bcolzx export`` also reads a dataset from a URL and writes to one
(``s3://...``, ``gs://...``; ``--storage-options``), through the same
exporters given the URL and ``storage_options``: they write the export to
a local temporary directory (``$TMPDIR``), then upload it so that no reader
sees it half-written (:func:`bcolzx._publish.publish_export`: a file as one
object, a Zarr store with its metadata documents last).
"""

from __future__ import annotations

import argparse
import errno
import os
import secrets
import shutil
from dataclasses import dataclass
from typing import Callable

from bcolzx.cli.common import (
    EXIT_OK,
    add_cparams_options,
    add_quiet,
    add_storage_options,
    cparams_from,
    human,
    location_options,
    sizes_text,
    usage_error,
)
from bcolzx.cli.describe import describe, disk_usage, require_directory
from bcolzx.cli.progress import bar
from bcolzx.errors import UnsupportedFormatError
from bcolzx.interop import function as interop_function

__all__ = ["FORMATS", "register", "run_export", "run_import", "infer_format"]


@dataclass(frozen=True)
class Format:
    """One exchange format: its file extensions, whether it is a directory, the
    registered interop module (:data:`bcolzx.interop.FORMATS`) and its function that
    imports it, and the carray/ctable method that exports to it (for npy, which has
    no method: the module's ``to_npy``)."""

    name: str
    extensions: tuple[str, ...]
    is_directory: bool
    interop: str
    importer: str
    exporter: str


FORMATS = {f.name: f for f in (
    Format("npy", (".npy",), False, "npy", "from_npy", ""),
    Format("b2frame", (".b2frame", ".b2nd"), False, "b2frame", "from_b2frame", "to_b2frame"),
    Format("zarr", (".zarr",), True, "zarr", "from_zarr", "to_zarr"),
    Format("hdf5", (".h5", ".hdf5"), False, "h5py", "fromhdf5", "tohdf5"),
    Format("parquet", (".parquet",), False, "arrow", "from_parquet", "to_parquet"),
)}

EXPORT_HELP = "write a carray or ctable to .npy, Blosc2 frame, Zarr, HDF5 or Parquet"
IMPORT_HELP = "make a carray or ctable from .npy, Blosc2 frame, Zarr, HDF5 or Parquet"
FORMATS_TEXT = """\
formats (inferred from the file extension unless --format is given):
  npy      .npy              carray (any shape) or ctable (structured array)
  b2frame  .b2frame .b2nd    carray (a python-blosc2 NDArray or SChunk frame)
  zarr     .zarr             carray (Zarr v3 array) or ctable (group of arrays)
  hdf5     .h5 .hdf5         carray (dataset) or ctable (PyTables table) at --node
  parquet  .parquet          ctable
The optional packages: pip install 'bcolzx[blosc2]', 'bcolzx[zarr]',
'bcolzx[h5py]', 'bcolzx[arrow]' (npy needs only NumPy)."""


def infer_format(path: str) -> str | None:
    """The format named by the extension of `path`, or None."""
    lower = os.fspath(path).rstrip("/\\").lower()
    for f in FORMATS.values():
        if lower.endswith(f.extensions):
            return f.name
    return None


def _format_of(args: argparse.Namespace, path: str) -> Format:
    name = args.format or infer_format(path)
    if name is None:
        usage_error(args, f"cannot tell the format of {path!r} from its extension; give "
                          f"--format ({', '.join(FORMATS)})")
    return FORMATS[name]


def _importer(fmt: Format) -> Callable:
    """The registered function importing `fmt`, or a clear error if this bcolzx lacks it."""
    try:
        return interop_function(fmt.interop, fmt.importer)
    except KeyError:
        raise UnsupportedFormatError(f"this bcolzx cannot import {fmt.name} (no "
                                     f"{fmt.importer} registered for {fmt.interop})") from None


def _temporary(path: str, suffix: str) -> str:
    """A new hidden name beside `path` (nothing is created)."""
    parent, base = os.path.split(os.path.abspath(path))
    return os.path.join(parent, f".{base}.bcolzx-tmp-{secrets.token_hex(6)}{suffix}")


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.unlink(path)


def _install(tmp: str, dest: str, force: bool) -> None:
    """Rename the complete `tmp` to `dest`; with `force`, replacing what is there.

    Raises
    ------
    FileExistsError
        Without `force`, if `dest` exists.
    """
    from bcolzx.convert import _install_new, _swap_in

    if not (force and os.path.lexists(dest)):
        _install_new(tmp, dest)
    elif os.path.isdir(tmp) or os.path.isdir(dest):
        _remove(_swap_in(tmp, dest))  # one atomic exchange, then the old one goes
    else:
        os.replace(tmp, dest)
    from bcolzx._format.jsonfile import fsync_dir

    fsync_dir(os.path.dirname(os.path.abspath(dest)))


def _check_free(dest: str, force: bool) -> None:
    if os.path.lexists(dest) and not force:
        raise FileExistsError(errno.EEXIST, "the destination exists (--force replaces it)",
                              dest)


# -- export ---------------------------------------------------------------------------


def _export(obj, fmt: Format, path: str, node: str | None, advance, mode: str, src: str,
            storage_options: dict | None = None) -> None:
    """Write `obj` (a carray or ctable, from `src`) to `path` (a local path or a URL) in
    `fmt`, in `mode`, through the exporter a Python program calls (for a URL, that
    exporter writes locally and publishes: :func:`bcolzx._publish.publish_export`)."""
    if fmt.name == "npy":
        return interop_function("npy", "to_npy")(obj, path, mode=mode, progress=advance,
                                                 storage_options=storage_options)
    kind = type(obj).__name__
    fn = getattr(obj, fmt.exporter, None)
    if fn is None:
        raise UnsupportedFormatError(_cannot_hold(obj, fmt, src))
    if fmt.name == "hdf5":
        fn(path, node or f"/{kind}", mode=mode, progress=advance,
           storage_options=storage_options)
    else:
        fn(path, mode=mode, progress=advance, storage_options=storage_options)


def _cannot_hold(obj, fmt: Format, src: str) -> str:
    """What to do when `fmt` cannot hold `obj` (a carray or ctable): the formats that can."""
    kind = type(obj).__name__
    others = [f"{f.name} ({f.extensions[0]})" for f in FORMATS.values()
              if f is not fmt and (f.name == "npy" or hasattr(obj, f.exporter))]
    where = " or ".join([", ".join(others[:-1]), others[-1]] if len(others) > 1 else others)
    text = f"{fmt.name} cannot hold a {kind}: export it to {where} instead"
    if kind == "ctable":
        text += (f", or one of its columns to {fmt.name} with --column NAME (its columns: "
                 f"{', '.join(obj.names)})")
    elif fmt.name == "parquet":
        name = os.path.basename(os.path.normpath(src)) or "values"
        text += (f"; Parquet holds tables, and in Python bcolzx.ctable([bcolzx.open("
                 f"{src!r})], names=[{name!r}]).to_parquet(...) writes it as one column")
    return text


def run_export(args: argparse.Namespace) -> int:
    """Run ``bcolzx export``."""
    from bcolzx._storage.objects import is_url
    from bcolzx.toplevel import open as _open

    fmt = _format_of(args, args.dest)
    if args.node is not None and fmt.name != "hdf5":
        usage_error(args, "--node is for the hdf5 format")
    src_options = location_options(args.src, args)
    if not is_url(args.src):
        require_directory(args.src)
    obj = _open(args.src, mode="r", storage_options=src_options)
    if args.column is not None:
        names = getattr(obj, "names", None)
        if names is None or args.column not in names:
            raise ValueError(f"{args.src} has no column {args.column!r}" +
                             (f"; its columns: {', '.join(names)}" if names else
                              " (it is a carray)"))
        obj = obj.cols[args.column]
    if is_url(args.dest) and not args.dest.startswith("file://"):
        return _export_to_url(args, obj, fmt)
    if args.dest.startswith("file://"):
        args.dest = args.dest[len("file://"):]
    # Into an existing HDF5 file the node is added in place; everything else is
    # written beside the destination and renamed into place.
    append = fmt.name == "hdf5" and os.path.isfile(args.dest) and not args.force
    if not append:
        _check_free(args.dest, args.force)
    target = args.dest if append else _temporary(args.dest, fmt.extensions[0])
    try:
        with bar(obj.nbytes, f"export {fmt.name}", quiet=args.quiet) as advance:
            _export(obj, fmt, target, args.node, advance, "a" if append else "w", args.src)
        if not append:
            _install(target, args.dest, args.force)
    except BaseException:
        if not append:
            _remove(target)
        raise
    _files, size = disk_usage(args.dest)
    print(f"{args.src} -> {args.dest} ({fmt.name}): {len(obj):,} rows, "
          f"{human(size, exact=False)} on disk")
    return EXIT_OK


def _export_to_url(args: argparse.Namespace, obj, fmt: Format) -> int:
    """``bcolzx export SRC URL``: the exporter publishes it (written locally, then
    uploaded); without ``--force`` an existing file is not replaced, nor, for HDF5,
    added to (objects do not change in place)."""
    from bcolzx._storage.objects import resolve

    options = args.storage_options
    mode = "w" if args.force else ("a" if fmt.name == "hdf5" else "x")
    with bar(obj.nbytes, f"export {fmt.name}", quiet=args.quiet) as advance:
        _export(obj, fmt, args.dest, args.node, advance, mode, args.src, options)
    files, size = resolve(args.dest, options).usage()
    print(f"{args.src} -> {args.dest} ({fmt.name}): {len(obj):,} rows, "
          f"{human(size, exact=False)} uploaded in {files:,} object{'s' * (files != 1)}")
    return EXIT_OK


# -- import ---------------------------------------------------------------------------


def _import(fmt: Format, src: str, rootdir: str, node: str | None, kwargs: dict,
            advance) -> None:
    """Make the dataset at `rootdir` (an empty directory) from `src` in `fmt`; the
    importer tells `advance` the bytes to come and advances it block by block."""
    kwargs = {"rootdir": rootdir, "mode": "w", "progress": advance, **kwargs}
    if fmt.name == "hdf5":
        _importer(fmt)(src, node or _only_hdf5_dataset(src), **kwargs)
    else:
        _importer(fmt)(src, **kwargs)


def _only_hdf5_dataset(path: str) -> str:
    """The path of the one dataset (or table) in an HDF5 file.

    Raises
    ------
    ValueError
        If the file holds none or several (then --node must say which).
    """
    try:
        import h5py
    except ImportError:
        raise ImportError("reading HDF5 files needs h5py: pip install 'bcolzx[h5py]'") from None
    found: list[str] = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, node: found.append("/" + name)
                     if isinstance(node, h5py.Dataset) else None)
    if len(found) != 1:
        listed = ", ".join(found[:10]) + (" ..." if len(found) > 10 else "")
        raise ValueError(f"{path} holds {len(found)} datasets ({listed or 'none'}): say which "
                         "one with --node")
    return found[0]


def run_import(args: argparse.Namespace) -> int:
    """Run ``bcolzx import``."""
    from bcolzx.convert import _reserve
    from bcolzx.params import cparams

    fmt = _format_of(args, args.src)
    if args.node is not None and fmt.name != "hdf5":
        usage_error(args, "--node is for the hdf5 format")
    if not os.path.lexists(args.src):
        raise FileNotFoundError(errno.ENOENT, "no such file or directory", args.src)
    if fmt.is_directory != os.path.isdir(args.src):
        raise UnsupportedFormatError(f"{args.src} is {'not ' if fmt.is_directory else ''}a "
                                     f"directory: not a {fmt.name} store")
    _check_free(args.dest, args.force)
    kwargs: dict = {}
    given = cparams_from(args)
    if given:
        cparams(**given)  # a bad combination is refused before anything is written
        kwargs["cparams"] = given  # a dict: only these change the source's own (merge_cparams)
    if args.chunklen is not None:
        kwargs["chunklen"] = args.chunklen
    parent, base = os.path.split(os.path.abspath(args.dest))
    if not os.path.isdir(parent):
        raise FileNotFoundError(errno.ENOENT, "the destination's directory does not exist",
                                parent)
    tmp = _reserve(parent, base)
    try:
        with bar(None, f"import {fmt.name}", quiet=args.quiet) as advance:
            _import(fmt, args.src, tmp, args.node, kwargs, advance)
        _install(tmp, args.dest, args.force)
    except BaseException:
        _remove(tmp)
        raise
    info = describe(args.dest)
    print(f"{args.src} ({fmt.name}) -> {args.dest}: {info['kind']} of "
          f"{info['shape'][0]:,} rows; {sizes_text(info)}")
    return EXIT_OK


# -- the parsers ----------------------------------------------------------------------


def _add_parser(sub, name: str, help_: str, description: str, src: str, dest: str,
                node: str, force: str) -> argparse.ArgumentParser:
    """A subparser with the arguments ``export`` and ``import`` share."""
    p = sub.add_parser(name, help=help_, description=description, epilog=FORMATS_TEXT,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("src", metavar="SRC", help=src)
    p.add_argument("dest", metavar="DEST", help=dest)
    p.add_argument("--format", choices=tuple(FORMATS),
                   help=f"the format of {'DEST' if name == 'export' else 'SRC'}")
    p.add_argument("--node", metavar="PATH", help=node)
    p.add_argument("--force", action="store_true", help=force)
    return p


def register(sub) -> None:
    """Add ``export`` and ``import`` to the subcommands."""
    p = _add_parser(sub, "export", EXPORT_HELP, "Write the carray or ctable at SRC to the "
                    "file (or Zarr store) DEST; either may be a URL (s3://..., gs://...: "
                    "DEST is written locally, then uploaded whole, a Zarr store's metadata "
                    "last).", "a carray or ctable directory, or its URL",
                    "the file (or .zarr directory) to write, or its URL",
                    "hdf5: where the data goes in the file (default /carray or /ctable)",
                    "replace DEST if it exists (an existing HDF5 file is otherwise added to)")
    p.add_argument("--column", metavar="NAME",
                   help="export only this column of a ctable (as a carray)")
    add_storage_options(p)
    add_quiet(p)
    p.set_defaults(run=run_export, subparser=p)
    p = _add_parser(sub, "import", IMPORT_HELP, "Make a new carray or ctable at DEST from "
                    "the file (or Zarr store) SRC.", "the file (or .zarr directory) to read",
                    "the carray or ctable directory to create",
                    "hdf5: the dataset or table to read (default: the only one in the file)",
                    "replace DEST if it exists")
    add_cparams_options(p, "compression of the new dataset",
                        ": what a Blosc2 frame or a Zarr store records, and where a source "
                        "records none, bcolzx's defaults")
    add_quiet(p)
    p.set_defaults(run=run_import, subparser=p)
