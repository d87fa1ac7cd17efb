"""Legacy bcolz's helper names: ``bcolz.py2help``, ``bcolz.utils``, ``chunk``, ctable helpers.

Legacy bcolz shipped these as public-looking modules (``bcolz.py2help`` for
Python 2/3 differences, ``bcolz.utils.to_ndarray`` and ``build_carray``, the
``carray_ext.chunk`` class, the module-level helpers of ``bcolz.ctable``);
programs and legacy bcolz's own test suite import them, and legacy pickles
name ``bcolz.utils.build_carray``.  :func:`bcolzx.compat.install` exposes
them under their legacy names; :data:`LEGACY_API_VERSION` is what
``bcolz.__version__`` reports then.
"""

from __future__ import annotations

import builtins
import functools
import keyword as keyword_module
import math
import os
import re
import subprocess
import time
import urllib.parse

import numpy as np

from bcolzx._ext.codec import Compressor, Decompressor, chunk_sizes

#: What ``bcolz.__version__`` reports once :func:`bcolzx.compat.install` ran: the
#: last release of legacy bcolz, whose documented API bcolzx reproduces.
LEGACY_API_VERSION = "1.2.1"

# -- bcolz.py2help: the Python 3 side of legacy's Python 2/3 table ----------------------

PY2 = False
xrange = range
izip = zip
imap = map
_inttypes = (int,)
_strtypes = (bytes, str)
unicode = str
basestring = str
urlparse = urllib.parse
reduce = functools.reduce
exec_ = builtins.exec


check_output = subprocess.check_output


def dict_iteritems(d):
    """An iterator over ``d.items()`` (``dict.iteritems`` of Python 2)."""
    return iter(d.items())


PY2HELP = ("PY2", "xrange", "izip", "imap", "_inttypes", "_strtypes", "unicode",
           "basestring", "urlparse", "reduce", "exec_", "dict_iteritems", "check_output")

# -- bcolz.ctable's module-level helpers -----------------------------------------------

#: The file listing a ctable's columns (legacy ``bcolz.ctable.ROOTDIRS``).
ROOTDIRS = "__rootdirs__"
re_ident = re.compile(r"^[^\d\W]\w*$", re.UNICODE)
re_str_split = re.compile(r"^\s+|\s*,\s*|\s+$")


def is_identifier(x):
    """A match object when `x` is a Python identifier, else None."""
    return re_ident.match(x)


def split_string(x):
    """Split column names given as one string on commas and blanks (as namedtuple)."""
    return re_str_split.split(str(x))


def validate_names(columns, keyword="names"):
    """`columns` as a list of str, if all are identifiers and none a keyword.

    Raises
    ------
    ValueError
        If a name is not a valid identifier or is a keyword.
    """
    if not all(is_identifier(x) and not keyword_module.iskeyword(x) for x in columns):
        raise ValueError(f"column {keyword} must be valid Python identifiers, and must not "
                         "start with an underscore")
    return [str(c) for c in columns]


CTABLE_HELPERS = ("ROOTDIRS", "re_ident", "re_str_split", "is_identifier", "split_string",
                  "validate_names")

# -- bcolz.utils -------------------------------------------------------------------------


def to_ndarray(array, dtype, arrlen=None, safe=True):
    """`array` as a contiguous NumPy array of `dtype` (legacy ``bcolz.utils.to_ndarray``).

    A scalar becomes one element; with `arrlen`, the result is broadcast to
    that many rows.  With ``safe=False`` the input is returned unchanged.

    Raises
    ------
    TypeError
        If a zero-stride array's dtype is not `dtype`.
    ValueError
        If `array` cannot be converted to `dtype`.
    """
    if not safe:
        return array
    if dtype is not None:
        dtype = np.dtype(dtype)
    if not isinstance(array, np.ndarray) and dtype is None:
        array = np.array(array)
    if type(array) is np.ndarray and array.ndim and array.strides[0] == 0:
        if dtype is not None and array.dtype != dtype.base:
            raise TypeError("dtypes do not match")
        return array
    if dtype is not None and (type(array) is not np.ndarray or array.dtype != dtype.base):
        try:
            array = np.array(array, dtype=dtype.base)
        except ValueError:
            raise ValueError("cannot convert to an ndarray object") from None
    if not array.flags.contiguous:
        array = array.copy()
    if array.ndim == 0:
        array = array.reshape(1)
    if arrlen is not None and arrlen != len(array):
        out = np.empty((arrlen,), dtype=dtype)
        out[:] = array
        array = out
    return array


def human_readable_size(size):
    """`size` bytes as text with a unit (``'1.50 KB'``)."""
    if size < 2**10:
        return f"{size}"
    for unit, shift in (("KB", 10), ("MB", 20), ("GB", 30)):
        if size < 2 ** (shift + 10) or unit == "GB":
            return f"{size / 2**shift:.2f} {unit}"
    return str(size)  # pragma: no cover - the loop always returns


def get_len_of_range(start, stop, step):
    """Number of items of ``range(start, stop, step)`` for a positive `step`."""
    return max(0, (stop - start + step - 1) // step)


def quantize(data, significant_digits):
    """Round floats keeping `significant_digits` decimals (see :func:`bcolzx.carray.quantize`)."""
    from bcolzx.carray import quantize as _quantize

    return _quantize(np.asarray(data), significant_digits)


def csformula(expectedsizeinMB):  # noqa: N803 - legacy name
    """Legacy bcolz's chunk size, in bytes, for a dataset of `expectedsizeinMB`
    (4 KiB times 2**(log10(size in MB) + 6): 256 KiB for 1 MB)."""
    return 4096 * int(2 ** (math.log10(expectedsizeinMB) + 6))


def limit_es(expectedsizeinMB):  # noqa: N803 - legacy name
    """`expectedsizeinMB` kept within legacy's bounds, 1e-4 (0.1 KB) to 1e4 (10 GB)."""
    return min(max(expectedsizeinMB, 1e-4), 1e4)


def calc_chunksize(expectedsizeinMB):  # noqa: N803 - legacy name
    """Legacy bcolz's chunk size in bytes for a dataset of `expectedsizeinMB`.

    bcolzx picks its own chunk lengths (:func:`bcolzx._format.layout.default_chunklen`,
    larger chunks suit C-Blosc2); this is the legacy formula, for programs
    that compute with it.
    """
    size = limit_es(expectedsizeinMB)
    return csformula(10 ** int(math.log10(size)))


def show_stats(explain, tref):
    """Print this process's memory use (Linux ``/proc``) and the wall time since
    `tref`; return the current time (legacy ``bcolz.utils.show_stats``)."""
    fields = {}
    try:
        with open(f"/proc/{os.getpid()}/status", encoding="ascii") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields[key] = value.split()[0] if value.split() else "?"
    except OSError:
        pass
    get = lambda key: fields.get(key, "?")  # noqa: E731
    print(f"Memory usage: ******* {explain} *******")
    print(f"VmSize: {get('VmSize'):>7} kB\tVmRSS: {get('VmRSS'):>7} kB")
    print(f"VmData: {get('VmData'):>7} kB\tVmStk: {get('VmStk'):>7} kB")
    print(f"VmExe:  {get('VmExe'):>7} kB\tVmLib: {get('VmLib'):>7} kB")
    now = time.time()
    print("WallClock time:", round(now - tref, 3))
    return now


def is_sequence_like(var):
    """Whether `var` has a length and is not a string (legacy ``chunked_eval``)."""
    return hasattr(var, "__len__") and not isinstance(var, (bytes, str))


def build_carray(array, rootdir):
    """Rebuild a carray from a legacy bcolz pickle (``bcolz.utils.build_carray``).

    Legacy bcolz pickled an in-memory carray as ``build_carray(data, None)``
    and a persistent one as ``build_carray(None, rootdir)``.

    Parameters
    ----------
    array : array_like or None
        The data of an in-memory carray.
    rootdir : str or None
        The directory of a persistent carray, opened in mode ``'a'``.

    Returns
    -------
    bcolzx.carray

    Raises
    ------
    FileNotFoundError
        If `rootdir` is given and holds no carray.
    """
    import bcolzx

    if rootdir:
        return bcolzx.carray(rootdir=rootdir)
    return bcolzx.carray(array)


UTILS = ("build_carray", "to_ndarray", "human_readable_size", "get_len_of_range", "quantize",
         "csformula", "limit_es", "calc_chunksize", "show_stats")

# -- carray_ext.chunk --------------------------------------------------------------------


class chunk:  # noqa: N801 - legacy name
    """One compressed chunk held in memory (legacy ``bcolz.carray_ext.chunk``).

    Legacy bcolz used it inside ``carray``; programs and tests made their own
    to compress an array and read parts of it back.  Here it is a C-Blosc2
    chunk of our codec.

    Parameters
    ----------
    dobject : array_like
        The data (one-dimensional rows of `atom`).
    atom : numpy.dtype
        The dtype of the rows.
    cparams : bcolzx.cparams
        Compression parameters.

    Raises
    ------
    TypeError
        For an object dtype or data that cannot be converted to `atom`.
    """

    def __init__(self, dobject, atom, cparams, _memory=True, _compr=False):
        atom = np.dtype(atom)
        if atom.hasobject:
            raise TypeError("chunk cannot hold objects")
        self._atom = atom
        if _compr:
            self._data = bytes(dobject)
            self.nbytes, self.cbytes, self.blocksize = chunk_sizes(self._data)
        else:
            arr = np.ascontiguousarray(dobject, dtype=atom.base)
            if cparams.quantize and arr.dtype.kind == "f":
                arr = quantize(arr, cparams.quantize)
            typesize = atom.base.itemsize
            if atom.base.kind in "SUV" or typesize > 255:
                typesize = 4 if atom.base.kind == "U" else 1
            comp = Compressor(cparams.cname, cparams.clevel, cparams.shuffle, typesize=typesize)
            self._data = comp.compress(arr)
            self.nbytes, self.cbytes, self.blocksize = chunk_sizes(self._data)
        self.atomsize = atom.itemsize
        self.itemsize = atom.base.itemsize

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the rows."""
        return self._atom

    def __len__(self) -> int:
        return self.nbytes // self.atomsize

    def getdata(self) -> bytes:
        """The compressed bytes."""
        return self._data

    def getudata(self) -> bytes:
        """The decompressed bytes."""
        return bytes(Decompressor().decompress(self._data))

    def _rows(self) -> np.ndarray:
        out = np.empty(len(self), dtype=self._atom)
        Decompressor().decompress(self._data, out)
        return out

    def __getitem__(self, key):
        if isinstance(key, (int, np.integer)):
            n = len(self)
            i = int(key) + n if key < 0 else int(key)
            if not 0 <= i < n:
                raise IndexError(f"index {key} out of range for a chunk of {n} rows")
            return self._rows()[i]
        if isinstance(key, slice):
            return self._rows()[key]
        raise IndexError(f"key not suitable: {key!r}")

    def __setitem__(self, key, value):
        raise NotImplementedError("chunk objects are read-only")

    def __str__(self) -> str:
        return str(self[:])

    def __repr__(self) -> str:
        ratio = self.nbytes / self.cbytes if self.cbytes else math.inf
        return (f"chunk({self.dtype})  nbytes: {self.nbytes}; cbytes: {self.cbytes}; "
                f"ratio: {ratio:.2f}\n{str(self)!r}")


__all__ = ["LEGACY_API_VERSION", "chunk", *PY2HELP, *UTILS, *CTABLE_HELPERS]
