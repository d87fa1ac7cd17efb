"""The examples of docs/remote.md run as written, against the local server they start."""

import doctest
from pathlib import Path

import pytest

pytest.importorskip("moto.server")

PAGE = Path(__file__).parents[2] / "docs" / "remote.md"


def test_remote_page_examples_run():
    result = doctest.testfile(str(PAGE), module_relative=False, verbose=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 10 and result.failed == 0
