"""The differential test's programs: an op, and the parent's model of the live objects.

An :class:`Op` is one line of a program; the :class:`Model` is what the parent
knows of the carrays and ctables the workers hold, learnt from legacy bcolz's
answers (the reference), so that the next op drawn makes sense (see
:mod:`diff_ops`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Op:
    """One line of a program.

    `code` is an expression (or statements) run in both workers; with a
    `target`, the value is bound to that name.  `kind` and `tags` are what
    the table of known differences matches on; `obj` is the object the op
    acts on and `mutates` says whether it may change it (the parent then
    compares the object afterwards); `ref` is an optional oracle expression
    evaluated after the op; `rootdir`/`mode` describe a dataset the op
    creates or opens, `closes` an op that flushes and forgets `obj`.
    """

    code: str
    kind: str
    tags: frozenset = frozenset()
    target: str | None = None
    obj: str | None = None
    mutates: bool = False
    ref: str | None = None
    rootdir: str | None = None
    mode: str | None = None
    closes: bool = False

    @property
    def line(self) -> str:
        return f"{self.target} = {self.code}" if self.target else self.code

    def __repr__(self) -> str:
        return self.line

    def _repr_pretty_(self, printer, cycle) -> None:  # what hypothesis prints for a draw
        printer.text(self.line)


@dataclass
class Obj:
    """What the parent knows of a live carray or ctable (from legacy's answers)."""

    kind: str                   # 'carray' or 'ctable'
    dtype: np.dtype             # carray: the item dtype; ctable: the row (structured) dtype
    rowshape: tuple = ()        # carray only
    length: int = 0
    rootdir: str | None = None
    mode: str = "a"
    chunklen: int | None = None  # when given explicitly
    #: what legacy did to it that bcolzx does not: 'copied' (legacy dropped dflt),
    #: 'reshaped' (legacy's reshape of a persistent carray took over its directory)
    flags: frozenset = frozenset()

    @property
    def names(self) -> list[str]:
        return list(self.dtype.names or ())


@dataclass
class Model:
    objs: dict[str, Obj] = field(default_factory=dict)
    #: rootdir -> 'live' (a name holds it), 'free' (flushed and closed: may be
    #: reopened), 'dirty' (released without a flush, or written by a failed op)
    rootdirs: dict[str, str] = field(default_factory=dict)
    next_dir: int = 0
    #: directories written by a copy (reopening them gives a 'copied' object)
    copied_dirs: set = field(default_factory=set)

    def carrays(self) -> list[str]:
        return sorted(n for n, o in self.objs.items() if o.kind == "carray")

    def ctables(self) -> list[str]:
        return sorted(n for n, o in self.objs.items() if o.kind == "ctable")

    def new_dir(self) -> str:
        return f"d{self.next_dir}"

    def free_dirs(self) -> list[str]:
        return sorted(d for d, s in self.rootdirs.items() if s == "free")

    # -- updates (from legacy's results) --------------------------------------------------

    def forget(self, name: str, clean: bool = False) -> None:
        """`name` is gone; its directory is 'free' if it was flushed and closed cleanly."""
        obj = self.objs.pop(name, None)
        if obj is not None and obj.rootdir is not None:
            self.rootdirs[obj.rootdir] = "free" if clean else "dirty"

    def learn(self, op: Op, result, ok: bool) -> None:
        """Update the model after `op` ran; `result` is legacy's normalized value."""
        if op.rootdir is not None and op.rootdir == self.new_dir():
            self.next_dir += 1
        if op.closes and op.obj is not None:
            self.forget(op.obj, clean=ok and "reshaped" not in self.objs[op.obj].flags)
            return
        if op.kind == "carray.purge" and op.obj is not None:
            # bcolzx closes a purged carray, legacy goes on half-alive (KNOWN purge-closes)
            self.forget(op.obj)
            return
        if ok and "shares_carrays" in op.tags:
            # A ctable made of carrays shares them (or copies them, when given keyword
            # arguments) in bcolzx, always shares them in legacy (KNOWN ctable-shares-carrays):
            # the sources are not used again.
            for tag in op.tags:
                if tag.startswith("source=") and tag[7:] != op.target:
                    self.forget(tag[7:])
        if op.kind == "carray.reshape" and op.obj in self.objs and \
                self.objs[op.obj].rootdir is not None:
            self.objs[op.obj].flags |= {"reshaped"}
        if op.target is not None:
            if not ok or result[0] not in ("carray", "ctable"):
                if op.rootdir is not None and self.rootdirs.get(op.rootdir) != "live":
                    self.rootdirs[op.rootdir] = "dirty"
                return
            self.forget(op.target)  # the old binding is released (maybe unflushed)
            obj = obj_from_snapshot(result)
            obj.rootdir = op.rootdir
            obj.mode = op.mode or "a"
            obj.chunklen = _explicit_chunklen(op)
            if {"copy", "carrays"} & op.tags or op.rootdir in self.copied_dirs:
                obj.flags = frozenset({"copied"})
            if "shares_carrays" in op.tags and obj.chunklen is not None:
                # bcolzx copied the carrays to apply the chunklen, legacy kept theirs
                obj.flags |= {"shared_columns"}
                if op.rootdir is not None:
                    self.copied_dirs.add(op.rootdir)
            self.objs[op.target] = obj
            if op.rootdir is not None:
                self.rootdirs[op.rootdir] = "live"
            return
        if op.kind == "observe" and op.obj in self.objs and ok and \
                result[0] in ("carray", "ctable"):
            old = self.objs[op.obj]
            new = obj_from_snapshot(result)
            new.rootdir, new.mode, new.chunklen = old.rootdir, old.mode, old.chunklen
            new.flags = old.flags
            self.objs[op.obj] = new


def _explicit_chunklen(op: Op) -> int | None:
    for tag in op.tags:
        if tag.startswith("chunklen="):
            return int(tag.split("=", 1)[1])
    return None


def obj_from_snapshot(result) -> Obj:
    """An :class:`Obj` from a normalized carray/ctable (see diff_worker.normalize)."""
    if result[0] == "carray":
        _, dtype, shape, length, _contents = result
        return Obj("carray", np.dtype(dtype), tuple(shape[1:]), int(length))
    contents = result[4]
    return Obj("ctable", contents.dtype, (), int(result[3]))
