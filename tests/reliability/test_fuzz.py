"""Parsers of stored bytes, fed arbitrary and mutated input: bcolzx's errors only.

Hypothesis drives the targets of ``fuzzing.py`` with random bytes and with
mutations of valid files, a few hundred inputs each in the default run;
``pytest --stress`` runs ``benchmarks/fuzz_formats.py`` (atheris, libFuzzer)
for the published million inputs.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import fuzzing
from .campaigns import STRESS_TIMEOUT

SETTINGS = settings(max_examples=250, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
SEEDS = fuzzing.seeds()


@pytest.mark.parametrize("target", sorted(fuzzing.TARGETS))
@SETTINGS
@given(data=st.binary(max_size=600))
def test_random_bytes(target, data):
    fuzzing.run(target, data)


@pytest.mark.parametrize("target", sorted(fuzzing.TARGETS))
@SETTINGS
@given(which=st.integers(0, 100), seed=st.integers(0, 2**32 - 1))
def test_mutated_valid_files(target, which, seed):
    seeds = SEEDS[target]
    fuzzing.run(target, fuzzing.mutate(seeds[which % len(seeds)], np.random.default_rng(seed)))


@pytest.mark.parametrize("target", sorted(fuzzing.TARGETS))
def test_valid_seeds_parse(target):
    for seed in SEEDS[target]:
        fuzzing.run(target, seed)


def test_an_exception_outside_the_hierarchy_is_a_finding(monkeypatch):
    def broken(data):
        raise KeyError("not one of bcolzx's")

    monkeypatch.setitem(fuzzing.TARGETS, "header", broken)
    with pytest.raises(AssertionError, match="KeyError"):
        fuzzing.run("header", b"x")


@pytest.mark.stress
@pytest.mark.timeout(STRESS_TIMEOUT)
def test_published_fuzzing_campaign():
    """The figure of docs/reliability.md: one million inputs, no finding."""
    if importlib.util.find_spec("atheris") is None:
        pytest.skip("atheris is not installed: pip install atheris")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, os.path.join(root, "benchmarks", "fuzz_formats.py"),
                           "--runs", "1000000"], capture_output=True, text=True)
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
