"""Exchange carrays and ctables with other libraries and formats.

Each submodule imports its optional dependency lazily, inside the functions
that need it: importing :mod:`bcolzx` or :mod:`bcolzx.interop` never imports
pandas, PyTables, h5py, python-blosc2, zarr or pyarrow.  A missing
dependency raises ImportError, naming the pip extra, when a conversion is
first asked for.  ``docs/interop.md`` is the guide.

:mod:`bcolzx.interop.pandas`
    :func:`~bcolzx.interop.pandas.to_dataframe`,
    :func:`~bcolzx.interop.pandas.from_dataframe`
    (``ctable.todataframe`` and ``ctable.fromdataframe``).
:mod:`bcolzx.interop.pytables`
    :func:`~bcolzx.interop.pytables.to_hdf5`, :func:`~bcolzx.interop.pytables.from_hdf5`
    (``ctable.tohdf5`` and ``ctable.fromhdf5``).
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
"""
