"""Every public name of legacy bcolz 1.2 exists in bcolzx, checked against the real thing.

The names are taken from the installed legacy bcolz (``bcolz-zipline``),
in a separate interpreter: ``dir()`` of the package, of its modules
(``bcolz.toplevel``, ``bcolz.attrs``, ``bcolz.ctable``, ``bcolz.defaults``,
``bcolz.utils``, ``bcolz.py2help``...), of the classes (``carray``,
``ctable``, ``attrs.attrs``, ``cparams``) and of instances of them.  A name
counts when it is public (no leading underscore) and legacy bcolz defined
it: names a module only imported (``os``, ``np``, ``json``, packaging's
``Version``, ``collections.OrderedDict``...) are not bcolz's API.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import bcolzx
import bcolzx.compat as compat

from tests.compat.test_alias import BCOLZX_PARENT, clean_modules, needs_legacy  # noqa: F401

# The same program lists the names on either side: run on legacy bcolz it
# also says which names bcolz defined; on bcolzx (after install()) it only
# lists what exists.
_LISTER = textwrap.dedent('''
    import __future__, json, sys, tempfile, types
    if sys.argv[1] == "bcolzx":
        import bcolzx.compat
        bcolzx.compat.install()
    import bcolz, bcolz.attrs, bcolz.toplevel, bcolz.utils, bcolz.py2help
    import numpy as np

    def own(value):
        """Whether legacy bcolz defined `value` (not merely imported it)."""
        if isinstance(value, types.ModuleType):
            return value.__name__.startswith("bcolz")
        if isinstance(value, __future__._Feature):
            return False
        if callable(value):
            module = getattr(value, "__module__", None)
            return module is not None and module.startswith("bcolz")
        return True

    tmp = tempfile.mkdtemp()
    objects = {
        "bcolz": bcolz,
        "bcolz.toplevel": bcolz.toplevel,
        "bcolz.attrs": bcolz.attrs,
        "bcolz.utils": bcolz.utils,
        "bcolz.py2help": bcolz.py2help,
        "bcolz.ctable (module)": sys.modules["bcolz.ctable"],
        "bcolz.defaults (module)": sys.modules["bcolz.defaults"],
        "bcolz.chunked_eval": sys.modules["bcolz.chunked_eval"],
        "carray": bcolz.carray,
        "ctable": bcolz.ctable,
        "attrs.attrs": bcolz.attrs.attrs,
        "cparams": bcolz.cparams,
        "defaults": bcolz.defaults,
        "cparams()": bcolz.cparams(),
        "carray()": bcolz.carray(np.arange(3)),
        "carray(rootdir)": bcolz.carray(np.arange(3), rootdir=tmp + "/c"),
        "ctable()": bcolz.ctable([np.arange(2), np.arange(2.0)], names=["a", "b"]),
        "ctable(rootdir)": bcolz.ctable([np.arange(2)], names=["a"], rootdir=tmp + "/t"),
    }
    objects["ctable().cols"] = objects["ctable()"].cols
    objects["carray().attrs"] = objects["carray(rootdir)"].attrs
    out = {}
    for label, obj in objects.items():
        names = [n for n in dir(obj) if not n.startswith("_")]
        if sys.argv[1] == "legacy":
            names = [n for n in names if own(getattr(obj, n))]
        out[label] = sorted(names)
    print(json.dumps(out))
''')

# Public names of legacy bcolz that bcolzx does not have, each with the
# reason (docs/migration.md, "Every legacy name").
NOT_PROVIDED: dict[str, set[str]] = {}


def _names(which: str) -> dict[str, list[str]]:
    env = dict(os.environ, PYTHONPATH=BCOLZX_PARENT)
    proc = subprocess.run([sys.executable, "-c", _LISTER, which], env=env, cwd=BCOLZX_PARENT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@needs_legacy
def test_every_public_name_of_legacy_bcolz_exists_in_bcolzx():
    legacy, ours = _names("legacy"), _names("bcolzx")
    assert set(legacy) == set(ours)
    missing = {label: sorted(set(names) - set(ours[label]) - NOT_PROVIDED.get(label, set()))
               for label, names in legacy.items()}
    assert {label: names for label, names in missing.items() if names} == {}
    # The table of exceptions stays honest: nothing in it is actually provided.
    for label, names in NOT_PROVIDED.items():
        assert not names & set(ours[label]), (label, names & set(ours[label]))


def test_the_lister_sees_the_alias(clean_modules):  # noqa: F811 - fixture
    # Sanity check of the harness itself: on bcolzx, the names come from the alias.
    ours = _names("bcolzx")
    assert "leftover_ptr" in ours["carray()"]
    assert "xrange" in ours["bcolz.py2help"]
    assert compat.LEGACY_API_VERSION and bcolzx.carray
