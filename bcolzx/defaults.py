"""The global defaults of bcolzx and its thread settings (legacy ``bcolz.defaults``).

:data:`defaults` is the single :class:`Defaults` instance, also
``bcolzx.defaults``: as in legacy bcolz, whose module ``bcolz/defaults.py``
coexisted with the instance ``bcolz.defaults``, the package attribute is the
instance, not this module (``from bcolzx.defaults import Defaults`` and
``importlib.import_module('bcolzx.defaults')`` reach the module).

Nothing here acts at import time: the default virtual machine and thread
count are decided on first use, numexpr and pandas are never imported (their
presence is detected with :func:`importlib.util.find_spec` and their versions
read with :mod:`importlib.metadata`), and no thread count is set anywhere
until the caller asks.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import operator
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from bcolzx._ext import codec as _codec
from bcolzx._storage import chunkcache as _chunkcache
from bcolzx.params import _CPARAMS_KEYS, SHUFFLE, _check_cparams, cparams

__all__ = [
    "Defaults",
    "defaults",
    "defaults_ctx",
    "detect_number_of_cores",
    "set_nthreads",
    "blosc_set_nthreads",
    "print_versions",
]

#: Oldest numexpr legacy bcolz would use (``bcolz.min_numexpr_version``).
MIN_NUMEXPR_VERSION = "2.5.2"
#: Upper bound of the default thread count: more rarely helps C-Blosc2.
MAX_DEFAULT_NTHREADS = 8


# -- validation ----------------------------------------------------------------


def check_lock_timeout(value: Any) -> float:
    """Validate a write-lock timeout: seconds >= 0, ``math.inf`` to wait for ever.

    Raises
    ------
    TypeError
        If `value` is not a real number.
    ValueError
        If it is negative or NaN.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"lock_timeout must be a number of seconds (or math.inf), not "
                        f"{type(value).__name__}")
    value = float(value)
    if not value >= 0:
        raise ValueError(f"lock_timeout must be >= 0 seconds (math.inf waits for ever), not "
                         f"{value}")
    return value


#: The environment variable that sets the initial ``defaults.allow_pickle``.
ALLOW_PICKLE_ENV = "BCOLZX_ALLOW_PICKLE"
_ENV_TRUE = ("1", "true", "yes", "on")
_ENV_FALSE = ("", "0", "false", "no", "off")


def check_allow_pickle(value: Any) -> bool:
    """Validate an ``allow_pickle`` switch: True or False (NumPy bools accepted).

    Raises
    ------
    TypeError
        If `value` is not a bool.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"allow_pickle must be True or False, not {value!r}")
    return bool(value)


def _allow_pickle_from_env() -> bool:
    """``defaults.allow_pickle`` as :data:`ALLOW_PICKLE_ENV` sets it (False when unset).

    Raises
    ------
    ValueError
        If the variable holds something else than 1/0, true/false, yes/no, on/off.
    """
    raw = os.environ.get(ALLOW_PICKLE_ENV, "").strip().lower()
    if raw in _ENV_TRUE:
        return True
    if raw in _ENV_FALSE:
        return False
    raise ValueError(f"{ALLOW_PICKLE_ENV}={os.environ[ALLOW_PICKLE_ENV]!r}: use 1 (allow) or 0 "
                     "(refuse, the default)")


#: The most threads a compressor or decompressor takes (bcolzx._ext.codec).
MAX_NTHREADS = 1024


def _check_nthreads(nthreads: Any) -> int:
    if isinstance(nthreads, bool):
        raise TypeError("nthreads must be an int, not a bool")
    try:
        nthreads = operator.index(nthreads)
    except TypeError:
        raise TypeError(f"nthreads must be an int, not {type(nthreads).__name__}") from None
    if not 1 <= nthreads <= MAX_NTHREADS:  # what the codec accepts: refused before any change
        raise ValueError(f"nthreads must be between 1 and {MAX_NTHREADS}, not {nthreads}")
    return nthreads


# -- optional dependencies, detected without importing them ---------------------


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split(".")[:3]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _installed_version(dist: str) -> str | None:
    """The installed version of distribution `dist`, or None; never imports it."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _numexpr_usable() -> bool:
    """numexpr is installed in a version legacy bcolz accepted (>= 2.5.2)."""
    if importlib.util.find_spec("numexpr") is None:
        return False
    version = _installed_version("numexpr")
    return version is None or _version_tuple(version) >= _version_tuple(MIN_NUMEXPR_VERSION)

# -- defaults ------------------------------------------------------------------


class Defaults:
    """The global defaults of bcolzx (legacy ``bcolz.defaults``).

    Use the single instance :data:`defaults`.  Every assignment is validated.

    Attributes
    ----------
    cparams : dict
        Default compression parameters, ``{'clevel': 5, 'shuffle': 1,
        'cname': 'lz4', 'quantize': 0}`` initially.  Assign a dict with all
        four keys or a :class:`cparams`; or change single entries with
        :meth:`cparams.setdefaults`.
    vm : {'numexpr', 'python', 'dask'}
        The virtual machine of ``eval()``: 'numexpr' when numexpr (>= 2.5.2)
        is installed, else 'python'; 'dask' (when Dask is installed) evaluates
        blocks as Dask tasks.  ``eval_vm`` is the legacy alias.
    out_flavor : {'bcolz', 'carray', 'numpy'}
        What ``eval()`` returns: a carray ('bcolz', 'carray'; the default) or a
        NumPy array ('numpy').  ``eval_out_flavor`` is the legacy alias.
    nthreads : int
        Threads used for compression and decompression; initially
        ``min(detect_number_of_cores(), 8)``.
    lock_timeout : float
        Seconds a writer waits for a dataset another writer holds before
        :class:`~bcolzx.LockedError` (the default of the ``lock_timeout``
        argument of carray, ctable and open): 0 (initially) fails at once,
        ``math.inf`` waits for ever.
    chunk_cache_bytes : int
        Bytes of decompressed chunks kept, for all arrays together, so that
        repeated reads of the same chunks copy memory instead of
        decompressing (as HDF5's chunk cache does); 64 MiB initially, 0
        turns the cache off.  A chunk is kept on its second read, and only
        by reads of at most a quarter of this (a scan of a large array does
        not flush it); a read of a whole array of at most a quarter of this
        keeps its chunks at once.  ``carray.free_cachemem()`` drops an array's chunks.
    allow_pickle : bool
        Whether object-dtype data (stored with :mod:`pickle`) may be pickled
        and unpickled when a call does not say (``allow_pickle=None``).
        False unless the environment variable ``BCOLZX_ALLOW_PICKLE`` is
        ``1`` when first read: unpickling runs whatever code the data names,
        so, as ``numpy.load``, bcolzx refuses by default and raises
        :class:`~bcolzx.PickleNotAllowedError` (docs/migration.md).

    Raises
    ------
    ValueError
        On an invalid assignment.
    """

    choices: dict[str, tuple[str, ...]] = {
        "out_flavor": ("bcolz", "carray", "numpy"),
        "vm": ("numexpr", "python", "dask"),
    }

    def __init__(self) -> None:
        self._cparams: dict[str, Any] = {
            "clevel": 5,
            "shuffle": SHUFFLE,
            "cname": "lz4",
            "quantize": 0,
        }
        self._vm: str | None = None  # decided on first read
        self._out_flavor = "bcolz"
        self._nthreads: int | None = None  # decided on first read
        self._lock_timeout = 0.0
        self._allow_pickle: bool | None = None  # from the environment on first read

    def check_choices(self, name: str, value: Any) -> None:
        """Raise ValueError unless `value` is an accepted value of default `name`.

        Raises
        ------
        ValueError
            If it is not.
        """
        if not isinstance(value, str) or value not in self.choices[name]:
            raise ValueError(
                f"{value!r} is incorrect value for {name!r} default; "
                f"choose one of {self.choices[name]}"
            )

    def check_cparams(self, value: Any) -> dict[str, Any]:
        """Validate a full set of compression parameters.

        Parameters
        ----------
        value : dict or cparams
            A dict with exactly the keys 'clevel', 'shuffle', 'cname' and
            'quantize', or a :class:`cparams`.

        Returns
        -------
        dict
            A new dict of validated values.

        Raises
        ------
        ValueError
            If `value` is of the wrong type, misses or adds keys, or holds an
            invalid (or None) value.
        """
        if isinstance(value, cparams):
            return value.to_dict()
        if not isinstance(value, Mapping):
            raise ValueError(
                f"this needs to be a cparams object or a dictionary and you passed "
                f"{type(value).__name__!r}"
            )
        if set(value) != set(_CPARAMS_KEYS):
            raise ValueError(
                f"The dictionary must have exactly these entries: {list(_CPARAMS_KEYS)}"
            )
        missing = [key for key in _CPARAMS_KEYS if value[key] is None]
        if missing:
            raise ValueError(f"default cparams cannot be None: {missing}")
        checked = _check_cparams(*(value[key] for key in _CPARAMS_KEYS))
        return dict(zip(_CPARAMS_KEYS, checked))

    @property
    def cparams(self) -> dict[str, Any]:
        """Default compression parameters (the live dict, as in legacy bcolz)."""
        return self._cparams

    @cparams.setter
    def cparams(self, value: Any) -> None:
        self._cparams = self.check_cparams(value)

    @property
    def vm(self) -> str:
        """Virtual machine for ``eval()``: 'numexpr', 'python' or 'dask'."""
        if self._vm is None:
            self._vm = "numexpr" if _numexpr_usable() else "python"
        return self._vm

    @vm.setter
    def vm(self, value: str) -> None:
        self.check_choices("vm", value)
        if value == "numexpr" and not _numexpr_usable():
            raise ValueError(
                "cannot use `numexpr` virtual machine "
                f"(numexpr >= {MIN_NUMEXPR_VERSION} is not installed)"
            )
        if value == "dask" and importlib.util.find_spec("dask") is None:
            raise ValueError("cannot use `dask` virtual machine (Dask is not installed: "
                             "pip install 'bcolzx[dask]')")
        self._vm = value

    eval_vm = vm  # legacy alias

    @property
    def out_flavor(self) -> str:
        """Output flavor of ``eval()``: 'bcolz', 'carray' or 'numpy'."""
        return self._out_flavor

    @out_flavor.setter
    def out_flavor(self, value: str) -> None:
        self.check_choices("out_flavor", value)
        self._out_flavor = value

    eval_out_flavor = out_flavor  # legacy alias

    @property
    def nthreads(self) -> int:
        """Threads used for compression and decompression."""
        if self._nthreads is None:
            self._nthreads = min(detect_number_of_cores(), MAX_DEFAULT_NTHREADS)
        return self._nthreads

    @nthreads.setter
    def nthreads(self, value: int) -> None:
        try:
            self._nthreads = _check_nthreads(value)
        except TypeError as exc:
            raise ValueError(str(exc)) from None

    @property
    def lock_timeout(self) -> float:
        """Seconds a writer waits for a dataset's write lock (0: fail at once)."""
        return self._lock_timeout

    @lock_timeout.setter
    def lock_timeout(self, value: float) -> None:
        self._lock_timeout = check_lock_timeout(value)

    def resolve_lock_timeout(self, value: Any) -> float:
        """`value` validated, or this default when it is None.

        Raises
        ------
        TypeError, ValueError
            As :func:`check_lock_timeout`.
        """
        return self._lock_timeout if value is None else check_lock_timeout(value)

    @property
    def allow_pickle(self) -> bool:
        """Whether object-dtype data may be pickled and unpickled (default False)."""
        if self._allow_pickle is None:
            self._allow_pickle = _allow_pickle_from_env()
        return self._allow_pickle

    @allow_pickle.setter
    def allow_pickle(self, value: bool) -> None:
        try:
            self._allow_pickle = check_allow_pickle(value)
        except TypeError as exc:
            raise ValueError(str(exc)) from None

    def resolve_allow_pickle(self, value: Any) -> bool | None:
        """`value` validated (None stays None: follow this default when it matters).

        Raises
        ------
        TypeError
            If `value` is neither None nor a bool.
        """
        return None if value is None else check_allow_pickle(value)

    @property
    def chunk_cache_bytes(self) -> int:
        """Bytes of decompressed chunks kept for repeated reads, all arrays together."""
        return _chunkcache.DECODED_BYTES

    @chunk_cache_bytes.setter
    def chunk_cache_bytes(self, value: int) -> None:
        if isinstance(value, bool):
            raise TypeError("chunk_cache_bytes must be an int, not a bool")
        try:
            value = operator.index(value)
        except TypeError:
            raise TypeError(f"chunk_cache_bytes must be an int, not "
                            f"{type(value).__name__}") from None
        if value < 0:
            raise ValueError(f"chunk_cache_bytes must be >= 0, not {value}")
        _chunkcache.DECODED_BYTES = value
        if _chunkcache.DECODED.nbytes > value:
            _chunkcache.DECODED.clear()

    def __repr__(self) -> str:
        return (
            f"Defaults(cparams={self.cparams!r}, vm={self.vm!r}, "
            f"out_flavor={self.out_flavor!r}, nthreads={self.nthreads!r}, "
            f"allow_pickle={self.allow_pickle!r}, "
            f"chunk_cache_bytes={self.chunk_cache_bytes!r})"
        )


#: The global defaults.
defaults = Defaults()


@contextmanager
def defaults_ctx(
    cparams: Mapping[str, Any] | cparams | None = None,
    vm: str | None = None,
    out_flavor: str | None = None,
    allow_pickle: bool | None = None,
) -> Iterator[None]:
    """Run a block with some defaults changed, restoring all of them after.

    All of ``defaults.cparams``, ``vm``, ``out_flavor`` and ``allow_pickle``
    are restored on exit, also when the block raises and also when it
    changed them itself (e.g. with :meth:`cparams.setdefaults`).

    Parameters
    ----------
    cparams : dict or cparams, optional
        Full compression parameters to use (see ``Defaults.check_cparams``).
    vm : str, optional
        Virtual machine to use.
    out_flavor : str, optional
        Output flavor to use.
    allow_pickle : bool, optional
        Whether object-dtype data may be pickled and unpickled in the block
        (see ``Defaults.allow_pickle``).

    Yields
    ------
    None

    Raises
    ------
    ValueError
        If a value is invalid; nothing is then changed.

    Examples
    --------
    >>> from bcolzx.defaults import defaults, defaults_ctx
    >>> with defaults_ctx(out_flavor='numpy'):
    ...     defaults.out_flavor
    'numpy'
    >>> defaults.out_flavor
    'bcolz'
    """
    saved_cparams = dict(defaults.cparams)
    saved_vm = defaults._vm
    saved_flavor = defaults.out_flavor
    saved_pickle = defaults._allow_pickle
    try:
        if allow_pickle is not None:
            defaults.allow_pickle = allow_pickle
        if cparams is not None:
            defaults.cparams = cparams
        if vm is not None:
            defaults.vm = vm
        if out_flavor is not None:
            defaults.out_flavor = out_flavor
        yield
    finally:
        defaults._cparams = saved_cparams
        defaults._vm = saved_vm
        defaults._out_flavor = saved_flavor
        defaults._allow_pickle = saved_pickle


# -- threads -------------------------------------------------------------------


def detect_number_of_cores() -> int:
    """The number of cores this process may run on.

    Uses the CPU affinity of the process where the platform has one (so a
    container or ``taskset`` limit is honoured), else ``os.cpu_count()``.

    Returns
    -------
    int
        At least 1.

    Raises
    ------
    None

    Examples
    --------
    >>> from bcolzx.defaults import detect_number_of_cores
    >>> detect_number_of_cores() >= 1
    True
    """
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is not None:
        try:
            return max(1, len(getaffinity(0)))
        except OSError:
            pass
    return max(1, os.cpu_count() or 1)


def blosc_set_nthreads(nthreads: int) -> int:
    """Set the threads used for compression and decompression.

    Parameters
    ----------
    nthreads : int
        At least 1.

    Returns
    -------
    int
        The previous setting.

    Raises
    ------
    TypeError
        If `nthreads` is not an int.
    ValueError
        If `nthreads` is not between 1 and 1024; nothing is changed.

    Examples
    --------
    >>> from bcolzx.defaults import blosc_set_nthreads
    >>> old = blosc_set_nthreads(2)
    >>> blosc_set_nthreads(old)
    2
    """
    nthreads = _check_nthreads(nthreads)
    previous = defaults.nthreads
    defaults._nthreads = nthreads
    return previous


def set_nthreads(nthreads: int) -> int:
    """Set the threads used by bcolzx, and by numexpr if it is in use.

    Sets ``defaults.nthreads``; if numexpr has already been imported (by
    anyone), its thread count is set too.  numexpr is never imported here.

    Parameters
    ----------
    nthreads : int
        At least 1.

    Returns
    -------
    int
        The previous setting of ``defaults.nthreads``.

    Raises
    ------
    TypeError
        If `nthreads` is not an int.
    ValueError
        If `nthreads` is not between 1 and 1024; nothing is changed.

    See Also
    --------
    blosc_set_nthreads : the same, without touching numexpr.
    """
    previous = blosc_set_nthreads(nthreads)
    numexpr = sys.modules.get("numexpr")
    if numexpr is not None and hasattr(numexpr, "set_num_threads"):
        # numexpr caps its own threads (NUMEXPR_MAX_THREADS) and prints an error past it.
        numexpr.set_num_threads(min(defaults.nthreads, getattr(numexpr, "MAX_THREADS",
                                                                defaults.nthreads)))
    return previous


# -- versions ------------------------------------------------------------------


def print_versions() -> None:
    """Print the versions of bcolzx and of what it relies on.

    The layout follows legacy ``bcolz.print_versions()``.  Optional packages
    (numexpr, pandas) are reported from their installed metadata, without
    importing them.

    Raises
    ------
    None
    """
    import platform

    import numpy

    import bcolzx  # here, not at the top: bcolzx/__init__ imports this module

    rule = "-=" * 38
    print(rule)
    print(f"bcolzx version:    {bcolzx.__version__}")
    print(f"NumPy version:     {numpy.__version__}")
    print(f"C-Blosc2 version:  {_codec.blosc2_version()} ({_codec.blosc2_version_date()})")
    print(f"Blosc compressors: {_codec.compressor_list()}")
    numexpr_version = _installed_version("numexpr")
    if numexpr_version is not None and _numexpr_usable():
        print(f"Numexpr version:   {numexpr_version}")
    else:
        print(f"Numexpr version:   not available (version >= {MIN_NUMEXPR_VERSION} not detected)")
    print(f"pandas version:    {_installed_version('pandas') or 'not available'}")
    print(f"Python version:    {sys.version}")
    print(f"Platform:          {sys.platform}-{platform.machine()}")
    print(f"Byte-ordering:     {sys.byteorder}")
    print(f"Detected cores:    {detect_number_of_cores()}")
    print(f"Threads:           {defaults.nthreads}")
    print(rule)
