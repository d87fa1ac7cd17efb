"""Compression parameters: the ``cparams`` class and its validation (legacy bcolz names).

:class:`cparams` is immutable; a parameter left as None takes its default
from ``bcolzx.defaults.cparams`` (:mod:`bcolzx.defaults` holds the global
defaults and the thread settings).  Nothing here acts at import time.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from bcolzx._ext import codec as _codec
from bcolzx._format import layout as _layout

__all__ = [
    "NOSHUFFLE",
    "SHUFFLE",
    "BITSHUFFLE",
    "filters",
    "cparams",
]

NOSHUFFLE: int = 0
SHUFFLE: int = 1
BITSHUFFLE: int = 2

#: Names of the shuffle filters, by number (as legacy ``bcolz.filters``).
filters: dict[int, str] = {NOSHUFFLE: "noshuffle", SHUFFLE: "shuffle", BITSHUFFLE: "bitshuffle"}

_CPARAMS_KEYS = ("clevel", "shuffle", "cname", "quantize")


# -- validation ----------------------------------------------------------------


def _as_int(value: Any, name: str) -> int:
    """`value` as a Python int (bool refused), or ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"`{name}` must be an int, not a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"`{name}` must be an int, not {type(value).__name__}") from None


def _check_cparams(
    clevel: Any, shuffle: Any, cname: Any, quantize: Any
) -> tuple[int | None, int | None, str | None, int | None]:
    """Validate compression parameters; None stays None (meaning: the default)."""
    if clevel is not None:
        clevel = _as_int(clevel, "clevel")
        if not 0 <= clevel <= 9:
            raise ValueError(f"`clevel` must be between 0 and 9, not {clevel}")
    if shuffle is not None:
        if isinstance(shuffle, bool):  # legacy accepted bools: True is SHUFFLE
            shuffle = int(shuffle)
        shuffle = _as_int(shuffle, "shuffle")
        if shuffle not in filters:
            raise ValueError(
                f"`shuffle` must be one of NOSHUFFLE (0), SHUFFLE (1) or BITSHUFFLE (2), "
                f"not {shuffle}"
            )
    if cname is not None:
        if not isinstance(cname, str) or cname not in _codec.CODECS:
            raise ValueError(
                f"Compressor {cname!r} is not available in this build; "
                f"available: {', '.join(_codec.CODECS)}"
            )
    if quantize is not None:
        quantize = _as_int(quantize, "quantize")
        if quantize < 0:
            raise ValueError(f"`quantize` must be 0 or a positive integer, not {quantize}")
    return clevel, shuffle, cname, quantize


def _check_blocking(blocksize: Any, bytedelta: Any) -> tuple[int, str]:
    """Validate the bcolzx-only cparams; None means the default."""
    if blocksize is None:
        blocksize = _layout.DEFAULT_BLOCKSIZE
    else:
        blocksize = _as_int(blocksize, "blocksize")
        if not 0 <= blocksize <= _codec.MAX_BUFFERSIZE:
            raise ValueError(f"`blocksize` must be 0 (automatic) or a positive number of "
                             f"bytes up to {_codec.MAX_BUFFERSIZE}, not {blocksize}")
    if bytedelta is None:
        bytedelta = _layout.DEFAULT_BYTEDELTA
    elif isinstance(bytedelta, (bool, np.bool_)):
        bytedelta = "on" if bytedelta else "off"
    if bytedelta not in _layout.BYTEDELTA_MODES:
        raise ValueError(f"`bytedelta` must be one of {_layout.BYTEDELTA_MODES} or a bool, "
                         f"not {bytedelta!r}")
    return blocksize, bytedelta



def _default_cparams() -> dict[str, Any]:
    """The live ``defaults.cparams`` dict (:mod:`bcolzx.defaults` imports this module)."""
    from bcolzx.defaults import defaults

    return defaults.cparams


# -- cparams -------------------------------------------------------------------


class cparams:  # noqa: N801 - legacy name
    """cparams(clevel=None, shuffle=None, cname=None, quantize=None, *, blocksize=None, bytedelta=None)

    Parameters for compression and the other filters; immutable.

    Parameters
    ----------
    clevel : int, optional
        Compression level, 0 (no compression) to 9.
    shuffle : int or bool, optional
        NOSHUFFLE (0), SHUFFLE (1) or BITSHUFFLE (2); True means SHUFFLE and
        False NOSHUFFLE, as in legacy bcolz.
    cname : str, optional
        The codec: one of :func:`bcolzx.blosc_compressor_list`.
    quantize : int, optional
        Significant digits to keep of floating-point data (lossy); 0 disables.
    blocksize : int, optional
        Keyword only, new in bcolzx: the C-Blosc2 block size in bytes (0 lets
        C-Blosc2 choose).  A random ``c[i]`` decompresses one block, so small
        blocks (8-16 KiB) make single-item reads fastest, large ones compress
        plain-shuffled data better.  Default: 32 KiB.
    bytedelta : {'auto', 'on', 'off'} or bool, optional
        Keyword only, new in bcolzx: follow the byte shuffle with C-Blosc2's
        byte-delta filter, which makes smooth numeric data (time stamps,
        prices, sensor series) compress several times better.  'auto' (the
        default) tries it on a sample of chunks and keeps it where it saves at
        least 10%.  Only used with ``shuffle=SHUFFLE``.

    A parameter among the legacy four left as None takes its current default
    from ``defaults.cparams`` (see :meth:`setdefaults`).

    Raises
    ------
    ValueError
        If a parameter is of the wrong type or out of range (legacy bcolz
        raised ValueError for both).

    Examples
    --------
    >>> from bcolzx.params import cparams
    >>> cparams(clevel=9, cname='zstd')
    cparams(clevel=9, shuffle=1, cname='zstd', quantize=0)
    >>> cparams(shuffle=False).shuffle
    0
    >>> cparams(blocksize=16384, bytedelta=False)
    cparams(clevel=5, shuffle=1, cname='lz4', quantize=0, blocksize=16384, bytedelta='off')
    """  # noqa: E501 - the first line is the signature Sphinx shows, on one line

    __slots__ = ("_clevel", "_shuffle", "_cname", "_quantize", "_blocksize", "_bytedelta")

    def __init__(
        self,
        clevel: int | None = None,
        shuffle: int | bool | None = None,
        cname: str | None = None,
        quantize: int | None = None,
        *,
        blocksize: int | None = None,
        bytedelta: str | bool | None = None,
    ) -> None:
        clevel, shuffle, cname, quantize = _check_cparams(clevel, shuffle, cname, quantize)
        self._blocksize, self._bytedelta = _check_blocking(blocksize, bytedelta)
        dflts = _default_cparams()
        # The defaults dict can be mutated in place (legacy code does), so what
        # comes from it is validated again.
        self._clevel, self._shuffle, self._cname, self._quantize = _check_cparams(
            dflts["clevel"] if clevel is None else clevel,
            dflts["shuffle"] if shuffle is None else shuffle,
            dflts["cname"] if cname is None else cname,
            dflts["quantize"] if quantize is None else quantize,
        )

    @property
    def clevel(self) -> int:
        """The compression level."""
        return self._clevel  # type: ignore[return-value]

    @property
    def shuffle(self) -> int:
        """The shuffle filter."""
        return self._shuffle  # type: ignore[return-value]

    @property
    def cname(self) -> str:
        """The codec name."""
        return self._cname  # type: ignore[return-value]

    @property
    def quantize(self) -> int:
        """The quantize filter: significant digits kept, 0 when disabled."""
        return self._quantize  # type: ignore[return-value]

    @property
    def blocksize(self) -> int:
        """The C-Blosc2 block size in bytes (0: chosen by C-Blosc2)."""
        return self._blocksize

    @property
    def bytedelta(self) -> str:
        """The byte-delta policy: 'auto', 'on' or 'off'."""
        return self._bytedelta

    @staticmethod
    def setdefaults(
        clevel: int | None = None,
        shuffle: int | bool | None = None,
        cname: str | None = None,
        quantize: int | None = None,
    ) -> None:
        """Change the defaults for compression parameters.

        Parameters not given (None) keep their current default.  All are
        validated before any is changed.

        Parameters
        ----------
        clevel, shuffle, cname, quantize
            As for :class:`cparams`.

        Raises
        ------
        ValueError
            If a parameter is invalid; the defaults are then unchanged.

        Examples
        --------
        >>> from bcolzx import cparams, defaults_ctx
        >>> with defaults_ctx():
        ...     cparams.setdefaults(clevel=1)
        ...     cparams().clevel
        1
        """
        checked = _check_cparams(clevel, shuffle, cname, quantize)
        dflts = _default_cparams()
        for key, value in zip(_CPARAMS_KEYS, checked):
            if value is not None:
                dflts[key] = value

    def to_dict(self) -> dict[str, Any]:
        """The parameters as ``{'clevel', 'shuffle', 'cname', 'quantize'}``.

        Returns
        -------
        dict

        Raises
        ------
        None
        """
        return {
            "clevel": self._clevel,
            "shuffle": self._shuffle,
            "cname": self._cname,
            "quantize": self._quantize,
        }

    def _key(self) -> tuple:
        return (self._clevel, self._shuffle, self._cname, self._quantize, self._blocksize,
                self._bytedelta)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, cparams):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        extra = ""
        if (self._blocksize, self._bytedelta) != (_layout.DEFAULT_BLOCKSIZE,
                                                  _layout.DEFAULT_BYTEDELTA):
            extra = f", blocksize={self._blocksize}, bytedelta='{self._bytedelta}'"
        return (
            f"{type(self).__name__}(clevel={self._clevel}, shuffle={self._shuffle}, "
            f"cname='{self._cname}', quantize={self._quantize}{extra})"
        )
