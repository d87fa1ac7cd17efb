"""Progress bars: tqdm on a terminal only, never with --quiet, silent without tqdm."""

import io
import sys
import time

import pytest

from bcolzx.cli.progress import bar


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_draws_on_a_terminal_and_removes_the_bar():
    pytest.importorskip("tqdm", reason="tqdm (the 'progress' extra) draws the bars")
    out = Terminal()
    with bar(10 << 20, "verify", stream=out, delay=0) as advance:
        for _ in range(10):
            advance(1 << 20)
    text = out.getvalue()
    assert "verify" in text and "10.0M" in text  # bytes scaled by 1024


def test_a_total_told_on_the_way_is_drawn():
    pytest.importorskip("tqdm", reason="tqdm (the 'progress' extra) draws the bars")
    out = Terminal()
    with bar(None, "import", stream=out, delay=0) as advance:
        advance.set_total(10 << 20)  # as the importers do, once they know it
        time.sleep(0.15)  # past tqdm's mininterval: the next update redraws
        advance(10 << 20)
    assert "10.0M/10.0M" in out.getvalue()


def test_silent_off_a_terminal_or_quiet():
    for stream, quiet in ((io.StringIO(), False), (Terminal(), True)):
        with bar(100, "x", stream=stream, quiet=quiet, delay=0) as advance:
            advance.set_total(200)
            advance(50)
        assert stream.getvalue() == ""


def test_silent_without_tqdm(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm raises ImportError
    out = Terminal()
    with bar(100, "x", stream=out, delay=0) as advance:
        advance(100)
    assert out.getvalue() == ""


def test_the_commands_report_progress(cli, carray_dir, monkeypatch):
    """verify, convert and compact feed the bar the totals they announced."""
    import bcolzx.cli.progress as progress

    calls = {}

    class Recorder:
        def __init__(self, total, desc, **kwargs):
            self.total, self.done = total, 0
            calls[desc] = self

        def __call__(self, n=1):
            self.done += n

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

    for module in ("verify", "convert", "compact"):
        monkeypatch.setattr(f"bcolzx.cli.{module}.bar", Recorder)
    assert progress.bar is bar
    assert cli("verify", carray_dir).code == 0
    assert cli("compact", carray_dir).code == 0
    assert cli("convert", carray_dir, "--clevel", "9").code == 0
    verify = calls["verify a"]
    assert verify.total == verify.done == 1_600_000
    assert calls["compact"].total == calls["compact"].done == 1
    assert calls["convert"].total == calls["convert"].done == 2 * 1_600_000
