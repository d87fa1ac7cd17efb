"""Top-level functions of the bcolzx namespace (legacy bcolz names)."""

from __future__ import annotations

from bcolzx._ext import codec as _codec

__all__ = ["blosc_version", "blosc_compressor_list"]


def blosc_version() -> tuple[str, str]:
    """The C-Blosc2 library bcolzx runs with.

    Returns
    -------
    tuple of str
        ``(version, date)``, as legacy ``bcolz.blosc_version()`` returns.

    Raises
    ------
    None

    Examples
    --------
    >>> import bcolzx
    >>> version, date = bcolzx.blosc_version()
    >>> version.count(".") >= 2
    True
    """
    return _codec.blosc2_version(), _codec.blosc2_version_date()


def blosc_compressor_list() -> list[str]:
    """The codecs available for ``cparams(cname=...)``.

    Returns
    -------
    list of str

    Raises
    ------
    None

    Examples
    --------
    >>> import bcolzx
    >>> "lz4" in bcolzx.blosc_compressor_list()
    True
    """
    return _codec.compressor_list()
