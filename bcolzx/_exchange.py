"""The data-exchange methods of carray and ctable, delegated to ``bcolzx.interop``.

Each method imports its format's module of :mod:`bcolzx.interop` when it is
called (``import bcolzx`` loads none of them, nor the packages they need)
and hands the work to it; the docstrings stay here, with the methods that
users call.  :class:`ArrayExchange` is a mixin of :class:`bcolzx.carray`,
:class:`TableExchange` of :class:`bcolzx.ctable`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from bcolzx._hosts import ArrayHost, TableHost
    from bcolzx.carray import carray
    from bcolzx.ctable import ctable
else:
    ArrayHost = object
    TableHost = object

__all__ = ["ArrayExchange", "TableExchange"]


class ArrayExchange(ArrayHost):
    """A carray to HDF5, a Blosc2 frame, Zarr and Dask (a mixin of :class:`bcolzx.carray`)."""

    def tohdf5(self, filepath, nodepath: str = "/carray", mode: str = "w", cparams=None,
               compression=None, *, progress=None, storage_options=None) -> None:
        """Write this array to an HDF5 dataset with h5py, chunk by chunk.

        See :func:`bcolzx.interop.h5py.to_hdf5` (the dtype, ``dflt`` and attrs
        are carried; Blosc2 filter when hdf5plugin is installed).

        `filepath` may also be the URL of object storage (``s3://...``,
        ``gs://...``, with `storage_options`): the file is written locally, then
        uploaded whole, so that no reader sees it incomplete (docs/remote.md).

        Raises
        ------
        ImportError
            If h5py is not installed.
        ValueError
            For a bad `mode` or `nodepath`, or an existing node at `nodepath`.
        TypeError
            For a dtype HDF5 cannot hold.
        AppendOnlyError
            With mode 'a' or 'r+' when a file is at the URL.
        RemoteError
            If the object store fails (nothing is published).
        """
        from bcolzx.interop.h5py import to_hdf5

        to_hdf5(cast("carray", self), filepath, nodepath=nodepath, mode=mode, cparams=cparams,
                compression=compression, progress=progress, storage_options=storage_options)

    def to_b2frame(self, path, layout: str = "auto", mode: str = "w", *,
                   progress=None, storage_options=None) -> None:
        """Write this array to a Blosc2 contiguous frame without compressing it again.

        See :func:`bcolzx.interop.b2frame.to_b2frame`; ``blosc2.open(path)``
        gives an NDArray (or an SChunk, see `layout`) with the same content.

        `path` may also be the URL of object storage (``s3://...``,
        ``gs://...``, with `storage_options`): the frame is written locally, then
        uploaded whole, so that no reader sees it incomplete (docs/remote.md).

        Raises
        ------
        ImportError
            If python-blosc2 is not installed.
        ValueError
            For a bad `layout` or `mode`.
        FileExistsError
            With ``mode='x'`` when `path` exists.
        RemoteError
            If the object store fails (nothing is published).
        """
        from bcolzx.interop.b2frame import to_b2frame

        to_b2frame(cast("carray", self), path, layout=layout, mode=mode, progress=progress,
                   storage_options=storage_options)

    def to_zarr(self, store, chunks=None, shards=None, mode: str = "w", cparams=None, *,
                progress=None, storage_options=None):
        """Write this array to a Zarr v3 array, block by block.

        See :func:`bcolzx.interop.zarr.to_zarr`.

        `store` may also be the URL of object storage (``s3://...``,
        ``gs://...``, with `storage_options`): the store is written locally, then
        uploaded, its metadata last, so that no reader sees it incomplete
        (docs/remote.md).

        Returns
        -------
        zarr.Array

        Raises
        ------
        ImportError
            If zarr is not installed.
        ValueError
            For bad `chunks`, `shards` or `mode`.
        TypeError
            For a dtype Zarr cannot hold.
        AppendOnlyError
            With mode 'w' when a store is at the URL (delete it first).
        RemoteError
            If the object store fails (nothing is published).
        """
        from bcolzx.interop.zarr import to_zarr

        return to_zarr(self, store, chunks=chunks, shards=shards, mode=mode, cparams=cparams,
                       progress=progress, storage_options=storage_options)

    def to_dask(self, chunks: int | None = None):
        """A Dask array over this carray; see :func:`bcolzx.interop.dask.to_dask_array`.

        On disk, each task reads its rows straight from the files (the graph
        holds no data).  ``dask.array.from_array(c, chunks=...)`` works too,
        with explicit `chunks` (``c.chunks`` keeps its legacy meaning).

        Returns
        -------
        dask.array.Array

        Raises
        ------
        ImportError
            If Dask is not installed.
        ValueError
            For a non-positive `chunks`.
        """
        from bcolzx.interop.dask import to_dask_array

        return to_dask_array(cast("carray", self), chunks=chunks)

    def __dask_tokenize__(self) -> str:
        """Dask's token: path and committed state on disk, never the data
        (see :func:`bcolzx.interop.dask.tokenize`)."""
        from bcolzx.interop.dask import tokenize

        return tokenize(cast("carray", self))


class TableExchange(TableHost):
    """A ctable to and from pandas, PyTables, Arrow and Parquet, Zarr and Dask (a mixin of
    :class:`bcolzx.ctable`)."""

    def todataframe(self, columns=None, orient: str = "columns"):
        """This table as a pandas DataFrame (see :func:`bcolzx.interop.pandas.to_dataframe`).

        Parameters
        ----------
        columns : sequence of str or str, optional
            The columns to read, in order (default: all but a stored index).
        orient : {'columns', 'index'}
            As in :meth:`pandas.DataFrame.from_dict`.

        Returns
        -------
        pandas.DataFrame

        Raises
        ------
        ImportError
            If pandas is not installed.
        KeyError
            For an unknown column in `columns`.
        ValueError
            For another `orient`, or a column whose rows are not scalars.
        """
        from bcolzx.interop.pandas import to_dataframe

        return to_dataframe(cast("ctable", self), columns=columns, orient=orient)

    @staticmethod
    def fromdataframe(df, **kwargs) -> "ctable":
        """A new ctable from a pandas DataFrame.

        See :func:`bcolzx.interop.pandas.from_dataframe`.

        Parameters
        ----------
        df : pandas.DataFrame
        **kwargs
            For the constructor: ``rootdir``, ``mode``, ``cparams``,
            ``chunklen``, ``expectedlen``...

        Returns
        -------
        ctable

        Raises
        ------
        ImportError
            If pandas is not installed.
        TypeError
            For a column dtype that cannot be stored.
        ValueError
            For bad column or index names, or missing values in string or
            nullable columns.
        """
        from bcolzx.interop.pandas import from_dataframe

        return from_dataframe(df, **kwargs)

    def tohdf5(self, filepath, nodepath: str = "/ctable", mode: str = "w", cparams=None,
               cname: str | None = None, *, progress=None, storage_options=None) -> None:
        """Write this table to a PyTables Table; see :func:`bcolzx.interop.pytables.to_hdf5`.

        Parameters
        ----------
        filepath : str or os.PathLike
            The file, or the URL of object storage (``s3://...``, ``gs://...``):
            the file is then written locally and uploaded whole (docs/remote.md).
        nodepath : str
            Where the table goes in the file (parents are created).
        mode : {'w', 'a', 'r+'}
            How the file is opened (at a URL, 'a' writes only where no file is,
            'r+' is refused).
        cparams : cparams, optional
            Compression level and shuffle (default: this table's).
        cname : str, optional
            A PyTables ``complib`` such as ``'blosc2:zstd'`` or ``'zlib'``.
        progress : callable, optional
            Called with the uncompressed bytes of each block of rows written.
        storage_options : dict, optional
            For a URL: the options of its fsspec filesystem.

        Raises
        ------
        ImportError
            If PyTables is not installed.
        ValueError
            For a bad `mode` or `cname`.
        TypeError
            For a column dtype that HDF5 cannot hold.
        AppendOnlyError
            With mode 'a' or 'r+' when a file is at the URL.
        RemoteError
            If the object store fails (nothing is published).
        """
        from bcolzx.interop.pytables import to_hdf5

        to_hdf5(cast("ctable", self), filepath, nodepath=nodepath, mode=mode, cparams=cparams,
                cname=cname, progress=progress, storage_options=storage_options)

    @staticmethod
    def fromhdf5(filepath, nodepath: str = "/ctable", **kwargs) -> "ctable":
        """A new ctable from a PyTables Table; see :func:`bcolzx.interop.pytables.from_hdf5`.

        Parameters
        ----------
        filepath : str or os.PathLike
        nodepath : str
        **kwargs
            For the constructor: ``rootdir``, ``mode``, ``cparams``...

        Returns
        -------
        ctable

        Raises
        ------
        ImportError
            If PyTables is not installed.
        FileNotFoundError
            If the file does not exist.
        TypeError
            If the node is not a Table.
        """
        from bcolzx.interop.pytables import from_hdf5

        return from_hdf5(filepath, nodepath=nodepath, **kwargs)

    def to_arrow(self, columns=None, batch_rows: int | None = None):
        """This table as a pyarrow Table (see :func:`bcolzx.interop.arrow.to_arrow`).

        Parameters
        ----------
        columns : sequence of str or str, optional
            The columns, in order (default: all).
        batch_rows : int, optional
            Rows per record batch (default: the shortest ``chunklen``).

        Returns
        -------
        pyarrow.Table

        Raises
        ------
        ImportError
            If pyarrow is not installed.
        KeyError
            For an unknown column.
        TypeError
            For a column dtype Arrow cannot hold.
        """
        from bcolzx.interop.arrow import to_arrow

        return to_arrow(cast("ctable", self), columns=columns, batch_rows=batch_rows)

    def to_parquet(self, path, columns=None, compression: str | None = None,
                   row_group_rows: int | None = None, mode: str = "w", *, progress=None,
                   storage_options=None, **writer_kwargs) -> None:
        """Write this table to a Parquet file by record batches.

        See :func:`bcolzx.interop.arrow.to_parquet`.

        `path` may also be the URL of object storage (``s3://...``,
        ``gs://...``, with `storage_options`): the file is written locally, then
        uploaded whole, so that no reader sees it incomplete (docs/remote.md).

        Raises
        ------
        ImportError
            If pyarrow is not installed.
        KeyError
            For an unknown column.
        TypeError
            For a column dtype Arrow cannot hold.
        FileExistsError
            With ``mode='x'`` when `path` exists.
        RemoteError
            If the object store fails (nothing is published).
        """
        from bcolzx.interop.arrow import to_parquet

        to_parquet(cast("ctable", self), path, columns=columns, compression=compression,
                   row_group_rows=row_group_rows, mode=mode, progress=progress,
                   storage_options=storage_options, **writer_kwargs)

    @staticmethod
    def from_arrow(data, rootdir=None, **kwargs) -> "ctable":
        """A new ctable from Arrow data (see :func:`bcolzx.interop.arrow.from_arrow`).

        Parameters
        ----------
        data : pyarrow.Table, RecordBatch, RecordBatchReader or Arrow C stream
        rootdir : str, optional
        **kwargs
            For the constructor: ``mode``, ``cparams``, ``chunklen``...

        Returns
        -------
        ctable

        Raises
        ------
        ImportError
            If pyarrow is not installed.
        TypeError
            For a column type a ctable cannot hold.
        ValueError
            For nulls where they are refused.
        """
        from bcolzx.interop.arrow import from_arrow

        return from_arrow(data, rootdir=rootdir, **kwargs)

    def to_zarr(self, store, chunks=None, shards=None, mode: str = "w", cparams=None, *,
                progress=None, storage_options=None):
        """Write this table to a Zarr v3 group, one array per column.

        See :func:`bcolzx.interop.zarr.to_zarr`; ``bcolzx.from_zarr`` reads it back.

        `store` may also be the URL of object storage (``s3://...``,
        ``gs://...``, with `storage_options`): the store is written locally, then
        uploaded, its metadata last, so that no reader sees it incomplete
        (docs/remote.md).

        Returns
        -------
        zarr.Group

        Raises
        ------
        ImportError
            If zarr is not installed.
        ValueError
            For bad `chunks`, `shards` or `mode`, or an attribute named ``bcolzx``.
        AppendOnlyError
            With mode 'w' when a store is at the URL (delete it first).
        RemoteError
            If the object store fails (nothing is published).
        """
        from bcolzx.interop.zarr import to_zarr

        return to_zarr(self, store, chunks=chunks, shards=shards, mode=mode, cparams=cparams,
                       progress=progress, storage_options=storage_options)

    def to_dask(self, columns=None, index=None, sorted: bool | None = None,
                partition_rows: int | None = None):
        """A Dask DataFrame over this table; see :func:`bcolzx.interop.dask.to_dask_dataframe`.

        Built with ``dask.dataframe.from_map``: column selections are pushed
        into the reads, and ``divisions`` are known when the index is the
        row number or a sorted column.

        Returns
        -------
        dask.dataframe.DataFrame

        Raises
        ------
        ImportError
            If Dask or pandas is not installed.
        KeyError
            For an unknown column.
        ValueError
            For a non-positive `partition_rows`.
        """
        from bcolzx.interop.dask import to_dask_dataframe

        return to_dask_dataframe(cast("ctable", self), columns=columns, index=index, sorted=sorted,
                                 partition_rows=partition_rows)

    def __dask_tokenize__(self) -> str:
        """Dask's token: paths and committed states on disk, never the data."""
        from bcolzx.interop.dask import tokenize

        return tokenize(cast("ctable", self))
