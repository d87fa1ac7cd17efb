"""The Sphinx site in docs/: it builds with warnings as errors, its API reference
covers ``bcolzx.__all__``, and every example in its pages runs as written."""

from __future__ import annotations

import doctest
import importlib
import os
import re
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import pytest

import bcolzx

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"
#: The parent of the bcolzx that this test imports: the Sphinx subprocess must
#: document the same (installed) package, never an unbuilt source tree.
BCOLZX_PARENT = Path(bcolzx.__file__).resolve().parents[1]
BUILD_TIMEOUT = 600

#: Python examples that are not doctests, with the reason they cannot run here.
#: Pinned by count, so that a new untested example fails the test.
UNTESTED_EXAMPLES = {
    # compat.install() puts the `bcolz` alias into the interpreter (it refuses
    # while legacy bcolz is imported, as the compat tests do), and the upgrade
    # loop walks the reader's own data tree; tests/compat exercise both.
    "migration.md": 2,
}

_FENCE = re.compile(r"^(`{3,}|~{3,})([^\n]*)\n(.*?)^\1\s*$", re.MULTILINE | re.DOTALL)
_DIRECTIVES = {"code-block", "code", "sourcecode", "code-cell"}
_PYTHON = {"python", "py", "python3", "pycon", "ipython", "ipython3"}


# Markdown files that are data, not pages (docs/conf.py's exclude_patterns).
NOT_PAGES = {"benchmarks/tables.md", "benchmarks/tables-1e8.md"}


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.relative_to(DOCS).parts
                  and p.relative_to(DOCS).as_posix() not in NOT_PAGES)


def _doctest_pages() -> list[Path]:
    return [p for p in _pages() if ">>>" in p.read_text(encoding="utf-8")]


def _page_id(page: Path) -> str:
    return page.relative_to(DOCS).as_posix()


def _sphinx_available() -> None:
    for module in ("sphinx", "numpydoc", "myst_parser"):
        pytest.importorskip(module, reason="the docs build needs pip install 'bcolzx[docs]'")


def _read_inventory(path: Path) -> set[str]:
    """The object names of a Sphinx ``objects.inv`` (format version 2)."""
    raw = path.read_bytes()
    header, _, body = raw.partition(b"zlib.\n")
    assert header.startswith(b"# Sphinx inventory version 2"), header[:40]
    names = set()
    for line in zlib.decompress(body).decode("utf-8").splitlines():
        name, role = line.split(" ", 2)[:2]
        if role.startswith("py:"):
            names.add(name)
    return names


@pytest.fixture(scope="module")
def built_docs(tmp_path_factory) -> Path:
    """The HTML site, built once with ``-W --keep-going`` in a fresh directory."""
    _sphinx_available()
    out = tmp_path_factory.mktemp("html")
    cwd = tmp_path_factory.mktemp("cwd")  # outside the repository: no source tree on sys.path
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BCOLZX_PARENT),
                                                    env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
         str(DOCS), str(out)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert proc.returncode == 0, f"sphinx-build failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def test_docs_build_without_warnings(built_docs):
    for page in ("index.html", "quickstart.html", "api/carray.html", "format/README.html",
                 "migration.html"):
        assert (built_docs / page).is_file(), page


def test_site_uses_the_pydata_theme_with_its_additions(built_docs):
    index = (built_docs / "index.html").read_text(encoding="utf-8")
    assert "pydata-sphinx-theme.css" in index
    assert "_static/bcolzx.css" in index
    assert f"This documentation is of bcolzx {bcolzx.__version__}" in index


def test_benchmark_figures_are_full_width_links_to_their_files(built_docs):
    html = (built_docs / "benchmarks" / "README.html").read_text(encoding="utf-8")
    images = re.findall(r'(<a [^>]*href="([^"]+)"[^>]*>)?<img [^>]*src="([^"]+\.png)"[^>]*>',
                        html)
    assert len(images) >= 7
    for link, href, src in images:
        assert link and href == src, f"{src} is not a link to its full-size file"
    assert html.count('class="bcolzx-plot"') >= 7


def test_page_titles_are_final():
    """No page of the site is titled as a draft (the format pages are normative)."""
    for page in _pages():
        first = page.read_text(encoding="utf-8").lstrip().splitlines()[0]
        assert "draft" not in first.lower(), f"{_page_id(page)}: {first}"


def test_benchmark_page_names_the_version_its_results_came_from():
    import json

    page = (DOCS / "benchmarks" / "README.md").read_text(encoding="utf-8")
    for results in sorted((DOCS / "benchmarks").glob("results*.json")):
        version = json.loads(results.read_text(encoding="utf-8"))["machine"]["bcolzx"]
        assert version in page, f"{results.name} is from bcolzx {version}; the page must say so"


def test_every_page_is_built(built_docs):
    """Sphinx warns about pages outside every toctree; check that each one has its HTML."""
    for page in _pages():
        html = built_docs / page.relative_to(DOCS).with_suffix(".html")
        assert html.is_file(), f"{_page_id(page)} was not built"


def test_api_reference_covers_all_public_names(built_docs):
    documented = _read_inventory(built_docs / "objects.inv")
    missing = []
    for name in bcolzx.__all__:
        obj = getattr(bcolzx, name)
        canonical = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
        if f"bcolzx.{name}" not in documented and canonical not in documented:
            missing.append(name)
    assert not missing, f"not in the API reference (docs/api/): {missing}"


def test_api_reference_shows_docstrings(built_docs):
    html = (built_docs / "api" / "carray.html").read_text(encoding="utf-8")
    # numpydoc turned the sections into HTML, and private parameters stay hidden.
    assert "Append rows at the end." in html
    assert "Raises" in html and "ReadOnlyError" in html
    assert "_v1" not in html


@pytest.mark.parametrize("page", _doctest_pages(), ids=_page_id)
def test_page_examples_run(page, tmp_path, monkeypatch):
    # The pages write under tempfile.mkdtemp(): here, under this test's tmp_path.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    result = doctest.testfile(str(page), module_relative=False, encoding="utf-8",
                              optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} example(s) of {_page_id(page)} failed " \
                               "(the doctest report is in the captured stdout)"


def test_pages_with_examples_are_tested():
    ids = {_page_id(p) for p in _doctest_pages()}
    assert {"index.md", "quickstart.md", "guide/carray.md", "guide/ctable.md",
            "guide/persistence-and-durability.md", "guide/compression.md",
            "guide/queries.md", "guide/threads.md"} <= ids


def test_python_examples_are_doctests():
    """A Python example without ``>>>`` would never run: every one must be a doctest."""
    untested = {}
    for page in _pages():
        for match in _FENCE.finditer(page.read_text(encoding="utf-8")):
            words = re.findall(r"[\w-]+", match.group(2).lower())
            if words and words[0] in _DIRECTIVES:  # ```{code-block} python
                words = words[1:]
            if words and words[0] in _PYTHON and ">>>" not in match.group(3):
                untested[_page_id(page)] = untested.get(_page_id(page), 0) + 1
    assert untested == UNTESTED_EXAMPLES


# The modules whose docstrings the API reference renders (bcolzx.toplevel and
# bcolzx.ctable are run by tests/test_docs.py).
DOCUMENTED_MODULES = ["bcolzx.params", "bcolzx.defaults", "bcolzx.attrs", "bcolzx.carray",
                      "bcolzx.verify", "bcolzx.convert", "bcolzx.compact", "bcolzx.compat",
                      "bcolzx.errors"]


def test_docstring_examples_of_the_reference_run(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    attempted = 0
    for name in DOCUMENTED_MODULES:
        result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed"
        attempted += result.attempted
    assert attempted > 0
