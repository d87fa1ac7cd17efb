"""Build the Cython extensions of bcolzx against the C-Blosc2 in the blosc2 wheel.

Metadata lives in pyproject.toml; this file only lists the extensions.
Set ``BCOLZX_DEBUG=1`` to build with bounds and wraparound checks on.
"""

import os
import sys
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent
VENDOR = HERE / "c-blosc-vendor"
sys.path.insert(0, str(VENDOR))
from find_blosc2 import locate  # noqa: E402

DEBUG = os.environ.get("BCOLZX_DEBUG", "") not in ("", "0")
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
    "linetrace": False,
}
CFLAGS = ["-O0", "-g"] if DEBUG else ["-O3"]

blosc2 = locate()
extensions = [
    # The only module that links C-Blosc2; others reach it through codec.pxd.
    Extension(
        "bcolzx._ext.codec",
        ["bcolzx/_ext/codec.pyx"],
        extra_compile_args=CFLAGS,
        **blosc2.extension_kwargs(),
    ),
    # The base of codec's classes (their locks) and the threads callback of a
    # forked child; calls nothing in C-Blosc2.
    Extension(
        "bcolzx._ext.contexts",
        ["bcolzx/_ext/contexts.pyx"],
        extra_compile_args=CFLAGS,
    ),
    # blosc2.h for the special-value kinds (a header enum); no C-Blosc2 linked.
    Extension(
        "bcolzx._ext.special",
        ["bcolzx/_ext/special.pyx"],
        include_dirs=[str(blosc2.include_dir)],
        extra_compile_args=CFLAGS,
    ),
    Extension(
        "bcolzx._ext.checksum",
        ["bcolzx/_ext/checksum.pyx"],
        extra_compile_args=CFLAGS,
    ),
    # A dataset's small metadata files read, looked up and their seals checked (opening).
    Extension(
        "bcolzx._ext.metafiles",
        ["bcolzx/_ext/metafiles.pyx"],
        extra_compile_args=CFLAGS,
    ),
    Extension(
        "bcolzx._ext.writeback",
        ["bcolzx/_ext/writeback.pyx"],
        extra_compile_args=CFLAGS,
    ),
    # The superchunk file format: header and layout / index copies.
    Extension(
        "bcolzx._ext.header",
        ["bcolzx/_ext/header.pyx"],
        extra_compile_args=CFLAGS,
    ),
    Extension(
        "bcolzx._ext.index",
        ["bcolzx/_ext/index.pyx"],
        extra_compile_args=CFLAGS,
    ),
    # NumPy's StringDType arrays (NpyString API): NumPy 2's C API, imported only
    # for StringDType data.
    Extension(
        "bcolzx._ext.strings",
        ["bcolzx/_ext/strings.pyx"],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION"),
                       ("NPY_TARGET_VERSION", "NPY_2_0_API_VERSION")],
        extra_compile_args=CFLAGS,
    ),
    # Groupby: keys factorized, aggregates accumulated, with the GIL released.
    Extension(
        "bcolzx._ext.groupby",
        ["bcolzx/_ext/groupby.pyx"],
        extra_compile_args=CFLAGS,
    ),
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=DIRECTIVES,
        include_path=[str(VENDOR)],
    ),
)
