"""A progress callback for the tests of ``progress=``: what it was told, block by block."""

from functools import partial

from bcolzx.interop._common import block_rows


class Recorder:
    """Keeps the total it is told (``set_total``) and the bytes of every call."""

    def __init__(self):
        self.total = None
        self.calls = []

    def set_total(self, total):
        assert self.total is None and not self.calls, "the total comes once, first"
        self.total = total

    def __call__(self, nbytes):
        self.calls.append(nbytes)

    def check(self, nbytes):
        """The calls add up to `nbytes`, announced first, and there were several."""
        assert self.total == nbytes, (self.total, nbytes)
        assert sum(self.calls) == nbytes, (sum(self.calls), nbytes)
        assert len(self.calls) > 1, self.calls


def small_blocks(monkeypatch, module, most=4096):
    """Make `module` move blocks of about `most` bytes (at least one chunk), so that
    small data takes several."""
    monkeypatch.setattr(module, "block_rows", partial(block_rows, most=most))
