"""Wrong calls raise the documented exception, say what to do, and leave nothing behind.

The catalogue is ``badinput.py``; docs/reliability.md lists the same calls.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import bcolzx

from .badinput import CASES, Env

DOC = Path(__file__).resolve().parents[2] / "docs" / "reliability.md"


def _tree(path: str) -> str:
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        h.update(root.encode())
        for name in sorted(files):
            h.update(name.encode())
            with open(os.path.join(root, name), "rb") as f:
                h.update(f.read())
    return h.hexdigest()


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return Env(str(tmp_path_factory.mktemp("bad")))


@pytest.mark.parametrize("case", CASES, ids=[c.call for c in CASES])
def test_wrong_call_raises_what_the_catalogue_says(case, env):
    before, nthreads = _tree(env.root), bcolzx.defaults.nthreads
    with pytest.raises(case.exc) as info:
        case.run(env)
    assert case.fragment in str(info.value)
    assert _tree(env.root) == before, "a wrong call changed or left files on disk"
    assert bcolzx.defaults.nthreads == nthreads, "a wrong call changed a setting"
    assert len(env.c) == 10 and len(env.t) == 10


def test_the_datasets_are_intact_after_the_catalogue(env):
    for case in CASES:
        with pytest.raises(case.exc):
            case.run(env)
    assert bcolzx.verify(env.c.rootdir).ok and bcolzx.verify(env.t.rootdir).ok
    assert list(bcolzx.open(env.c.rootdir, mode="r")[:]) == list(range(10))


def test_the_docs_list_every_call():
    text = DOC.read_text(encoding="utf-8")
    missing = [c.call for c in CASES if f"`{c.call}`" not in text]
    assert not missing, f"docs/reliability.md does not list {missing}"
