"""What the commands print (issue 22, item 4): bench's progress and stability, ls with an
unreadable dataset, one rule for compression options, one wording for a bad path, and
progress bars for whoever installs an extra for long work."""

import io
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import bcolzx
from bcolzx.bench.cli import Progress
from bcolzx.bench.report import ratio_table, stability, text_report
from bcolzx.cli.common import CPARAMS_RULE

from .conftest import subprocess_env


class Terminal(io.StringIO):
    def isatty(self):
        return True


# -- bench --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory):
    """``bcolzx bench`` at a tiny size, its stderr a pipe (as in a log or CI)."""
    where = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [sys.executable, "-m", "bcolzx", "bench", "--size", "2000", "--systems",
         "bcolzx,numpy", "--workloads", "read,sum,getitem", "--shapes", "linspace",
         "--repeat", "3", "--budget", "30", "--json", "out.json"],
        cwd=where, env=subprocess_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads((where / "out.json").read_text())


def test_bench_off_a_terminal_logs_a_line_per_finished_measurement(bench_run):
    proc, doc = bench_run
    lines = proc.stderr.splitlines()
    n = len(doc["results"])
    assert n == 6
    assert lines[0] == f"bcolzx bench: {n} measurements; a line as each finishes"
    done = [line for line in lines[1:] if line.startswith("[")]
    assert len(done) == n and "\r" not in proc.stderr
    for k, (line, rec) in enumerate(zip(done, doc["results"]), 1):
        assert line.startswith(f"[{k}/{n}]")
        assert f"{rec['workload']} {rec['system']}: " in line
        assert ("runs" if "runs" in rec else "calls") in line and "spread " in line


def test_bench_records_and_reports_the_spread_of_the_repeats(bench_run):
    proc, doc = bench_run
    for rec in doc["results"]:
        assert rec["spread"] is not None and rec["spread"] >= 0
        assert rec.get("runs", 3) == 3 or rec.get("calls", 0) >= 6
    header = proc.stdout.splitlines()
    table = header[header.index(next(h for h in header if h.startswith("workload"))):]
    assert table[0].split()[:4] == ["workload", "data", "bcolzx", "spread"]
    assert any(line.startswith("stability: ") for line in header)


def test_bench_records_the_version_and_commit_it_ran(bench_run):
    proc, doc = bench_run
    machine = doc["machine"]
    assert machine["bcolzx"] == bcolzx.__version__
    root = os.path.dirname(os.path.dirname(bcolzx.__file__))
    git = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel", "HEAD"],
                         capture_output=True, text=True)
    if git.returncode == 0 and os.path.realpath(git.stdout.split()[0]) == \
            os.path.realpath(root):
        assert machine["bcolzx_commit"].split("-")[0] == git.stdout.split()[1]
    else:
        assert "bcolzx_commit" in machine  # from the version, or None
    first = proc.stdout.splitlines()[0]
    assert f"bcolzx {bcolzx.__version__} (commit " in first


def test_bench_marks_unstable_cells():
    def rec(system, seconds, spread):
        return {"experiment": "main", "size": 1000, "shape": "linspace", "variant": "same",
                "workload": "read", "system": system, "seconds": seconds,
                "mbps": 8 / seconds, "runs": 3, "spread": spread}

    steady = {"results": [rec("bcolzx", 1.0, 0.05), rec("h5py", 2.0, 0.10)]}
    shaky = {"results": [rec("bcolzx", 1.0, 0.05), rec("h5py", 2.0, 0.45)]}
    assert ratio_table(steady, 1000, "same")[1] == [["read", "linspace", "8 MB/s", "5%",
                                                      "2.00x"]]
    assert ratio_table(shaky, 1000, "same")[1][0][-1] == "~2.00x"
    assert stability(steady, 1000, "same").startswith("stability: 0 of 2 figures unstable")
    assert stability(shaky, 1000, "same").startswith("stability: 1 of 2 figures unstable")
    doc = {**shaky, "machine": {"bcolzx": "1.0", "bcolzx_commit": "abc1234"}, "versions": {},
           "config": {"nthreads": 2}}
    text = text_report(doc)
    assert "bcolzx 1.0 (commit abc1234)" in text.splitlines()[0]
    assert "~: bcolzx's or the anchor's repeats spread over 20%" in " ".join(text.split())


def test_bench_draws_a_tqdm_bar_on_a_terminal():
    pytest.importorskip("tqdm", reason="tqdm (the 'bench' extra) draws the bar")
    out = Terminal()
    p = Progress(stream=out)
    p(1, 2, "1e6 linspace same read bcolzx")
    time.sleep(0.15)  # past tqdm's mininterval: the next update redraws
    p.finished(1, 2, "1e6 linspace same read bcolzx", {"workload": "read", "seconds": 1.0,
                                                        "mbps": 8.0, "runs": 1})
    p.close()
    text = out.getvalue()
    assert "bench" in text and "1/2" in text and "cell" in text
    assert "read bcolzx" in text  # the measurement under way, after the bar


def test_bench_without_tqdm_rewrites_one_line_on_a_terminal(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    out = Terminal()
    p = Progress(stream=out)
    p(1, 2, "first")
    p.finished(1, 2, "first", {"workload": "read", "error": "boom"})
    p(2, 2, "second")
    p.close()
    text = out.getvalue()
    assert text.startswith("\r[1/2]") and "\r[2/2]" in text and "\n" not in text


# -- ls -----------------------------------------------------------------------------------


def test_ls_prints_a_long_error_below_the_table_not_in_it(cli, tmp_path, carray_dir,
                                                          ctable_dir):
    clean = cli("ls", tmp_path).out.splitlines()
    broken = tmp_path / "b"
    bcolzx.carray(np.arange(10), rootdir=str(broken)).flush()
    (broken / "meta" / "sizes").write_text(json.dumps({"x" * 250: 1}))
    r = cli("ls", tmp_path)
    assert r.code == 0
    lines = r.out.splitlines()
    table, notes = lines[:4], lines[4:]
    width = max(len(line) for line in clean)
    assert max(len(line) for line in table) <= width + len(" unreadable [1]")
    assert [line.split()[0] for line in table[1:]] == ["a", "b", "t"]
    assert table[2].split()[1:] == ["carray", "?", "unreadable", "[1]"]
    assert len(notes) == 1 and notes[0].startswith("[1] b: CorruptDataError")
    assert str(broken / "meta" / "sizes") in notes[0]  # whole, and longer than a row
    assert len(notes[0]) > max(len(line) for line in table)


# -- one rule, one wording ----------------------------------------------------------------


def test_import_and_convert_help_state_one_rule_for_options_not_given(cli):
    helps = {cmd: " ".join(cli(cmd, "--help").out.split()) for cmd in ("import", "convert")}
    for text in helps.values():
        assert CPARAMS_RULE in text
        assert "once one of these is given" not in text
    assert "where a source records none, bcolzx's defaults" in helps["import"]


def test_import_options_not_given_keep_the_source_s(cli, tmp_path):
    pytest.importorskip("blosc2", reason="python-blosc2 writes Blosc2 frames")
    src = bcolzx.carray(np.arange(300_000) % 1000,
                        cparams=bcolzx.cparams(cname="zstd", clevel=3,
                                               shuffle=bcolzx.BITSHUFFLE))
    src.to_b2frame(str(tmp_path / "f.b2frame"))
    assert cli("import", "f.b2frame", "new", "--clevel", "7", "-q").code == 0
    got = bcolzx.open(str(tmp_path / "new"), mode="r")
    assert (got.cparams.cname, got.cparams.clevel, got.cparams.shuffle) == \
        ("zstd", 7, bcolzx.BITSHUFFLE)
    assert np.array_equal(got[:], src[:])


def test_import_of_a_zarr_group_keeps_each_column_s_codec(cli, tmp_path):
    pytest.importorskip("zarr", reason="zarr writes Zarr stores")
    ct = bcolzx.ctable([np.arange(50_000), np.linspace(0, 1, 50_000)], names=["i", "f"])
    ct.cols["i"].to_zarr  # noqa: B018 - the method exists
    import zarr
    from zarr.codecs import BloscCodec

    group = zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    for name, cname in (("i", "zstd"), ("f", "lz4")):
        group.create_array(name, data=ct[name][:], chunks=(10_000,),
                           compressors=[BloscCodec(cname=cname, clevel=2)])
    assert cli("import", "g.zarr", "t", "--clevel", "8", "-q").code == 0
    got = bcolzx.open(str(tmp_path / "t"), mode="r")
    assert {n: (got.cols[n].cparams.cname, got.cols[n].cparams.clevel) for n in got.names} == \
        {"i": ("zstd", 8), "f": ("lz4", 8)}


@pytest.mark.parametrize("words", [("info",), ("ls",), ("verify",), ("compact",),
                                   ("convert",), ("export", "{}", "out.npy")])
def test_a_bad_path_is_worded_alike_in_every_command(cli, tmp_path, words):
    (tmp_path / "file").write_text("x")
    for path, text in (("missing", "no such directory"), ("file", "not a directory")):
        argv = [w.format(path) for w in words] if len(words) > 1 else [*words, path]
        r = cli(*argv)
        assert r.code == 3, r
        assert r.err == f"bcolzx: error: {text}: {path}\n"


# -- progress bars for long work ----------------------------------------------------------


def test_every_extra_for_long_work_installs_tqdm():
    from tests.packaging.test_wheel_config import _pyproject

    extras = _pyproject()["project"]["optional-dependencies"]
    for name in ("blosc2", "hdf5", "h5py", "zarr", "arrow", "legacy", "bench", "progress",
                 "test"):
        assert any(req.startswith("tqdm") for req in extras[name]), name
