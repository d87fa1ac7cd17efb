"""Dask over datasets on object storage: tasks read their chunks straight from the store."""

import pickle
import subprocess
import sys

import numpy as np
import pytest

import bcolzx
from tests.remote.test_remote import BCOLZX_PARENT, CL, SC

pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    """A distributed LocalCluster of two worker processes (each with its own memory)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def test_to_dask_reads_from_the_store(client, url, so):
    a = np.arange(SC * 3 + 77, dtype="f8")
    bcolzx.carray(a, rootdir=url, storage_options=so, mode="w", chunklen=CL)
    r = bcolzx.open(url, storage_options=so, mode="r")
    x = r.to_dask()
    assert x.numblocks[0] >= 3
    # the graph holds where the objects are, never data
    graph = pickle.dumps(dict(x.__dask_graph__()))
    assert len(graph) < a.nbytes // 20
    assert b"bcolzx-tests" in graph
    np.testing.assert_array_equal(client.compute(x).result(), a)
    assert client.compute(x[SC - 5:SC + 5].sum()).result() == a[SC - 5:SC + 5].sum()


def test_ctable_to_dask_dataframe(client, url, so):
    n = 50_000
    t = bcolzx.ctable([np.arange(n), np.arange(n) * 0.25], names=["i", "x"], rootdir=url,
                      storage_options=so, mode="w", chunklen=CL)
    df = bcolzx.open(url, storage_options=so, mode="r").to_dask(partition_rows=SC // 8)
    assert df.npartitions > 1
    got = client.compute(df[df.i % 1000 == 0].x.sum()).result()
    assert got == t["x"][::1000].sum()


def test_to_bcolzx_one_object_per_task_read_back_elsewhere(client, s3, url, so):
    da = pytest.importorskip("dask.array")
    x = da.arange(SC * 4 + 1000, chunks=SC, dtype="f8") * 1.5
    bcolzx.from_dask(x, url, storage_options=so, chunklen=CL)
    keys = sorted(p.rsplit("/", 1)[1] for p in s3.filesystem().find(f"{url[5:]}/data"))
    assert keys == [f"__{k}.bin" for k in range(5)]
    code = (f"import bcolzx, numpy as np; r = bcolzx.open({url!r}, storage_options={so!r}); "
            f"np.testing.assert_array_equal(r[:], np.arange({SC * 4 + 1000}, dtype='f8') * 1.5)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=BCOLZX_PARENT)


def test_to_bcolzx_dataframe_becomes_a_ctable(client, url, so):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    frame = pd.DataFrame({"a": np.arange(20_000), "b": np.arange(20_000) * 0.5})
    bcolzx.from_dask(dd.from_pandas(frame, npartitions=3), url, storage_options=so,
                     chunklen=CL)
    t = bcolzx.open(url, storage_options=so, mode="r")
    assert isinstance(t, bcolzx.ctable) and t.names == ["a", "b"]
    np.testing.assert_array_equal(t["b"][:], frame.b.to_numpy())


def test_failed_task_publishes_nothing(client, s3, url, so):
    da = pytest.importorskip("dask.array")

    # Defined here, so that cloudpickle sends it to the workers by value: the workers
    # cannot import this test module (in CI the `tests` package is not on their path,
    # and a worker that cannot unpickle a task stops serving the scheduler).
    def _fail_on_third_block(block, block_info=None):
        if block_info[0]["chunk-location"][0] == 2:
            raise RuntimeError("task failed")
        return block

    x = da.arange(SC * 4, chunks=SC, dtype="f8").map_blocks(_fail_on_third_block,
                                                           dtype="f8")
    with pytest.raises(RuntimeError, match="task failed"):
        bcolzx.from_dask(x, url, storage_options=so, chunklen=CL)
    with pytest.raises(bcolzx.errors.DatasetNotFoundError):
        bcolzx.open(url, storage_options=so)
    # Tasks still running when the failure is raised may upload their object after the
    # clean-up: no meta/ names it, and the next write in mode 'w' deletes it.
    assert not [p for p in s3.filesystem().find(url[len("s3://"):]) if "/meta/" in p]
    x = da.arange(SC * 2, chunks=SC, dtype="f8")
    bcolzx.from_dask(x, url, storage_options=so, chunklen=CL, mode="w")
    np.testing.assert_array_equal(bcolzx.open(url, storage_options=so)[:], np.arange(SC * 2.))
