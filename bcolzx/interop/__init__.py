"""The registry of optional formats: which module converts what, loaded on first use.

Every exchange format lives in a submodule of its own, and every optional
package it needs (pandas, PyTables, h5py, python-blosc2, zarr, pyarrow,
Dask) is imported inside the functions that need it.  This package only
*registers* them, as zarr-python's ``registry`` does for codecs and stores:
:data:`FORMATS` maps a format's name to its module path, the functions the
module offers, the optional packages it needs and the pip extra that
installs them.  Nothing is imported until asked for: ``import bcolzx`` (and
``import bcolzx.interop``) loads no format module, and the format functions
of the ``bcolzx`` namespace (``bcolzx.from_zarr``...) are resolved through
:func:`exported` on first use.  A missing optional package raises
ImportError, naming the pip extra, when a conversion is first asked for.
``docs/interop.md`` is the guide.

:mod:`bcolzx.interop.pandas`
    :func:`~bcolzx.interop.pandas.to_dataframe`,
    :func:`~bcolzx.interop.pandas.from_dataframe`
    (``ctable.todataframe`` and ``ctable.fromdataframe``).
:mod:`bcolzx.interop.pytables`
    :func:`~bcolzx.interop.pytables.to_hdf5`, :func:`~bcolzx.interop.pytables.from_hdf5`
    (``ctable.tohdf5`` and ``ctable.fromhdf5``): PyTables Tables, as legacy bcolz.
:mod:`bcolzx.interop.h5py`
    :func:`~bcolzx.interop.h5py.to_hdf5`, :func:`~bcolzx.interop.h5py.from_hdf5`,
    :func:`~bcolzx.interop.h5py.fromhdf5` (``carray.tohdf5``, ``bcolzx.fromhdf5``):
    any HDF5 dataset with h5py.
:mod:`bcolzx.interop.b2frame`
    :func:`~bcolzx.interop.b2frame.to_b2frame`,
    :func:`~bcolzx.interop.b2frame.from_b2frame` (``carray.to_b2frame``,
    ``bcolzx.from_b2frame``): Blosc2 contiguous frames, chunks copied as they are.
:mod:`bcolzx.interop.zarr`
    :func:`~bcolzx.interop.zarr.to_zarr`, :func:`~bcolzx.interop.zarr.from_zarr`
    (``carray.to_zarr``, ``ctable.to_zarr``, ``bcolzx.from_zarr``): Zarr v3.
:mod:`bcolzx.interop.arrow`
    :func:`~bcolzx.interop.arrow.to_arrow`, :func:`~bcolzx.interop.arrow.to_reader`,
    :func:`~bcolzx.interop.arrow.to_parquet`, :func:`~bcolzx.interop.arrow.from_arrow`,
    :func:`~bcolzx.interop.arrow.from_parquet` (``ctable.to_arrow``,
    ``ctable.to_parquet``, ``ctable.from_arrow``, ``bcolzx.from_arrow``,
    ``bcolzx.from_parquet``).
:mod:`bcolzx.interop.dask`
    Dask arrays and dataframes over datasets (``carray.to_dask``,
    ``ctable.to_dask``), parallel writes (``bcolzx.from_dask``,
    ``bcolzx.to_bcolzx``) and ``vm='dask'``.
:mod:`bcolzx.interop.npy`
    :func:`~bcolzx.interop.npy.to_npy`, :func:`~bcolzx.interop.npy.from_npy`:
    NumPy ``.npy`` files, streamed (NumPy only; ``bcolzx export/import``).
:mod:`bcolzx.interop.duckdb`
    :func:`~bcolzx.interop.duckdb.register` (``bcolzx.duckdb.register``): SQL
    over a ctable, scanned as an Arrow dataset with projection and filter
    push-down (:func:`~bcolzx.interop.arrow.to_dataset`, also for Polars).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

__all__ = ["Format", "FORMATS", "EXPORTS", "load", "function", "exported", "available"]


@dataclass(frozen=True)
class Format:
    """One registered format: where it lives, what it offers, what it needs.

    Attributes
    ----------
    name : str
        The registry key, also the submodule's name (``bcolzx.interop.<name>``).
    module : str
        The module's import path.
    functions : tuple of str
        The public functions the module offers.
    requires : tuple of str
        The optional packages (import names) its conversions need.
    extra : str or None
        The pip extra that installs them (``pip install 'bcolzx[extra]'``).
    exports : tuple of str
        Its functions that are also names of the ``bcolzx`` namespace.
    """

    name: str
    module: str
    functions: tuple[str, ...]
    requires: tuple[str, ...]
    extra: str | None
    exports: tuple[str, ...] = ()


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("pandas", "bcolzx.interop.pandas", ("to_dataframe", "from_dataframe"),
           ("pandas",), "pandas"),
    Format("pytables", "bcolzx.interop.pytables", ("to_hdf5", "from_hdf5"),
           ("tables",), "hdf5"),
    Format("h5py", "bcolzx.interop.h5py", ("to_hdf5", "from_hdf5", "fromhdf5"),
           ("h5py",), "h5py", exports=("fromhdf5",)),
    Format("b2frame", "bcolzx.interop.b2frame", ("to_b2frame", "from_b2frame"),
           ("blosc2",), "blosc2", exports=("from_b2frame",)),
    Format("zarr", "bcolzx.interop.zarr", ("to_zarr", "from_zarr"),
           ("zarr",), "zarr", exports=("from_zarr",)),
    Format("arrow", "bcolzx.interop.arrow",
           ("to_arrow", "to_reader", "to_dataset", "to_parquet", "from_arrow",
            "from_parquet"),
           ("pyarrow",), "arrow", exports=("from_arrow", "from_parquet")),
    Format("dask", "bcolzx.interop.dask",
           ("to_dask_array", "to_dask_dataframe", "tokenize", "from_dask", "to_bcolzx",
            "evaluate_blocks", "evaluate", "local_vm"),
           ("dask",), "dask", exports=("from_dask", "to_bcolzx")),
    Format("npy", "bcolzx.interop.npy", ("to_npy", "from_npy", "npy_header"), (), None),
    Format("duckdb", "bcolzx.interop.duckdb", ("register",), ("duckdb", "pyarrow"), "duckdb"),
)}

#: The format functions of the ``bcolzx`` namespace: name -> the format offering it.
EXPORTS: dict[str, str] = {name: f.name for f in FORMATS.values() for name in f.exports}


def _format(name: str) -> Format:
    try:
        return FORMATS[name]
    except KeyError:
        raise KeyError(f"no format {name!r} is registered; known: {', '.join(FORMATS)}") from None


def load(name: str) -> ModuleType:
    """The module of format `name`, imported on first use (its optional package is not).

    Parameters
    ----------
    name : str
        A key of :data:`FORMATS`.

    Returns
    -------
    module

    Raises
    ------
    KeyError
        If no format `name` is registered.
    """
    return importlib.import_module(_format(name).module)


def function(name: str, func: str) -> Callable[..., Any]:
    """The function `func` of format `name`, its module imported on first use.

    Parameters
    ----------
    name : str
        A key of :data:`FORMATS`.
    func : str
        One of the format's ``functions``.

    Returns
    -------
    callable

    Raises
    ------
    KeyError
        If no format `name` is registered, or it offers no `func`.
    """
    fmt = _format(name)
    if func not in fmt.functions:
        raise KeyError(f"format {name!r} offers no {func!r}; it offers "
                       f"{', '.join(fmt.functions)}")
    return getattr(load(name), func)


def exported(name: str) -> Callable[..., Any]:
    """The format function that is ``bcolzx.<name>`` (see :data:`EXPORTS`).

    Raises
    ------
    AttributeError
        If `name` is not a format function of the ``bcolzx`` namespace.
    """
    try:
        fmt = EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'bcolzx' has no attribute {name!r}") from None
    return function(fmt, name)


def available(name: str) -> bool:
    """Whether the optional packages of format `name` are installed (none is imported).

    Raises
    ------
    KeyError
        If no format `name` is registered.
    """
    return all(importlib.util.find_spec(pkg) is not None for pkg in _format(name).requires)


def __getattr__(name: str) -> ModuleType:  # PEP 562: bcolzx.interop.<format> on first use
    if name in FORMATS:
        return load(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *FORMATS})
