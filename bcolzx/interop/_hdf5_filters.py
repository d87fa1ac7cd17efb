"""HDF5 filters on reading: each reader makes its dataset's filters available first.

HDF5 decodes a filtered chunk only with that filter registered in the HDF5
library doing the read.  HDF5's own filters (gzip, shuffle, Fletcher32,
szip, n-bit, scale-offset) always are; PyTables registers its compressors
(Blosc, Blosc2, LZO, bzip2) in its own copy of HDF5; anything else,
notably the Blosc2 filter that ``carray.tohdf5`` writes through
hdf5plugin, is registered only in a process that has imported hdf5plugin.
So before the first chunk is read, :func:`ensure_h5py` (for h5py datasets)
and :func:`ensure_pytables` (for PyTables tables) list the dataset's filters;
if one is missing they load hdf5plugin (importing it registers its filters
with h5py's HDF5; for PyTables' HDF5 its plugin directory is added to the
plugin search path, as hdf5plugin documents for other HDF5 programs), and
if one is still missing they have an error naming the filter and the
package that provides it: raised at once for a required filter, and for an
optional one (HDF5 leaves a chunk unfiltered where such a filter fails, and
hdf5plugin's filters are optional) raised by the reader if a read fails.
A dataset whose filters are all there costs one look at its creation
properties, and hdf5plugin is imported only when needed.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

from bcolzx.errors import UnsupportedFormatError

__all__ = ["FILTER_NAMES", "filter_name", "dataset_name", "missing_error", "ensure_h5py",
           "ensure_pytables"]

#: Names of the registered HDF5 filters a reader is likely to meet, for messages
#: (https://github.com/HDFGroup/hdf5_plugins/blob/master/docs/RegisteredFilterPlugins.md).
FILTER_NAMES = {
    1: "gzip (deflate)", 2: "shuffle", 3: "fletcher32", 4: "szip", 5: "n-bit",
    6: "scale-offset", 305: "LZO", 307: "bzip2", 32000: "LZF", 32001: "Blosc",
    32004: "LZ4", 32008: "bitshuffle", 32013: "ZFP", 32015: "Zstandard", 32017: "SZ",
    32018: "FCIDECOMP", 32024: "SZ3", 32026: "Blosc2", 32028: "SPERR", 32033: "HTJ2K",
}
#: The filters hdf5plugin provides (its FILTERS, by id), to say when installing it helps.
HDF5PLUGIN_FILTERS = frozenset({307, 32001, 32004, 32008, 32013, 32015, 32017, 32018, 32024,
                                32026, 32028, 32033})
#: H5Z_FLAG_OPTIONAL: HDF5 stores a chunk unfiltered when the filter fails on it.
_OPTIONAL = 0x0001
_INSTALL = "pip install 'bcolzx[h5py]' (or pip install hdf5plugin)"


def filter_name(filter_id: int) -> str:
    """``'Blosc2 (HDF5 filter 32026)'``: a filter's name for a message."""
    name = FILTER_NAMES.get(filter_id)
    return f"{name} (HDF5 filter {filter_id})" if name else f"HDF5 filter {filter_id}"


def missing_error(missing: list[int], where: str) -> UnsupportedFormatError:
    """The error for the filters still `missing` of the dataset `where`."""
    names = ", ".join(filter_name(f) for f in missing)
    return UnsupportedFormatError(f"{where} is compressed with {names}, which no installed "
                                  "HDF5 filter plugin provides (neither hdf5plugin nor "
                                  "HDF5_PLUGIN_PATH has it)")


def _settle(filters: list[tuple[int, bool]], avail, where: str,
            load) -> Exception | None:
    """Make `filters` ((id, optional) pairs) available, loading hdf5plugin if it helps.

    `avail(id)` says whether a filter is registered; `load(hdf5plugin)` makes
    hdf5plugin's filters available to the HDF5 library in question.

    Returns
    -------
    Exception or None
        None if every filter is there.  Otherwise HDF5 can still read the
        chunks that the optional filters missing left alone (HDF5 stores a
        chunk unfiltered when an optional filter fails on it), so this is the
        error to raise if a read fails: an ImportError naming hdf5plugin when
        installing it would help, else an UnsupportedFormatError.

    Raises
    ------
    ImportError, UnsupportedFormatError
        That error at once, when a required filter is missing.
    """
    missing = [(f, opt) for f, opt in filters if not avail(f)]
    if not missing:
        return None
    required = not all(opt for _, opt in missing)
    helps = [f for f, _ in missing if f in HDF5PLUGIN_FILTERS]
    if helps:
        try:
            import hdf5plugin
        except ImportError as exc:
            names = ", ".join(filter_name(f) for f in helps)
            error = ImportError(f"reading {where} needs the filter {names}, which the package "
                                f"hdf5plugin provides; hdf5plugin is not installed: {_INSTALL}",
                                name="hdf5plugin")
            if required:
                raise error from exc
            return error
        load(hdf5plugin)
        missing = [(f, opt) for f, opt in missing if not avail(f)]
        if not missing:
            return None
    error = missing_error([f for f, _ in missing], where)
    if not all(opt for _, opt in missing):
        raise error
    return error


# -- h5py ------------------------------------------------------------------------------


def _h5py_filters(dset) -> list[tuple[int, bool]]:
    plist = dset.id.get_create_plist()
    out = []
    for i in range(plist.get_nfilters()):
        fid, flags = plist.get_filter(i)[:2]
        out.append((int(fid), bool(flags & _OPTIONAL)))
    return out


def ensure_h5py(h5py, dset, filepath: str) -> Exception | None:
    """Make every filter of the h5py dataset `dset` available before it is read.

    Parameters
    ----------
    h5py : module
    dset : h5py.Dataset
    filepath : str
        The file, for messages.

    Returns
    -------
    Exception or None
        None when every filter is there.  When only optional filters are
        missing, HDF5 can still read the chunks they left alone: the error to
        raise (from HDF5's) if a read fails.

    Raises
    ------
    ImportError
        If a required filter is missing that hdf5plugin provides, and
        hdf5plugin is not installed (the message names it and how to install it).
    UnsupportedFormatError
        If a required filter is still missing (hdf5plugin does not have it).
    """
    return _settle(_h5py_filters(dset), lambda f: h5py.h5z.filter_avail(f) > 0,
                   dataset_name(dset.name, filepath), lambda _plugin: None)


def dataset_name(node: str, filepath: str) -> str:
    """``"'/carray' of c.h5"``: a node for a message."""
    return f"{node!r} of {filepath}"


# -- PyTables --------------------------------------------------------------------------
# PyTables has its own copy of HDF5 (in its wheel), in which hdf5plugin registers
# nothing; its C API is reached through PyTables' extension module, as hdf5plugin
# reaches h5py's.  hid_t is 64 bits since HDF5 1.10, the oldest PyTables supports.

_hid = ctypes.c_int64


def _pytables_hdf5(tables):
    """The C functions of PyTables' HDF5 library that this module calls."""
    lib = ctypes.CDLL(tables.hdf5extension.__file__)
    signatures: dict[str, tuple[list[Any], Any]] = {
        "H5Dget_create_plist": ([_hid], _hid),
        "H5Pget_nfilters": ([_hid], ctypes.c_int),
        "H5Pget_filter2": ([_hid, ctypes.c_uint, ctypes.POINTER(ctypes.c_uint),
                            ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_uint),
                            ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint)],
                           ctypes.c_int),
        "H5Pclose": ([_hid], ctypes.c_int),
        "H5Zfilter_avail": ([ctypes.c_int], ctypes.c_int),
        "H5PLsize": ([ctypes.POINTER(ctypes.c_uint)], ctypes.c_int),
        "H5PLget": ([ctypes.c_uint, ctypes.c_char_p, ctypes.c_size_t], ctypes.c_ssize_t),
        "H5PLappend": ([ctypes.c_char_p], ctypes.c_int),
    }
    for name, (args, res) in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    return lib


def _pytables_filters(lib, leaf) -> list[tuple[int, bool]]:
    plist = lib.H5Dget_create_plist(leaf._v_objectid)
    if plist < 0:
        raise OSError(f"HDF5 cannot read the creation properties of {leaf._v_pathname}")
    try:
        out = []
        for i in range(max(0, lib.H5Pget_nfilters(plist))):
            flags, nvalues, config = ctypes.c_uint(), ctypes.c_size_t(0), ctypes.c_uint()
            name = ctypes.create_string_buffer(256)
            fid = lib.H5Pget_filter2(plist, i, ctypes.byref(flags), ctypes.byref(nvalues),
                                     None, len(name), name, ctypes.byref(config))
            if fid >= 0:
                out.append((int(fid), bool(flags.value & _OPTIONAL)))
        return out
    finally:
        lib.H5Pclose(plist)


def _plugin_paths(lib) -> list[str]:
    count = ctypes.c_uint()
    if lib.H5PLsize(ctypes.byref(count)) < 0:
        return []
    paths = []
    for i in range(count.value):
        buf = ctypes.create_string_buffer(4096)
        if lib.H5PLget(i, buf, len(buf)) > 0:
            paths.append(os.fsdecode(buf.value))
    return paths


def ensure_pytables(tables, leaf, filepath: str) -> Exception | None:
    """Make every filter of the PyTables node `leaf` available to PyTables before reading.

    Parameters
    ----------
    tables : module
    leaf : tables.Leaf
    filepath : str
        The file, for messages.

    Returns
    -------
    Exception or None
        As :func:`ensure_h5py`.

    Raises
    ------
    ImportError
        If a required filter is missing that hdf5plugin provides, and
        hdf5plugin is not installed.
    UnsupportedFormatError
        If a required filter is still missing.
    """
    lib = _pytables_hdf5(tables)

    def load(hdf5plugin) -> None:
        if hdf5plugin.PLUGIN_PATH not in _plugin_paths(lib):
            lib.H5PLappend(os.fsencode(hdf5plugin.PLUGIN_PATH))

    return _settle(_pytables_filters(lib, leaf), lambda f: lib.H5Zfilter_avail(f) > 0,
                   dataset_name(leaf._v_pathname, filepath), load)
