"""``bcolzx demo`` keeps working as before the command line grew."""


def test_demo_runs_on_small_data(cli, tmp_path):
    r = cli("demo", "--rows", "20000", "--dir", tmp_path / "demo")
    assert r.code == 0, r
    assert (tmp_path / "demo").is_dir() and r.out


def test_demo_reports_its_own_errors(cli):
    r = cli("demo", "--rows", "1000", "--cname", "nosuch")
    assert r.code == 1 and r.err.startswith("bcolzx demo: error: ")
