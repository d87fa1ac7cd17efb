"""bcolzx: compressed, persistent, columnar containers for NumPy data.

The successor of legacy bcolz, built on C-Blosc2.  Importing bcolzx has no
side effects: it starts no threads, runs no subprocess and imports no
optional dependency, nor any exchange format: the format functions of this
namespace (``from_zarr``, ``from_arrow``...) are registered in
:mod:`bcolzx.interop` and imported on first use.
"""

import typing as _typing

try:
    from bcolzx._ext.codec import BITSHUFFLE, NOSHUFFLE, SHUFFLE
except ModuleNotFoundError as _exc:  # pragma: no cover - depends on how Python was started
    if _exc.name != "bcolzx._ext.codec":
        raise
    raise ImportError(
        f"bcolzx is being imported from {__path__[0]}, a source tree whose Cython extensions "
        "are not built. Run Python from another directory to use the installed bcolzx, or "
        "build in place with 'pip install --no-build-isolation -e .'."
    ) from None
from bcolzx import attrs
from bcolzx.carray import carray
from bcolzx.compact import compact
from bcolzx.convert import convert
from bcolzx.ctable import ctable

# The instance: as legacy bcolz, ``bcolzx.defaults`` is the Defaults object, not the module.
from bcolzx.defaults import (
    blosc_set_nthreads,
    defaults,
    defaults_ctx,
    detect_number_of_cores,
    print_versions,
    set_nthreads,
)
from bcolzx.errors import (
    BcolzxError,
    BcolzxMemoryError,
    BufferTooSmallError,
    ChecksumError,
    CodecError,
    ConcurrentModificationError,
    CorruptDataError,
    InvalidParameterError,
    LegacyFormatError,
    LockedError,
    PickleNotAllowedError,
    ReadOnlyError,
    TruncatedDataError,
    UnsafeFileError,
    UnsupportedFormatError,
)
from bcolzx.params import cparams, filters
from bcolzx.repair import repair
from bcolzx.toplevel import (
    arange,
    blosc_compressor_list,
    blosc_version,
    eval,
    fill,
    fromiter,
    iterblocks,
    ones,
    open,
    vlen_dtype,
    walk,
    zeros,
)
from bcolzx.verify import verify

if _typing.TYPE_CHECKING:  # pragma: no cover - for type checkers; at run time, __getattr__
    from bcolzx.interop.arrow import from_arrow, from_parquet
    from bcolzx.interop.b2frame import from_b2frame
    from bcolzx.interop.dask import from_dask, to_bcolzx
    from bcolzx.interop.h5py import fromhdf5
    from bcolzx.interop.zarr import from_zarr

try:
    from bcolzx._version import version as __version__
except ImportError:  # a source tree that was never built by setuptools-scm
    __version__ = "0.0.0+unknown"


def test(verbose: bool = False, heavy: bool = False) -> bool:
    """Smoke-check this installation (legacy ``bcolz.test()``); see :func:`bcolzx.compat.selftest`.

    The test suite is not installed; this prints the versions and one line per
    check of carrays and ctables (in memory and in a temporary directory).

    Parameters
    ----------
    verbose : bool
        Print the traceback of a failed check.
    heavy : bool
        Check with more rows.

    Returns
    -------
    bool
        True when every check passed (legacy bcolz called ``sys.exit``).
    """
    from bcolzx.compat import selftest

    return selftest(verbose=verbose, heavy=heavy)


#: The format functions of this namespace, registered in :mod:`bcolzx.interop` and
#: imported on first use (``bcolzx.interop.EXPORTS`` says which module offers each).
_INTEROP_NAMES = ("from_dask", "to_bcolzx", "fromhdf5", "from_b2frame", "from_zarr",
                  "from_arrow", "from_parquet")


def __getattr__(name: str) -> _typing.Any:  # PEP 562: optional formats load on first use
    if name in _INTEROP_NAMES or name in ("interop", "duckdb"):
        import importlib

        interop = importlib.import_module("bcolzx.interop")
        value = interop if name == "interop" else (
            interop.load("duckdb") if name == "duckdb" else interop.exported(name))
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_INTEROP_NAMES, "interop", "duckdb"})


__all__ = [
    "__version__",
    "carray",
    "ctable",
    "eval",
    "attrs",
    "cparams",
    "defaults",
    "defaults_ctx",
    "filters",
    "set_nthreads",
    "blosc_set_nthreads",
    "detect_number_of_cores",
    "print_versions",
    "test",
    "open",
    "zeros",
    "ones",
    "fill",
    "arange",
    "fromiter",
    "iterblocks",
    "walk",
    "vlen_dtype",
    "convert",
    "compact",
    "repair",
    "verify",
    "from_dask",
    "to_bcolzx",
    "fromhdf5",
    "from_b2frame",
    "from_zarr",
    "from_arrow",
    "from_parquet",
    "NOSHUFFLE",
    "SHUFFLE",
    "BITSHUFFLE",
    "blosc_version",
    "blosc_compressor_list",
    "BcolzxError",
    "BcolzxMemoryError",
    "BufferTooSmallError",
    "ChecksumError",
    "CodecError",
    "ConcurrentModificationError",
    "CorruptDataError",
    "InvalidParameterError",
    "LegacyFormatError",
    "LockedError",
    "PickleNotAllowedError",
    "ReadOnlyError",
    "TruncatedDataError",
    "UnsafeFileError",
    "UnsupportedFormatError",
]
