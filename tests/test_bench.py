"""Smoke tests of ``bcolzx bench`` (the benchmark suite), at a tiny size.

They keep the suite working -- every workload runs, the tables and the JSON
have their structure, the command exits 0 -- and never judge speed. Only the
anchors installed in the test environment run.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

import bcolzx
from bcolzx.bench import Config, markdown_report, run, text_report
from bcolzx.bench.report import ratio, ratio_table, render_markdown, render_text, scaling_table
from bcolzx.bench.runner import WORKLOADS, expand, measure_peak, parse_size, resolve_systems
from bcolzx.bench.systems import SYSTEMS

TINY = dict(repeat=1, budget=0.0, latency_budget=0.0, max_calls=5, batch=3000)


def _env():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(bcolzx.__file__))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


@pytest.fixture(scope="module")
def doc(tmp_path_factory):
    """One tiny run of every workload, for bcolzx and NumPy (always installed)."""
    cfg = Config(sizes=[10_000], shapes=["linspace", "arange"], systems=["bcolzx", "numpy", "npy"],
                 workdir=str(tmp_path_factory.mktemp("bench")), **TINY)
    return run(cfg)


def test_every_workload_runs_for_bcolzx(doc):
    got = {r["workload"]: r for r in doc["results"] if r["system"] == "bcolzx"}
    assert set(got) == set(WORKLOADS)
    for wl, r in got.items():
        assert "error" not in r, (wl, r.get("error"))
        assert r["seconds"] > 0
        assert r["size"] == 10_000
    assert got["build-disk"]["files"] >= 1 and got["build-disk"]["cratio"] > 1
    assert got["getitem"]["median_us"] > 0 and got["getitem"]["calls"] >= 1
    assert got["read"]["mbps"] > 0


def test_records_and_json_structure(doc):
    assert doc["bcolzx_bench"] == 1
    assert doc["machine"]["bcolzx"] == bcolzx.__version__
    assert {"config", "versions", "settings", "skipped", "results", "total_seconds"} <= set(doc)
    keys = {"experiment", "size", "shape", "variant", "system", "workload", "nbytes"}
    for r in doc["results"]:
        assert keys <= set(r)
        assert "error" not in r, r
    json.loads(json.dumps(doc))  # plain JSON types only


def test_numpy_anchors_skip_what_they_cannot_do(doc):
    numpy = {r["workload"] for r in doc["results"] if r["system"] == "numpy"}
    assert "build-disk" not in numpy and "open" not in numpy and "read" in numpy
    npy = {r["workload"] for r in doc["results"] if r["system"] == "npy"}
    assert "build-mem" not in npy and "build-disk" in npy


def test_text_and_markdown_reports(doc):
    text = text_report(doc)
    assert "workload" in text and "bcolzx" in text and "numpy" in text
    assert "10,000 items" in text
    for wl in WORKLOADS:
        assert wl in text
    md = markdown_report(doc)
    assert "| workload | data | bcolzx |" in md
    assert "Every system's own figure" in md


def test_ratio_is_anchor_time_over_bcolzx_time():
    x = {"workload": "read", "seconds": 1.0, "mbps": 8.0}
    a = {"workload": "read", "seconds": 2.0, "mbps": 4.0}
    assert ratio(x, a) == 2.0
    assert ratio(x, {**a, "error": "boom"}) is None
    doc = {"results": [dict(r, experiment="main", size=1000, shape="linspace", variant="same",
                            system=s) for r, s in ((x, "bcolzx"), (a, "h5py"))]}
    header, rows = ratio_table(doc, 1000, "same")
    assert header == ["workload", "data", "bcolzx", "spread", "h5py"]
    assert rows == [["read", "linspace", "8 MB/s", "-", "2.00x"]]


def test_scaling_exponent_of_linear_data():
    recs = [{"experiment": "main", "size": n, "shape": "linspace", "variant": "same",
             "system": "bcolzx", "workload": "sum", "seconds": n * 1e-9, "mbps": 8e3}
            for n in (1000, 10_000, 100_000)]
    header, rows = scaling_table({"results": recs}, "same")
    assert rows[0][-4] == "1.00"  # exponent of time ~ size**k


def test_render():
    h, rows = ["a", "b", "c"], [["x", "y", "1.00x"], ["xx", "", "10.00x"]]
    text = render_text(h, rows)
    assert text.splitlines()[1].startswith("---")
    assert text.splitlines()[2].endswith(" 1.00x")
    assert render_markdown(h, rows).splitlines()[1] == "|:---|:---|---:|"


def test_parse_size_and_names():
    assert parse_size("1e6") == 10**6
    assert parse_size("2_000") == 2000
    assert parse_size("5M") == 5 * 10**6
    with pytest.raises(ValueError):
        parse_size("10")
    with pytest.raises(ValueError):
        parse_size("1.5e3x")
    assert expand("blosc2,bcolzx", SYSTEMS, {"blosc2": ("schunk", "b2nd")}) == [
        "schunk", "b2nd", "bcolzx"]
    with pytest.raises(ValueError, match="unknown system"):
        expand("nosuch", SYSTEMS, None, "system")


def test_missing_anchor_is_skipped_not_an_error(monkeypatch):
    cls = SYSTEMS["zarr"]
    monkeypatch.setattr(cls, "modules", ("bcolzx_no_such_module",))
    classes, skipped = resolve_systems(["zarr"])
    assert [c.key for c in classes] == ["bcolzx"]
    assert "zarr" in skipped and "pip install" in skipped["zarr"]


def test_installed_anchors_run(tmp_path):
    """Every installed anchor runs every workload it supports at its defaults, without error.

    (The command-line test below runs them at comparable settings.)
    """
    installed = [k for k, c in SYSTEMS.items() if c.available()[0]]
    cfg = Config(sizes=[5000], shapes=["random"], systems=installed, variants=["default"],
                 workdir=str(tmp_path), **TINY)
    out = run(cfg)
    errors = [(r["system"], r["variant"], r["workload"], r["error"]) for r in out["results"]
              if "error" in r]
    assert not errors
    ran = {r["system"] for r in out["results"]}
    assert ran == set(installed)
    # The report says what each of them keeps decompressed between calls.
    text = text_report(out)
    assert all(f"  {s}: " in text for s in installed), text


def test_reports_say_what_each_system_caches(doc):
    for report in (text_report(doc), markdown_report(doc)):
        assert "Kept decompressed between calls" in report or \
            "kept decompressed between calls" in report
        assert "bcolzx: chunks read twice, and every chunk of an array read whole, 64 MiB " \
               "for the process" in report
        assert "numpy: everything" in report and "npy: nothing of its own" in report


def test_reports_say_what_each_system_pays_for_durable_writes(doc):
    for report in (text_report(doc), markdown_report(doc)):
        flat = " ".join(report.split())
        assert "bcolzx commits durably (fsyncs) on its own; every anchor's files and " \
            "directories are fsynced after it writes, inside its timing" in flat
    lax = dict(doc, config=dict(doc["config"], durable=False))
    for report in (text_report(lax), markdown_report(lax)):
        flat = " ".join(report.split())
        assert "the anchors' files are not fsynced (--no-durable)" in flat
        assert "every anchor's files" not in flat


def test_peak_memory_in_a_child(tmp_path):
    path = str(tmp_path / "x.bcolzx")
    import numpy as np
    bcolzx.carray(np.linspace(0, 1e6, 10_000), rootdir=path, mode="w")
    got = measure_peak({"system": "bcolzx", "variant": "same", "nthreads": 1,
                        "chunk_bytes": 1 << 20, "workload": "sum", "n": 10_000,
                        "shape": "linspace", "seed": 0, "path": path, "batch": 1000,
                        "slice_width": 100})
    assert "peak_error" not in got, got
    assert got["peak_mb"] >= 0 and got["method"] in ("VmHWM", "ru_maxrss")


def test_cli_quick_run_writes_json(tmp_path):
    """``python -m bcolzx bench --size 1e4 --json out.json`` (the CI smoke run)."""
    out = subprocess.run([sys.executable, "-m", "bcolzx", "bench", "--size", "1e4",
                          "--json", "out.json"], cwd=tmp_path, env=_env(), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "workload" in out.stdout and "bcolzx" in out.stdout
    doc = json.loads((tmp_path / "out.json").read_text())
    assert doc["config"]["sizes"] == [10_000]
    assert {r["system"] for r in doc["results"]} >= {"bcolzx", "numpy", "npy"}
    assert not [(r["system"], r["workload"], r["error"]) for r in doc["results"] if "error" in r]


def test_cli_reports_a_saved_json(tmp_path, doc):
    (tmp_path / "r.json").write_text(json.dumps(doc))
    out = subprocess.run([sys.executable, "-m", "bcolzx", "bench", "--from-json", "r.json",
                          "--markdown", "r.md"], cwd=tmp_path, env=_env(), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "10,000 items" in out.stdout
    assert "| workload | data | bcolzx |" in (tmp_path / "r.md").read_text()


def test_cli_plot_without_or_with_matplotlib(tmp_path):
    out = subprocess.run([sys.executable, "-m", "bcolzx.bench", "--size", "1e4", "--systems",
                          "numpy", "--shapes", "linspace", "--workloads", "read,sum",
                          "--repeat", "1", "--plot", "plots"], cwd=tmp_path, env=_env(),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    from bcolzx.bench.plots import have_matplotlib
    if have_matplotlib():
        assert (tmp_path / "plots" / "throughput.png").exists()
    else:
        assert "needs matplotlib" in out.stderr


def test_cli_rejects_unknown_names(tmp_path):
    out = subprocess.run([sys.executable, "-m", "bcolzx", "bench", "--systems", "nosuch"],
                         cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "unknown system" in out.stderr


def test_progress_off_a_terminal_prints_a_line_per_finished_measurement():
    import io

    from bcolzx.bench.cli import Progress

    out = io.StringIO()
    p = Progress(stream=out)
    p(1, 2, "first")
    p.finished(1, 2, "first", {"workload": "read", "seconds": 1.0, "mbps": 8.0, "runs": 3,
                               "spread": 0.05})
    p(2, 2, "second")
    p.finished(2, 2, "second", {"workload": "read", "error": "boom"})
    p.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "bcolzx bench: 2 measurements; a line as each finishes"
    assert lines[1].startswith("[1/2]") and lines[1].endswith("first: 8 MB/s, 3 runs, spread 5%")
    assert lines[2].startswith("[2/2]") and lines[2].endswith("second: error: boom")
    assert len(lines) == 3
    quiet = io.StringIO()
    q = Progress(enabled=False, stream=quiet)
    q(0, 1, "x")
    q.finished(0, 1, "x", {"workload": "read", "error": "boom"})
    assert quiet.getvalue() == ""


def test_checkpoints_hold_every_finished_group(tmp_path):
    seen = []
    cfg = Config(sizes=[1000, 2000], shapes=["linspace"], systems=["bcolzx", "numpy"],
                 workloads=["read", "sum"], workdir=str(tmp_path / "w"), **TINY)
    doc = run(cfg, checkpoint=lambda d: seen.append(json.loads(json.dumps(d))))
    assert [sorted({r["size"] for r in d["results"]}) for d in seen] == [[1000], [1000, 2000]]
    assert seen[-1]["results"] == json.loads(json.dumps(doc["results"]))


@pytest.mark.skipif(shutil.which("valgrind") is None,
                    reason="valgrind is not installed: the instruction count needs it")
def test_open_instructions_counts_what_one_open_executes(tmp_path):
    """benchmarks/open_instructions.py: the difference of two children, per open."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
    try:
        import open_instructions
    finally:
        sys.path.pop(0)
    paths = open_instructions.build(str(tmp_path))
    count = open_instructions.per_open(paths["carray"], 3, None)
    assert 20_000 < count < 2_000_000, count  # an open runs Python code, and not a chunk's worth
    with pytest.raises(SystemExit):
        open_instructions.main(["--what", "table"])


def test_open_many_opens_every_dataset_once_a_round(tmp_path, monkeypatch, capsys):
    """benchmarks/bench_open_many.py: each dataset of each system opened once per
    round, its length checked; a record per system and kind, and the ratios."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
    try:
        import bench_open_many
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where it builds them
    opened = []
    real = bench_open_many.time_opens

    def counting(s, what, paths, rows, rng):
        opened.append((s.key, what, sorted(paths)))
        return real(s, what, paths, rows, rng)
    monkeypatch.setattr(bench_open_many, "time_opens", counting)
    records = bench_open_many.run("bcolzx,npy", "array,table", 3, 50, 2)
    assert [(r["what"], r["system"]) for r in records] == \
        [("array", "bcolzx"), ("array", "npy"), ("table", "bcolzx"), ("table", "npy")]
    assert all(r["median_us"] > 0 and r["datasets"] == 3 for r in records)
    assert len(opened) == 8 and all(len(p) == 3 for _, _, p in opened)  # 2 rounds x 2 x 2
    assert len({tuple(p) for _, _, p in opened}) == 4  # each system its own datasets
    assert bench_open_many.main(["--datasets", "2", "--rows", "10", "--rounds", "1",
                                 "--systems", "bcolzx,npy", "--what", "array",
                                 "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "arrays: 2 datasets of 10 rows" in out and "x" in out.splitlines()[-1]
    assert len(json.load(open(tmp_path / "r.json"))) == 2
    assert os.listdir(tmp_path) == ["r.json"]  # the datasets were built here, then removed
    with pytest.raises(SystemExit):
        bench_open_many.main(["--datasets", "0"])
