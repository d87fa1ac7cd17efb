"""Progress bars of the command line: tqdm on a terminal, nothing otherwise.

A bar is drawn only when all of these hold: ``--quiet`` was not given, the
stream (stderr) is a terminal, tqdm is installed (``pip install
'bcolzx[progress]'``), and the work has lasted over a second (tqdm's
``delay``).  Otherwise the callback does nothing, so commands call it
unconditionally.  The bar is removed when the work ends.
"""

from __future__ import annotations

import sys
import time

__all__ = ["bar"]


class _Silent:
    """A progress callback that draws nothing."""

    #: Whether a bar is drawn (callers with a fallback of their own look).
    drawing = False

    def __call__(self, n: int = 1) -> None:
        pass

    def note(self, text: str) -> None:
        """Show `text` after the bar (what is under way)."""

    def set_total(self, total: int) -> None:
        """Make `total` the units of the whole work (the interop functions announce it)."""

    def close(self) -> None:
        pass

    def __enter__(self) -> "_Silent":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Bar(_Silent):
    """A progress callback over a tqdm bar."""

    drawing = True

    def __init__(self, tqdm_bar) -> None:
        self._bar = tqdm_bar

    def __call__(self, n: int = 1) -> None:
        self._bar.update(n)

    def note(self, text: str) -> None:
        b = self._bar
        b.set_postfix_str(text, refresh=False)
        if time.time() >= b.start_t + b.delay:  # tqdm's clock; not drawn before its delay
            b.refresh()

    def set_total(self, total: int) -> None:
        self._bar.total = total  # drawn at the next update (not before tqdm's delay)

    def close(self) -> None:
        self._bar.close()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def bar(total: int | None, desc: str, *, unit: str = "B", quiet: bool = False,
        stream=None, delay: float = 1.0) -> _Silent:
    """A progress callback ``advance(n)`` for work of `total` units.

    Parameters
    ----------
    total : int or None
        Units of the whole work (None: unknown, the bar counts up).
    desc : str
        Text before the bar.
    unit : str
        ``"B"`` counts bytes (shown as KiB, MiB...); anything else plain units.
    quiet : bool
        Never draw.
    stream : file, optional
        Where to draw (default ``sys.stderr``).
    delay : float
        Seconds before the bar appears: work that ends sooner shows nothing.

    Returns
    -------
    callable
        Call it with the units just done; ``set_total(n)`` sets (or
        corrects) `total` on the way; ``note(text)`` shows what is under way
        after the bar; use it as a context manager (or call ``close()``) to
        remove the bar at the end.  Its ``drawing`` is whether a bar is
        drawn at all.

    Raises
    ------
    None
        Without tqdm, or off a terminal, the callback silently does nothing.
    """
    stream = sys.stderr if stream is None else stream
    if quiet or not _isatty(stream):
        return _Silent()
    try:
        from tqdm import tqdm
    except ImportError:
        return _Silent()
    scaled = unit == "B"
    return _Bar(tqdm(total=total, desc=desc, unit=unit, unit_scale=scaled,
                     unit_divisor=1024 if scaled else 1000, file=stream, leave=False,
                     delay=delay, dynamic_ncols=True))
