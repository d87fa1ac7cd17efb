"""Exchange ctables with other libraries: pandas and HDF5 (PyTables).

Each submodule imports its optional dependency lazily, inside the functions
that need it: importing :mod:`bcolzx` or :mod:`bcolzx.interop` never imports
pandas, PyTables or h5py.  A missing dependency raises ImportError when a
conversion is first asked for.

:mod:`bcolzx.interop.pandas`
    :func:`~bcolzx.interop.pandas.to_dataframe`,
    :func:`~bcolzx.interop.pandas.from_dataframe`
    (``ctable.todataframe`` and ``ctable.fromdataframe``).
:mod:`bcolzx.interop.hdf5`
    :func:`~bcolzx.interop.hdf5.to_hdf5`, :func:`~bcolzx.interop.hdf5.from_hdf5`
    (``ctable.tohdf5`` and ``ctable.fromhdf5``).
"""
