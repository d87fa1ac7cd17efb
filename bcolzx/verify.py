"""Check a whole dataset on disk and report every problem: :func:`verify`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from bcolzx import attrs as _attrs
from bcolzx._format import jsonfile, layout
from bcolzx._format import legacy as _legacy
from bcolzx._format.meta import read_sizes
from bcolzx._format.spare import committed_copy_problem, spare_copy_note
from bcolzx._table import torn_lengths
from bcolzx.errors import BcolzxError

__all__ = ["Problem", "Report", "verify"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a dataset.

    Attributes
    ----------
    path : str or None
        The file (or directory) holding the damage.
    chunk : int or None
        The chunk number, when the damage is in one chunk.
    message : str
        What is wrong.
    """

    path: str | None
    chunk: int | None
    message: str

    def __str__(self) -> str:
        where = self.path or "?"
        if self.chunk is not None:
            where += f" chunk {self.chunk}"
        return f"{where}: {self.message}"


@dataclass
class Report:
    """What :func:`verify` found.

    Attributes
    ----------
    rootdir : str
        The dataset checked.
    kind : str
        ``"carray"``, ``"ctable"`` or ``"unknown"``.
    format : str
        ``"bcolzx"``, ``"legacy-v1"`` or ``"unknown"`` (for a ctable, of its
        first column).
    rows : int
        Rows of the dataset (0 when it cannot be opened).
    chunks : int
        Stored chunks checked.
    problems : list of Problem
        Everything wrong; empty when the dataset is sound.
    notes : list of Problem
        What is not as a writer leaves it but costs no data and does not
        fail the check: an index copy the dataset does not use that is
        invalid, rows some columns of a ctable hold past the table's length
        (both also what a writer killed at the wrong instant leaves).
    """

    rootdir: str
    kind: str = "unknown"
    format: str = "unknown"
    rows: int = 0
    chunks: int = 0
    problems: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        head = (f"{self.rootdir}: {self.kind} ({self.format}), {self.rows} rows, "
                f"{self.chunks} chunks checked: ")
        notes = "".join(f"\n  note: {p}" for p in self.notes)
        if self.ok:
            return head + "OK" + notes
        return head + f"{len(self.problems)} problem(s)\n" + "\n".join(
            f"  {p}" for p in self.problems) + notes


def _problem(exc: BaseException, path: str | None = None) -> Problem:
    return Problem(getattr(exc, "path", None) or path, getattr(exc, "chunk", None),
                   f"{type(exc).__name__}: {exc}")


def _verify_carray(path: str, report: Report, progress=None) -> int | None:
    """Check one carray directory; its length, or None when it cannot be opened."""
    from bcolzx.carray import carray

    try:
        c = carray(rootdir=path, mode="r")
    except (BcolzxError, OSError, ValueError) as exc:
        report.problems.append(_problem(exc, path))
        return None
    try:  # read on first use by a carray opened in mode 'r': checked here
        c.attrs  # noqa: B018
    except (BcolzxError, OSError, ValueError) as exc:
        report.problems.append(_problem(exc, path))
    eng = c.engine
    if report.format == "unknown":
        report.format = "bcolzx" if eng.store.native else "legacy-v1"
    report.chunks += eng.nfull + (1 if eng.nleft else 0)
    report.problems.extend(_problem(e, path) for e in eng.verify(progress))
    if eng.store.native:
        _spare_copies(path, eng.store, report)
    return len(c)


def _spare_copies(path: str, store, report: Report) -> None:
    """Damaged headers and committed index copies (problems, though reads get past them),
    and notes on the index copies the dataset does not use (see bcolzx._format.spare)."""
    try:
        generations = read_sizes(path).generations
    except (BcolzxError, OSError):
        return  # reported when the carray was opened
    for number, generation in enumerate(generations):
        file = layout.data_path(path, number)
        damage = committed_copy_problem(file, number, store.geometry, generation)
        if damage is not None:
            report.problems.append(Problem(file, None, damage))
        note = spare_copy_note(file, store.geometry, generation)
        if note is not None:
            report.notes.append(Problem(file, None, note))


def verify(rootdir, *, progress=None) -> Report:
    """Check every file and every chunk of a carray or ctable directory.

    Reads everything (metadata, indexes, every chunk with its checksum, the
    zone map) without stopping at the first problem, in either format
    (bcolzx or legacy bcolz).  Nothing is modified.

    Parameters
    ----------
    rootdir : str or os.PathLike
        The dataset directory.
    progress : callable, optional
        Called after each chunk checked with the uncompressed bytes of its
        rows (their sum over a sound dataset is its ``nbytes``); the command
        line draws its progress bar with it.

    Returns
    -------
    Report
        True-ish when the dataset is sound; ``report.problems`` lists what is
        wrong, each with its file and chunk.

    Raises
    ------
    FileNotFoundError
        If `rootdir` is not a directory.

    Examples
    --------
    >>> import bcolzx, tempfile, os
    >>> d = os.path.join(tempfile.mkdtemp(), "a")
    >>> _ = bcolzx.arange(10_000, rootdir=d)
    >>> bcolzx.verify(d).ok
    True
    """
    rootdir = os.fspath(rootdir)
    if not os.path.isdir(rootdir):
        raise FileNotFoundError(f"no dataset directory at {rootdir}")
    report = Report(rootdir)
    rootdirs = os.path.join(rootdir, layout.ROOTDIRS_FILE)
    if os.path.isfile(rootdirs):
        report.kind = "ctable"
        try:
            names = layout.column_names(jsonfile.read_json(rootdirs), rootdirs)
        except (BcolzxError, ValueError) as exc:
            report.problems.append(_problem(exc, rootdirs))
            return report
        lengths = {}
        for name in names:
            n = _verify_carray(os.path.join(rootdir, name), report, progress)
            if n is not None:
                lengths[name] = n
        torn = torn_lengths(lengths)
        if torn is not None:  # what a crash between two columns' commits leaves
            report.notes.append(Problem(rootdir, None, torn))
        report.rows = min(lengths.values(), default=0)
    elif os.path.isfile(layout.meta_path(rootdir, layout.STORAGE_FILE)):
        report.kind = "carray"
        report.rows = _verify_carray(rootdir, report, progress) or 0
    else:
        report.problems.append(Problem(rootdir, None, "no meta/storage or __rootdirs__: not "
                                                      "a carray or ctable directory"))
        return report
    try:  # with the seal's rules: a sealed dataset's __attrs__ must be there, sealed
        _attrs.attrs(rootdir, "r")
    except (BcolzxError, ValueError, OSError) as exc:
        problem = _problem(exc, os.path.join(rootdir, layout.ATTRS_FILE))
        if problem not in report.problems:  # a carray's own open reported it already
            report.problems.append(problem)
    if report.format == "unknown" and _legacy.is_legacy(rootdir):
        report.format = "legacy-v1"
    return report
