"""bcolzx.params: cparams and its validation (the defaults it reads: test_defaults.py)."""

import doctest

import numpy as np
import pytest

import bcolzx
from bcolzx import params as params_module
from bcolzx._ext.codec import CODECS
from bcolzx.defaults import defaults
from bcolzx.params import cparams, filters
from tests.api.test_defaults import restore_defaults  # noqa: F401 - autouse fixture


# -- cparams -------------------------------------------------------------------


def test_cparams_defaults_match_legacy():
    assert defaults.cparams == {"clevel": 5, "shuffle": 1, "cname": "lz4", "quantize": 0}
    cp = cparams()
    assert (cp.clevel, cp.shuffle, cp.cname, cp.quantize) == (5, 1, "lz4", 0)
    assert repr(cp) == "cparams(clevel=5, shuffle=1, cname='lz4', quantize=0)"


def test_cparams_explicit_values():
    cp = cparams(clevel=9, shuffle=2, cname="zstd", quantize=3)
    assert cp.to_dict() == {"clevel": 9, "shuffle": 2, "cname": "zstd", "quantize": 3}
    assert repr(cp) == "cparams(clevel=9, shuffle=2, cname='zstd', quantize=3)"


@pytest.mark.parametrize("cname", sorted(CODECS))
def test_cparams_accepts_every_codec(cname):
    assert cparams(cname=cname).cname == cname


@pytest.mark.parametrize("flag, expected", [(True, 1), (False, 0)])
def test_cparams_shuffle_accepts_bools(flag, expected):
    cp = cparams(shuffle=flag)
    assert cp.shuffle == expected and type(cp.shuffle) is int


def test_cparams_accepts_numpy_integers():
    cp = cparams(clevel=np.int64(3), shuffle=np.uint8(0), quantize=np.int32(2))
    assert cp.to_dict() == {"clevel": 3, "shuffle": 0, "cname": "lz4", "quantize": 2}
    assert type(cp.clevel) is int


@pytest.mark.parametrize(
    "kwargs",
    [
        {"clevel": -1},
        {"clevel": 10},
        {"clevel": 5.0},
        {"clevel": "5"},
        {"clevel": True},
        {"shuffle": 3},
        {"shuffle": -1},
        {"shuffle": "shuffle"},
        {"cname": "snappy"},
        {"cname": b"lz4"},
        {"cname": ["lz4"]},
        {"quantize": -1},
        {"quantize": 1.5},
    ],
)
def test_cparams_rejects_invalid_values(kwargs):
    with pytest.raises(ValueError):
        cparams(**kwargs)
    with pytest.raises(ValueError):
        cparams.setdefaults(**kwargs)
    assert defaults.cparams == {"clevel": 5, "shuffle": 1, "cname": "lz4", "quantize": 0}


def test_unknown_codec_message_lists_the_codecs():
    with pytest.raises(ValueError) as info:
        cparams(cname="nope")
    for cname in CODECS:
        assert cname in str(info.value)


def test_cparams_properties_are_read_only():
    cp = cparams()
    with pytest.raises(AttributeError):
        cp.clevel = 1


def test_cparams_equality_and_hash():
    assert cparams() == cparams(clevel=5, shuffle=1, cname="lz4", quantize=0)
    assert cparams(clevel=1) != cparams(clevel=2)
    assert hash(cparams(cname="zstd")) == hash(cparams(cname="zstd"))
    assert cparams() != {"clevel": 5, "shuffle": 1, "cname": "lz4", "quantize": 0}


def test_setdefaults_changes_later_cparams_only():
    before = cparams()
    cparams.setdefaults(clevel=9, cname="zlib")
    assert defaults.cparams == {"clevel": 9, "shuffle": 1, "cname": "zlib", "quantize": 0}
    assert cparams().to_dict() == {"clevel": 9, "shuffle": 1, "cname": "zlib", "quantize": 0}
    assert before.clevel == 5  # existing objects are immutable
    cparams.setdefaults(shuffle=False, quantize=2)
    assert defaults.cparams == {"clevel": 9, "shuffle": 0, "cname": "zlib", "quantize": 2}


def test_setdefaults_is_all_or_nothing():
    with pytest.raises(ValueError):
        cparams.setdefaults(clevel=1, cname="nope")
    assert defaults.cparams["clevel"] == 5



# -- filters, examples -------------------------------------------------------------


def test_filters_match_legacy():
    assert filters == {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}
    assert (params_module.NOSHUFFLE, params_module.SHUFFLE, params_module.BITSHUFFLE) == (0, 1, 2)
    assert (bcolzx.NOSHUFFLE, bcolzx.SHUFFLE, bcolzx.BITSHUFFLE) == (0, 1, 2)



def test_docstring_examples_run():
    result = doctest.testmod(params_module, verbose=False)
    assert result.attempted > 0 and result.failed == 0


def test_cparams_blocksize_and_bytedelta():
    cp = cparams(blocksize=8192, bytedelta=True)
    assert (cp.blocksize, cp.bytedelta) == (8192, "on")
    assert cparams(bytedelta=False).bytedelta == "off"
    assert cparams().bytedelta == "auto" and cparams().blocksize == 32768
    assert cp != cparams() and cp == cparams(blocksize=8192, bytedelta="on")
    assert "blocksize=8192" in repr(cp) and "blocksize" not in repr(cparams())


@pytest.mark.parametrize("kwargs", [{"blocksize": -1}, {"blocksize": 1.5}, {"blocksize": True},
                                    {"blocksize": 1 << 40}, {"bytedelta": "yes"},
                                    {"bytedelta": 1}])
def test_cparams_rejects_bad_blocking(kwargs):
    with pytest.raises(ValueError):
        bcolzx.cparams(**kwargs)


def test_blocking_persists_with_the_dataset(tmp_path):
    path = str(tmp_path / "c")
    cp = bcolzx.cparams(blocksize=4096, bytedelta="off")
    c = bcolzx.carray(np.arange(10.0), rootdir=path, mode="w", cparams=cp)
    c.flush()
    assert bcolzx.open(path, mode="r").cparams == cp
