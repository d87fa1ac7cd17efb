"""Fixtures of the object-storage tests: one local S3-compatible server (moto) per session.

The ``test`` extra installs ``moto[server]`` and s3fs (pyproject.toml), so
the server starts from the project's own files on a fresh clone.
"""

import itertools

import pytest

from tests.remote import s3server

_names = itertools.count()


@pytest.fixture(scope="session")
def s3():
    """A moto server on the loopback address, with the bucket ``bcolzx-tests``."""
    server = s3server.start()
    try:
        server.make_bucket("bcolzx-tests")
        yield server
    finally:
        server.stop()


@pytest.fixture
def url(s3):
    """A fresh ``s3://`` URL (nothing there yet)."""
    return f"s3://bcolzx-tests/t{next(_names)}"


@pytest.fixture
def so(s3):
    """The ``storage_options`` that reach the local server."""
    return s3.storage_options()
