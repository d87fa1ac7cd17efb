"""Where a converted or compacted copy goes: a new directory, or new objects published last.

:func:`bcolzx.convert` (and :func:`bcolzx.compact` with a destination) plan
a copy in :mod:`bcolzx.convert`; this module writes it where it goes.  On
disk, beside the target and renamed into place (``convert._write_local``).
On object storage, where nothing can be renamed, at the destination itself:
each carray through an :class:`~bcolzx._storage.remote.ObjectStore` whose
commit holds ``meta/sizes`` back (:attr:`~bcolzx._storage.remote.ObjectStore.hold`),
verified by reading back what was uploaded, then published -- for a
ctable, its columns, its ``__attrs__``, and ``__rootdirs__`` last -- so that
no reader ever finds a half-written or unverified dataset (docs/remote.md).
"""

from __future__ import annotations

import errno
import os

from bcolzx._format import layout
from bcolzx._format.jsonfile import dumps
from bcolzx._storage.objects import Objects, is_url
from bcolzx.convert import _local_target, _verify_carray, _write_carray, _write_local
from bcolzx.errors import AppendOnlyError

__all__ = ["check_destination", "write_plan"]


def check_destination(source: str | Objects, target: str | Objects | None) -> None:
    """Refuse, before anything is read, a copy of `source` to `target` that cannot be.

    Raises
    ------
    AppendOnlyError
        If `target` is None (in place) and `source` is on object storage.
    FileNotFoundError
        If `source` is a path and not a directory.
    FileExistsError
        If something is stored at `target`.
    """
    if target is None:
        if isinstance(source, Objects):
            raise AppendOnlyError(
                f"cannot convert {source.url} in place: objects on object storage cannot be "
                "replaced atomically; convert it to a new location (bcolzx.convert(src, "
                "dst), 'bcolzx convert SRC DST'), then use that one")
        return
    if isinstance(source, str) and not os.path.isdir(source):
        raise FileNotFoundError(errno.ENOENT, "no dataset directory at", source)
    if isinstance(target, Objects) and target.occupied():
        raise FileExistsError(errno.EEXIST, "the destination exists (objects are stored "
                              "under it)", target.url)
    if isinstance(target, str) and os.path.lexists(target):
        raise FileExistsError(errno.EEXIST, "the destination exists", target)


def write_plan(plan, source: str | Objects, target: str | Objects, dst_given, verify: bool,
               progress) -> str:
    """Write the converted dataset of `plan` (from :func:`_plan` of `source`) to
    `target`, a new directory or new objects; return where, as given."""
    if isinstance(target, str):
        real_src = os.path.realpath(source) if isinstance(source, str) else None
        _write_local(plan, _local_target(target, real_src), verify, progress)
        return target if is_url(dst_given) else os.fspath(dst_given)
    _write_objects(plan, target, verify, progress)
    return dst_given if isinstance(dst_given, str) else target.url


def _write_objects(plan, target: Objects, verify: bool, progress) -> None:
    """Build the converted dataset of `plan` at `target` (no object there), verify it
    from what was uploaded, then publish it: each carray's ``meta/sizes``, then for
    a ctable its ``__attrs__`` and, last, ``__rootdirs__``.  Whatever fails,
    nothing was published and what was uploaded is deleted (best effort).
    """
    from bcolzx._storage import remote

    kind, dataset, columns = plan
    try:
        if kind == "carray":
            places = [target]
        else:
            places = [target.child(col.relpath) for col in columns]
        stores = [_write_carray(col, where, progress) for col, where in zip(columns, places)]
        if verify:
            for col, where, store in zip(columns, places, stores):
                _verify_carray(col, where, progress, held=store.held_files())
        for store in stores:
            store.publish()
        if kind == "ctable":
            target.put({remote.ATTRS: dumps(dataset.attrs.getall(), layout.ATTRS_FILE)})
            target.put({remote.ROOTDIRS: dumps({"names": dataset.names},
                                               layout.ROOTDIRS_FILE)})
    except BaseException:
        target.discard()
        raise
