"""bcolzx: compressed, persistent, columnar containers for NumPy data.

The successor of legacy bcolz, built on C-Blosc2.  Importing bcolzx has no
side effects: it starts no threads, runs no subprocess and imports no
optional dependency.
"""

from bcolzx._ext.codec import BITSHUFFLE, NOSHUFFLE, SHUFFLE
from bcolzx.errors import (
    BcolzxError,
    BcolzxMemoryError,
    BufferTooSmallError,
    ChecksumError,
    CodecError,
    CorruptDataError,
    InvalidParameterError,
    ReadOnlyError,
    TruncatedDataError,
    UnsupportedFormatError,
)
from bcolzx.toplevel import blosc_compressor_list, blosc_version

try:
    from bcolzx._version import version as __version__
except ImportError:  # a source tree that was never built by setuptools-scm
    __version__ = "0.0.0+unknown"

__all__ = [
    "__version__",
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
    "CorruptDataError",
    "InvalidParameterError",
    "ReadOnlyError",
    "TruncatedDataError",
    "UnsupportedFormatError",
]
