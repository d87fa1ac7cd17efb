"""The ``bcolzx`` entry point: parser, exit statuses, one-line errors, the console script."""

import os
import shutil
import sys

import pytest

import bcolzx
from bcolzx.cli import COMMANDS
from bcolzx.cli.common import EXIT_STATUS_HELP

SUBCOMMANDS = ["info", "ls", "verify", "repair", "convert", "compact", "export", "import", "demo",
               "bench", "install-shim", "uninstall-shim"]


def test_help_lists_every_command_and_the_exit_statuses(cli):
    r = cli("--help")
    assert r.code == 0
    for name in SUBCOMMANDS:
        assert f"    {name}" in r.out, name
    assert "exit status:" in r.out and "130" in r.out and "verify: damage found" in r.out


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_command_has_its_help(cli, command):
    r = cli(command, "--help")
    assert r.code == 0 and r.out.startswith(f"usage: bcolzx {command}")


def test_every_registered_module_is_a_command_module():
    import importlib

    for name in COMMANDS:
        assert callable(importlib.import_module(f"bcolzx.cli.{name}").register)


def test_version(cli):
    r = cli("--version")
    assert r.code == 0 and r.out.strip() == f"bcolzx {bcolzx.__version__}"


@pytest.mark.parametrize("words", [[], ["nosuch"], ["info"], ["verify"], ["info", "a", "b"],
                                   ["convert", "a", "--clevel", "10"],
                                   ["convert", "a", "--cname", "nosuch"],
                                   ["convert", "a", "--shuffle", "sideways"],
                                   ["convert", "a", "--chunklen", "0"],
                                   ["ls", ".", "--kind", "table"]])
def test_usage_errors_exit_2(cli, words):
    r = cli(*words)
    assert r.code == 2 and "usage: bcolzx" in r.err


def test_errors_are_one_line_with_status_3_and_no_traceback(run, tmp_path):
    (tmp_path / "plain").mkdir()
    for words in (["info", "missing"], ["compact", "plain"], ["convert", "missing"]):
        r = run(*words)
        assert r.code == 3, (words, r)
        assert r.err.startswith("bcolzx: error: ") and r.err.count("\n") == 1, r.err
        assert "Traceback" not in r.err and r.out == "" and words[1] in r.err


def test_damaged_data_met_by_a_command_points_to_verify(cli, carray_dir):
    os.remove(carray_dir / "meta" / "storage")
    (carray_dir / "meta" / "storage").write_text("{not json")
    r = cli("info", carray_dir)
    assert r.code == 3 and "damaged data" in r.err and "bcolzx verify" in r.err


def test_ctrl_c_exits_130_with_a_message(cli, carray_dir, monkeypatch):
    def interrupted(path):
        raise KeyboardInterrupt

    monkeypatch.setattr("bcolzx.cli.info.describe", interrupted)
    r = cli("info", carray_dir)
    assert r.code == 130 and r.err == "bcolzx: interrupted\n"


def test_a_bug_keeps_its_traceback(cli, carray_dir, monkeypatch):
    def bug(path):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr("bcolzx.cli.info.describe", bug)
    with pytest.raises(ZeroDivisionError):
        cli("info", carray_dir)


def test_python_dash_m_runs_a_command(run, carray_dir):
    r = run("info", carray_dir.name)
    assert r.code == 0, r
    assert r.out.startswith("a: carray, bcolzx format") and "(200000,)" in r.out


def test_console_script(run, carray_dir, ctable_dir):
    script = shutil.which("bcolzx", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("console script not installed next to this Python (in-place build)")
    r = run("ls", ".", command=(script,))
    assert r.code == 0, r
    assert "a " in r.out and "t " in r.out and "200,000" in r.out
    r = run("verify", "a", "t", command=(script,))
    assert r.code == 0 and r.out.count(": OK") == 2
    assert run("info", "missing", command=(script,)).code == 3


def test_epilog_documents_every_status():
    for code in ("0", "1", "2", "3", "130", "141"):
        assert f"\n  {code} " in "\n" + EXIT_STATUS_HELP


def test_docs_page_covers_every_command_and_status():
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
    text = page.read_text()
    for name in SUBCOMMANDS:
        assert f"## `bcolzx {name}" in text or f"`bcolzx {name}" in text, name
    for code in ("0", "1", "2", "3", "130", "141"):
        assert f"| {code} |" in text, code


def test_reader_gone_exits_141_quietly(cli, carray_dir, monkeypatch):
    def gone(*args, **kwargs):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("bcolzx.cli.ls.print", gone, raising=False)
    r = cli("ls")
    assert r.code == 141 and r.err == ""
