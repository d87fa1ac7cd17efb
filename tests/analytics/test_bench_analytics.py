"""Smoke tests of the groupby and reduce groups of ``bcolzx bench``, at a tiny size:
every system installed answers, and answers the same; speed is never judged."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import bcolzx
from bcolzx.bench import analytics as A  # noqa: N812


@pytest.fixture(scope="module")
def doc(tmp_path_factory):
    return A.run([3000], ["groupby", "reduce-std"], repeat=1,
                 workdir=str(tmp_path_factory.mktemp("analytics")))


def test_every_installed_system_answers_alike(doc):
    want = {(wl, s) for wl in ("groupby", "reduce-std") for s in A.SYSTEMS
            if s not in doc["skipped"] and A.supports(s, wl)}
    got = {(r["workload"], r["system"]): r for r in doc["results"]}
    assert set(got) == want
    assert {"bcolzx-disk", "bcolzx-mem", "numpy"} <= set(doc["systems"])
    for key, r in got.items():
        assert "error" not in r, (key, r["error"])
        assert r["agrees"], key
        assert r["seconds"] > 0 and r["rss_mb"] > 0 and r["peak_mb"] >= 0
    text = A.text_report(doc)
    assert "groupby, 3,000 rows (1000 keys)" in text and "reduce-std" in text
    assert "DIFFERS" not in text


def test_data_is_made_from_the_seed():
    k, v = A.make(50_000, 3)
    k2, v2 = A.make(50_000, 3)
    assert np.array_equal(k, k2) and np.array_equal(v, v2)
    assert not np.array_equal(v, A.make(50_000, 4)[1])
    assert k.min() >= 0 and k.max() < A.NGROUPS and len(np.unique(k)) == A.NGROUPS


def test_results_that_differ_are_caught():
    a = [[0.0, 1.0], [2.0, 3.0]]
    assert A.agrees(a, [[0.0, 1.0], [2.0, 3.0 + 1e-12]])
    assert not A.agrees(a, [[0.0, 1.0], [2.0, 3.1]])
    assert not A.agrees(a, [[0.0], [2.0]])
    assert not A.agrees(1.0, 1.001) and A.agrees(1.0, 1.0)


def _bench(*argv, tmp_path):
    root = os.path.dirname(os.path.dirname(bcolzx.__file__))
    env = {**os.environ, "PYTHONPATH": root}
    return subprocess.run([sys.executable, "-m", "bcolzx", "bench", *argv], cwd=str(tmp_path),
                          capture_output=True, text=True, env=env, check=False)


def test_command(tmp_path):
    out = _bench("--workloads", "reduce-max,groupby", "--systems", "bcolzx,numpy",
                 "--size", "2000", "--repeat", "1", "--quiet", "--json", "r.json",
                 tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "reduce-max, 2,000 rows" in out.stdout
    doc = json.loads((tmp_path / "r.json").read_text())
    assert {(r["workload"], r["system"]) for r in doc["results"]} == {
        ("reduce-max", "bcolzx-disk"), ("reduce-max", "bcolzx-mem"), ("reduce-max", "numpy"),
        ("groupby", "bcolzx-disk"), ("groupby", "bcolzx-mem")}
    for bad in (["--workloads", "groupby,read"], ["--workloads", "groupby", "--systems", "x"]):
        out = _bench(*bad, "--size", "100", tmp_path=tmp_path)
        assert out.returncode == 2 and "error" in out.stderr
