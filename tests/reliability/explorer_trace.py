"""Record what a writer does to the file system: the crash-state explorer's recorder.

:class:`Recorder` interposes on the calls through which Python code changes
files (``os.open`` with its flags, ``os.write``/``pwrite``/``pwritev``/
``writev``, ``ftruncate``/``truncate``, ``fsync``/``fdatasync``/``sync``,
``mkdir``, ``rmdir``, ``unlink``, ``rename``/``replace``, ``link``,
``symlink``, ``close``, the file objects of ``open``/``io.open``/
``os.fdopen``, and the ``renameat2`` of :mod:`bcolzx.convert`) while a
writer runs, and keeps, in program order, every operation on the directory
tree it watches, resolved to *inodes* of a shadow model of that tree
(:class:`FsTree`): a write names the inode and offset it wrote, a rename
the directories and names it changed and the inode it moved.  Nothing else
in bcolzx changes files (the Cython kernels read and compress; the one C
call that touches a file, ``sync_file_range``, only starts write-back and
makes nothing durable), so the record is complete; :meth:`Recorder.stop`
proves it each time by comparing the shadow model, after every recorded
operation, with the directory tree on disk, byte for byte.

An interposed layer rather than ``strace``: it runs wherever Python does
(no ptrace permission, no package to install), sees the writer's own view
of each call (which descriptor is which file), and costs nothing when not
recording.  ``tests/reliability/test_explorer.py`` checks it against
``strace`` where ``strace`` can run.

The model (:class:`FsTree`) is also what the explorer replays: an inode is a
file (bytes), a directory (names to inodes) or a symbolic link, and
:meth:`FsTree.apply` performs one recorded operation, whole or torn.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib
import io
import os
import stat
import threading
from dataclasses import dataclass

#: The inode number of the watched directory in every :class:`FsTree`.
ROOT = 0
#: The parent of a path whose parent does not exist (the call on it fails).
MISSING = -1

# -- operations --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Write:
    """``write``/``pwrite``/``pwritev`` of `data` at `offset` of file `ino`."""

    ino: int
    offset: int
    data: bytes


@dataclass(frozen=True)
class Truncate:
    """``ftruncate``/``truncate``/``O_TRUNC`` of file `ino` to `size` bytes."""

    ino: int
    size: int


@dataclass(frozen=True)
class Sync:
    """``fsync`` (or ``fdatasync``, `data_only`) of the file or directory `ino`."""

    ino: int
    data_only: bool = False


@dataclass(frozen=True)
class SyncAll:
    """``sync()``: everything becomes durable."""


@dataclass(frozen=True)
class Link:
    """A new name `name` in directory `parent` for inode `ino` of `kind` ('f' file,
    'd' directory, 'l' symbolic link to `target`): ``open(O_CREAT)`` of a new file,
    ``mkdir``, ``link``, ``symlink``."""

    parent: int
    name: str
    ino: int
    kind: str
    target: str = ""


@dataclass(frozen=True)
class Unlink:
    """Name `name` of inode `ino` removed from directory `parent` (``unlink``, ``rmdir``)."""

    parent: int
    name: str
    ino: int


@dataclass(frozen=True)
class Rename:
    """``rename``/``replace``: inode `ino` moves from ``src`` to ``dst`` (which it
    replaces, if it existed)."""

    src_parent: int
    src_name: str
    dst_parent: int
    dst_name: str
    ino: int
    kind: str


@dataclass(frozen=True)
class Exchange:
    """``renameat2(RENAME_EXCHANGE)``: two names trade their inodes."""

    parent_a: int
    name_a: str
    ino_a: int
    kind_a: str
    parent_b: int
    name_b: str
    ino_b: int
    kind_b: str


@dataclass(frozen=True)
class Open:
    """``open`` of inode `ino` with `flags` (no effect on what is stored)."""

    ino: int
    flags: int
    path: str


@dataclass(frozen=True)
class Close:
    """``close`` of a descriptor of inode `ino` (no effect on what is stored)."""

    ino: int


@dataclass(frozen=True)
class Mark:
    """A user-visible call of the writer returned (``number``: the workload's step)."""

    number: int


#: Operations that change what is stored (the others are barriers or information).
EFFECTS = (Write, Truncate, Link, Unlink, Rename, Exchange)


def objects(op) -> tuple:
    """What an operation changes: ``('data', ino)`` for a file's bytes, ``('dir', ino)``
    for a directory's names (a rename: both directories)."""
    if isinstance(op, (Write, Truncate)):
        return (("data", op.ino),)
    if isinstance(op, (Link, Unlink)):
        return (("dir", op.parent),)
    if isinstance(op, Rename):
        return (("dir", op.src_parent), ("dir", op.dst_parent))
    if isinstance(op, Exchange):
        return (("dir", op.parent_a), ("dir", op.parent_b))
    return ()


def describe(op, names: dict | None = None) -> str:
    """One line for a trace listing (`names`: inode -> a path, when known)."""
    def n(ino: int) -> str:
        return (names or {}).get(ino, f"#{ino}")
    if isinstance(op, Write):
        return f"write {n(op.ino)} [{op.offset}, {op.offset + len(op.data)})"
    if isinstance(op, Truncate):
        return f"truncate {n(op.ino)} to {op.size}"
    if isinstance(op, Sync):
        return f"{'fdatasync' if op.data_only else 'fsync'} {n(op.ino)}"
    if isinstance(op, SyncAll):
        return "sync"
    if isinstance(op, Link):
        verb = {"f": "create", "d": "mkdir", "l": "symlink"}[op.kind]
        return f"{verb} {n(op.parent)}/{op.name} (#{op.ino})"
    if isinstance(op, Unlink):
        return f"unlink {n(op.parent)}/{op.name} (#{op.ino})"
    if isinstance(op, Rename):
        return f"rename {n(op.src_parent)}/{op.src_name} -> {n(op.dst_parent)}/{op.dst_name}"
    if isinstance(op, Exchange):
        return f"exchange {n(op.parent_a)}/{op.name_a} <-> {n(op.parent_b)}/{op.name_b}"
    if isinstance(op, Open):
        return f"open {op.path} flags {op.flags:#o}"
    if isinstance(op, Close):
        return f"close {n(op.ino)}"
    if isinstance(op, Mark):
        return f"-- step {op.number} returned --"
    return repr(op)


# -- the model of a directory tree -------------------------------------------------------------


class Inode:
    """A file (`data`), a directory (`entries`) or a symbolic link (`target`)."""

    __slots__ = ("kind", "data", "entries", "target", "digest")

    def __init__(self, kind: str, data: bytes = b"", entries: dict | None = None,
                 target: str = ""):
        self.kind = kind
        self.data = bytearray(data) if kind == "f" else None
        self.entries = dict(entries or {}) if kind == "d" else None
        self.target = target
        self.digest: bytes | None = None

    def clone(self) -> "Inode":
        return Inode(self.kind, self.data or b"", self.entries, self.target)


class FsTree:
    """A directory tree as inodes; copies share inodes until they change them.

    An operation on an inode the tree has never seen creates it (a file, or
    a directory for a name's parent): an inode exists whether or not a name
    for it survived, which is how a write can outlive the ``open`` that
    created its file's name.
    """

    def __init__(self, inodes: dict | None = None):
        self.inodes: dict[int, Inode] = inodes if inodes is not None else {ROOT: Inode("d")}
        self._own: set[int] = set() if inodes is not None else {ROOT}

    def copy(self) -> "FsTree":
        """A copy; both now share every inode (copy on write)."""
        self._own = set()
        return FsTree(dict(self.inodes))

    def _mut(self, ino: int, kind: str) -> Inode:
        node = self.inodes.get(ino)
        if node is None:
            node = self.inodes[ino] = Inode(kind)
            self._own.add(ino)
        elif ino not in self._own:
            node = self.inodes[ino] = node.clone()
            self._own.add(ino)
        if node.kind != kind:
            raise ValueError(f"inode #{ino} is a {node.kind!r}, not a {kind!r}")
        node.digest = None
        return node

    def _exists(self, ino: int, kind: str, target: str = "") -> None:
        if ino not in self.inodes:
            self.inodes[ino] = Inode(kind, target=target)
            self._own.add(ino)

    def lookup(self, parent: int, name: str) -> int | None:
        node = self.inodes.get(parent)
        if node is None or node.kind != "d":
            return None
        return node.entries.get(name)

    def apply(self, op, pieces: list[tuple[int, int]] | None = None,
              size: int | None = None) -> None:
        """Perform `op`.  For a :class:`Write`, `pieces` (``(start, stop)`` ranges of
        its data) and `size` (the file's size afterwards) make it *torn*: only those
        ranges reach the file, the file grows to at least `size`."""
        if isinstance(op, Write):
            node = self._mut(op.ino, "f")
            data = node.data
            end = op.offset + len(op.data)
            if pieces is None:
                pieces = [(0, len(op.data))]
                size = end
            if size is not None and len(data) < size:
                data.extend(bytes(size - len(data)))
            for a, b in pieces:
                if op.offset + a > len(data):
                    data.extend(bytes(op.offset + a - len(data)))
                data[op.offset + a:op.offset + b] = op.data[a:b]
        elif isinstance(op, Truncate):
            data = self._mut(op.ino, "f").data
            if op.size < len(data):
                del data[op.size:]
            else:
                data.extend(bytes(op.size - len(data)))
        elif isinstance(op, Link):
            self._exists(op.ino, op.kind, op.target)
            self._mut(op.parent, "d").entries[op.name] = op.ino
        elif isinstance(op, Unlink):
            entries = self._mut(op.parent, "d").entries
            if entries.get(op.name) == op.ino:
                del entries[op.name]
        elif isinstance(op, Rename):
            self._exists(op.ino, op.kind)
            src = self._mut(op.src_parent, "d").entries
            if src.get(op.src_name) == op.ino:
                del src[op.src_name]
            self._mut(op.dst_parent, "d").entries[op.dst_name] = op.ino
        elif isinstance(op, Exchange):
            self._exists(op.ino_a, op.kind_a)
            self._exists(op.ino_b, op.kind_b)
            self._mut(op.parent_a, "d").entries[op.name_a] = op.ino_b
            self._mut(op.parent_b, "d").entries[op.name_b] = op.ino_a
        # Sync, SyncAll, Open, Close, Mark change nothing stored

    # -- the tree as it is seen from its root -----------------------------------------------

    def walk(self, ino: int = ROOT, prefix: str = ""):
        """``(relative path, inode)`` of everything reachable, parents first, sorted."""
        node = self.inodes[ino]
        for name in sorted(node.entries):
            child = node.entries[name]
            path = prefix + name
            yield path, child
            if self.inodes[child].kind == "d":
                yield from self.walk(child, path + "/")

    def _digest(self, ino: int) -> bytes:
        node = self.inodes[ino]
        if node.kind == "d":  # never cached: it depends on the children
            h = hashlib.blake2b(b"d", digest_size=16)
            for name in sorted(node.entries):
                h.update(name.encode() + b"\0" + self._digest(node.entries[name]))
            return h.digest()
        if node.digest is None:  # a changed file is a new Inode (copy on write)
            h = hashlib.blake2b(node.kind.encode(), digest_size=16)
            h.update(node.data if node.kind == "f" else node.target.encode())
            node.digest = h.digest()
        return node.digest

    def digest(self) -> bytes:
        """A digest of the reachable tree: equal exactly when two trees look the same."""
        return self._digest(ROOT)

    def subtree(self, path: str) -> "FsTree | None":
        """The tree under the directory `path` (relative), sharing its inodes; None when
        `path` is not a directory of this tree."""
        ino = ROOT
        for part in path.split("/"):
            ino = self.lookup(ino, part)
            if ino is None:
                return None
        if self.inodes[ino].kind != "d":
            return None
        inodes = {ROOT: self.inodes[ino]}
        stack = [ino]
        while stack:
            for child in self.inodes[stack.pop()].entries.values():
                if child not in inodes:
                    inodes[child] = self.inodes[child]
                    if self.inodes[child].kind == "d":
                        stack.append(child)
        sub = FsTree(inodes)
        return sub

    def paths(self) -> dict[int, str]:
        """Inode -> its first path from the root (for listings)."""
        out = {ROOT: "."}
        for path, ino in self.walk():
            out.setdefault(ino, path)
        return out

    def materialise(self, dest: str) -> None:
        """Write the reachable tree into the new directory `dest`."""
        os.mkdir(dest)
        for path, ino in self.walk():
            node = self.inodes[ino]
            full = os.path.join(dest, path)
            if node.kind == "d":
                os.mkdir(full)
            elif node.kind == "l":
                os.symlink(node.target, full)
            else:
                with builtins.open(full, "wb") as f:
                    f.write(node.data)

    def differences(self, other: "FsTree", limit: int = 10) -> list[str]:
        """What differs between the reachable trees of `self` and `other`."""
        mine = {p: self.inodes[i] for p, i in self.walk()}
        theirs = {p: other.inodes[i] for p, i in other.walk()}
        out = [f"only in the model: {p}" for p in sorted(set(mine) - set(theirs))]
        out += [f"only on disk: {p}" for p in sorted(set(theirs) - set(mine))]
        for p in sorted(set(mine) & set(theirs)):
            a, b = mine[p], theirs[p]
            if a.kind != b.kind or a.data != b.data or a.target != b.target:
                what = f"{len(a.data)} / {len(b.data)} bytes" if a.kind == b.kind == "f" \
                    else f"{a.kind} / {b.kind}"
                out.append(f"differs: {p} ({what})")
        return out[:limit]


def scan(path: str) -> FsTree:
    """The tree on disk under `path`, as an :class:`FsTree` (inodes numbered 1, 2, ...)."""
    tree = FsTree()
    counter = [0]

    def visit(directory: str, ino: int) -> None:
        for name in sorted(os.listdir(directory)):
            full = os.path.join(directory, name)
            st = os.lstat(full)
            counter[0] += 1
            child = counter[0]
            if stat.S_ISDIR(st.st_mode):
                tree.inodes[child] = Inode("d")
                visit(full, child)
            elif stat.S_ISLNK(st.st_mode):
                tree.inodes[child] = Inode("l", target=os.readlink(full))
            elif stat.S_ISREG(st.st_mode):
                with builtins.open(full, "rb") as f:
                    tree.inodes[child] = Inode("f", f.read())
            else:
                raise RecorderError(f"{full}: neither a file, a directory nor a link")
            tree.inodes[ino].entries[name] = child

    visit(path, ROOT)
    tree._own = set(tree.inodes)
    return tree


# -- the recorder ------------------------------------------------------------------------------


class RecorderError(RuntimeError):
    """The recorder met a call it cannot model, or its model differs from the disk."""


_O_WRITE = os.O_WRONLY | os.O_RDWR


class Recorder:
    """Record every change a writer makes under `root` (see the module docstring).

    Use as a context manager around the writer; :meth:`mark` notes a
    user-visible call returning.  The writer may use threads: each recorded
    call and its record are made under one lock, so the record's order is
    the order of the calls.

    Attributes
    ----------
    initial : FsTree
        The tree under `root` when recording started (taken as durable).
    ops : list
        The operations, in order.
    """

    def __init__(self, root: str):
        self.root = os.path.realpath(root)
        self.initial = scan(self.root)
        self.tree = self.initial.copy()
        self.ops: list = []
        self._next = max(self.tree.inodes) + 1
        self._fds: dict[int, int] = {}
        self._lock = threading.RLock()
        self._saved: list = []

    # -- resolving paths and descriptors ---------------------------------------------------

    def _abspath(self, path, dir_fd: int | None) -> str | None:
        if isinstance(path, int):
            return None
        path = os.fsdecode(os.fspath(path))
        if not os.path.isabs(path):
            base = os.getcwd() if dir_fd is None else os.readlink(f"/proc/self/fd/{dir_fd}")
            path = os.path.join(base, path)
        return os.path.normpath(path)

    def _locate(self, path, dir_fd: int | None = None) -> tuple[int, str] | None:
        """(parent inode, name) of `path` under the root, or None outside it."""
        full = self._abspath(path, dir_fd)
        if full is None or not (full + "/").startswith(self.root + "/") or full == self.root:
            return None
        parts = os.path.relpath(full, self.root).split(os.sep)
        ino = ROOT
        for i, part in enumerate(parts[:-1]):
            child = self.tree.lookup(ino, part)
            if child is None:
                if os.path.lexists(os.path.join(self.root, *parts[:i + 1])):
                    raise RecorderError(f"{full}: a parent on disk unknown to the model")
                return MISSING, parts[-1]  # the call fails (ENOENT): nothing is recorded
            if self.tree.inodes[child].kind == "l":
                raise RecorderError(f"{full}: symbolic links inside the tree are not modelled")
            ino = child
        return ino, parts[-1]

    def _ino(self, fd) -> int | None:
        """The inode a descriptor (or file object) is open on, None outside the root."""
        if not isinstance(fd, int):
            fd = fd.fileno()
        ino = self._fds.get(fd)
        if ino is not None:
            return ino
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
        if not (target + "/").startswith(self.root + "/"):
            return None
        if target == self.root:
            return ROOT
        loc = self._locate(target)
        found = None if loc is None else self.tree.lookup(*loc)
        if found is None:
            raise RecorderError(f"descriptor {fd} is open on {target}, unknown to the model")
        return found

    def _record(self, op) -> None:
        self.ops.append(op)
        self.tree.apply(op)

    def _new_ino(self) -> int:
        self._next += 1
        return self._next - 1

    def mark(self, number: int) -> None:
        """Note that step `number` of the writer returned."""
        with self._lock:
            self.ops.append(Mark(number))

    # -- the interposed calls ---------------------------------------------------------------

    def _wrap_open(self, real):
        def open_(path, flags, mode=0o777, *, dir_fd=None):
            with self._lock:
                loc = self._locate(path, dir_fd)
                if loc is None:
                    return real(path, flags, mode, dir_fd=dir_fd)
                existed = self.tree.lookup(*loc)
                fd = real(path, flags, mode, dir_fd=dir_fd)
                if existed is None:
                    if not flags & os.O_CREAT:
                        os.close(fd)
                        raise RecorderError(f"{path} opened without O_CREAT, unknown to the "
                                            "model")
                    ino = self._new_ino()
                    self._record(Link(*loc, ino, "f"))
                else:
                    ino = existed
                    if self.tree.inodes[ino].kind == "l":
                        os.close(fd)
                        raise RecorderError(f"{path}: opening through a symbolic link is not "
                                            "modelled")
                    if flags & os.O_TRUNC and flags & _O_WRITE and self.tree.inodes[ino].data:
                        self._record(Truncate(ino, 0))
                self._fds[fd] = ino
                self.ops.append(Open(ino, flags, os.path.relpath(
                    self._abspath(path, dir_fd), self.root)))
                return fd
        return open_

    def _written(self, fd: int, ino: int, n: int, data) -> None:
        end = os.lseek(fd, 0, os.SEEK_CUR)
        self._record(Write(ino, end - n, bytes(memoryview(data).cast("B")[:n])))

    def _wrap_write(self, real):
        def write(fd, data):
            with self._lock:
                ino = self._ino(fd)
                n = real(fd, data)
                if ino is not None and n:
                    self._written(fd, ino, n, data)
                return n
        return write

    def _wrap_writev(self, real):
        def writev(fd, buffers):
            with self._lock:
                ino = self._ino(fd)
                buffers = list(buffers)
                n = real(fd, buffers)
                if ino is not None and n:
                    self._written(fd, ino, n, b"".join(bytes(memoryview(b).cast("B"))
                                                       for b in buffers))
                return n
        return writev

    def _wrap_pwrite(self, real):
        def pwrite(fd, data, offset):
            with self._lock:
                ino = self._ino(fd)
                n = real(fd, data, offset)
                if ino is not None and n:
                    self._record(Write(ino, offset, bytes(memoryview(data).cast("B")[:n])))
                return n
        return pwrite

    def _wrap_pwritev(self, real):
        def pwritev(fd, buffers, offset, flags=0):
            with self._lock:
                ino = self._ino(fd)
                buffers = list(buffers)
                n = real(fd, buffers, offset, flags) if flags else real(fd, buffers, offset)
                if ino is not None and n:
                    data = b"".join(bytes(memoryview(b).cast("B")) for b in buffers)
                    self._record(Write(ino, offset, data[:n]))
                return n
        return pwritev

    def _wrap_ftruncate(self, real):
        def ftruncate(fd, length):
            with self._lock:
                ino = self._ino(fd)
                real(fd, length)
                if ino is not None:
                    self._record(Truncate(ino, length))
        return ftruncate

    def _wrap_truncate(self, real):
        def truncate(path, length):
            with self._lock:
                if isinstance(path, int):
                    ino = self._ino(path)
                else:
                    loc = self._locate(path)
                    ino = None if loc is None else self.tree.lookup(*loc)
                real(path, length)
                if ino is not None:
                    self._record(Truncate(ino, length))
        return truncate

    def _wrap_sync(self, real, data_only: bool):
        def fsync(fd):
            with self._lock:
                ino = self._ino(fd)
                real(fd)
                if ino is not None:
                    self.ops.append(Sync(ino, data_only))
        return fsync

    def _wrap_syncall(self, real):
        def sync():
            with self._lock:
                real()
                self.ops.append(SyncAll())
        return sync

    def _wrap_close(self, real):
        def close(fd):
            with self._lock:
                ino = self._fds.pop(fd, None)
                real(fd)
                if ino is not None:
                    self.ops.append(Close(ino))
        return close

    def _wrap_mkdir(self, real):
        def mkdir(path, mode=0o777, *, dir_fd=None):
            with self._lock:
                loc = self._locate(path, dir_fd)
                real(path, mode, dir_fd=dir_fd)
                if loc is not None:
                    self._record(Link(*loc, self._new_ino(), "d"))
        return mkdir

    def _wrap_remove(self, real):
        def remove(path, *, dir_fd=None):
            with self._lock:
                loc = self._locate(path, dir_fd)
                ino = None if loc is None else self.tree.lookup(*loc)
                real(path, dir_fd=dir_fd)
                if loc is not None:
                    if ino is None:
                        raise RecorderError(f"{path} removed, unknown to the model")
                    self._record(Unlink(*loc, ino))
        return remove

    def _renamed(self, src, dst, src_dir_fd=None, dst_dir_fd=None, real=None,
                 exchange: bool = False) -> None:
        a = self._locate(src, src_dir_fd)
        b = self._locate(dst, dst_dir_fd)
        ino_a = None if a is None else self.tree.lookup(*a)
        ino_b = None if b is None else self.tree.lookup(*b)
        real()
        if a is None and b is None:
            return
        if a is None or b is None or ino_a is None:
            raise RecorderError(f"rename {src} -> {dst} crosses the watched tree's border or "
                                "names what the model does not know")
        kind_a = self.tree.inodes[ino_a].kind
        if exchange:
            if ino_b is None:
                raise RecorderError(f"exchange {src} <-> {dst}: unknown to the model")
            self._record(Exchange(*a, ino_a, kind_a, *b, ino_b, self.tree.inodes[ino_b].kind))
        elif (a, ino_a) != (b, ino_b):  # renaming a name onto itself changes nothing
            self._record(Rename(*a, *b, ino_a, kind_a))

    def _wrap_rename(self, real):
        def rename(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
            with self._lock:
                self._renamed(src, dst, src_dir_fd, dst_dir_fd, lambda: real(
                    src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd))
        return rename

    def _wrap_renameat2(self, real, exchange_flag: int):
        def renameat2(old, new, flags):
            with self._lock:
                self._renamed(old, new, real=lambda: real(old, new, flags),
                              exchange=bool(flags & exchange_flag))
        return renameat2

    def _wrap_link(self, real):
        def link(src, dst, *, src_dir_fd=None, dst_dir_fd=None, follow_symlinks=True):
            with self._lock:
                a = self._locate(src, src_dir_fd)
                b = self._locate(dst, dst_dir_fd)
                ino = None if a is None else self.tree.lookup(*a)
                real(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd,
                     follow_symlinks=follow_symlinks)
                if b is not None:
                    if ino is None:
                        raise RecorderError(f"link {src} -> {dst}: unknown to the model")
                    self._record(Link(*b, ino, self.tree.inodes[ino].kind))
        return link

    def _wrap_symlink(self, real):
        def symlink(target, dst, target_is_directory=False, *, dir_fd=None):
            with self._lock:
                b = self._locate(dst, dir_fd)
                real(target, dst, target_is_directory, dir_fd=dir_fd)
                if b is not None:
                    self._record(Link(*b, self._new_ino(), "l", os.fsdecode(target)))
        return symlink

    def _wrap_refused(self, real, name: str):
        def refused(*args, **kwargs):
            with self._lock:
                for arg in args[:2]:
                    concerned = self._ino(arg) if isinstance(arg, int) else \
                        self._locate(arg) if isinstance(arg, (str, bytes, os.PathLike)) else None
                    if concerned is not None:
                        raise RecorderError(f"os.{name} is not modelled by the recorder")
                return real(*args, **kwargs)
        return refused

    def _wrap_io_open(self, real):
        recorder = self

        class RecordedFileIO(io.FileIO):
            """A raw file whose writes, truncations and close are recorded."""

            _ino = None

            def write(self, b):
                with recorder._lock:
                    n = super().write(b)
                    if n and self._ino is not None:
                        recorder._written(self.fileno(), self._ino, n, b)
                    return n

            def truncate(self, size=None):
                with recorder._lock:
                    size = super().truncate(size)
                    if self._ino is not None:
                        recorder._record(Truncate(self._ino, size))
                    return size

            def close(self):
                with recorder._lock:
                    if not self.closed and self.closefd and self._ino is not None:
                        recorder._fds.pop(self.fileno(), None)
                        recorder.ops.append(Close(self._ino))
                    super().close()

        def io_open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None,
                    closefd=True, opener=None):
            if not set(mode) & set("wax+"):
                return real(file, mode, buffering, encoding, errors, newline, closefd, opener)
            with recorder._lock:
                concerned = recorder._ino(file) is not None if isinstance(file, int) else \
                    recorder._locate(file) is not None
                if not concerned:
                    return real(file, mode, buffering, encoding, errors, newline, closefd,
                                opener)
                if opener is not None:
                    raise RecorderError("open(opener=...) is not modelled by the recorder")
                raw_mode = "".join(c for c in mode if c in "rwxa+")
                raw = RecordedFileIO(file, raw_mode, closefd=closefd,
                                     opener=None if isinstance(file, int) else
                                     (lambda p, fl: os.open(p, fl, 0o666)))
                raw._ino = recorder._ino(raw.fileno())
                if "a" in mode:
                    raw.seek(0, os.SEEK_END)
            binary = "b" in mode
            if buffering == 0:
                if not binary:
                    raise ValueError("can't have unbuffered text I/O")
                return raw
            size = io.DEFAULT_BUFFER_SIZE if buffering in (-1, 1) else buffering
            buf = io.BufferedRandom(raw, size) if "+" in mode else io.BufferedWriter(raw, size)
            if binary:
                return buf
            text = io.TextIOWrapper(buf, encoding, errors, newline, buffering == 1)
            text.mode = mode
            return text

        return io_open

    # -- starting and stopping -------------------------------------------------------------

    def _patch(self, owner, name: str, wrapper) -> None:
        real = getattr(owner, name, None)
        if real is None:
            return
        self._saved.append((owner, name, real))
        setattr(owner, name, wrapper(real))

    def start(self) -> "Recorder":
        """Interpose on the calls (see the module docstring)."""
        # the module (``bcolzx.convert`` as an attribute is the function of that name)
        convert = importlib.import_module("bcolzx.convert")
        p = self._patch
        p(os, "open", self._wrap_open)
        p(os, "write", self._wrap_write)
        p(os, "writev", self._wrap_writev)
        p(os, "pwrite", self._wrap_pwrite)
        p(os, "pwritev", self._wrap_pwritev)
        p(os, "ftruncate", self._wrap_ftruncate)
        p(os, "truncate", self._wrap_truncate)
        p(os, "fsync", lambda real: self._wrap_sync(real, False))
        p(os, "fdatasync", lambda real: self._wrap_sync(real, True))
        p(os, "sync", self._wrap_syncall)
        p(os, "close", self._wrap_close)
        p(os, "mkdir", self._wrap_mkdir)
        p(os, "rmdir", self._wrap_remove)
        p(os, "unlink", self._wrap_remove)
        p(os, "remove", self._wrap_remove)
        p(os, "rename", self._wrap_rename)
        p(os, "replace", self._wrap_rename)
        p(os, "link", self._wrap_link)
        p(os, "symlink", self._wrap_symlink)
        for name in ("posix_fallocate", "sendfile", "copy_file_range", "splice", "mkfifo",
                     "mknod"):
            p(os, name, lambda real, name=name: self._wrap_refused(real, name))
        if not hasattr(convert, "_renameat2"):
            raise RecorderError("bcolzx.convert._renameat2 is gone: the recorder must learn "
                                "how convert renames now")
        p(convert, "_renameat2", lambda real: self._wrap_renameat2(real,
                                                                    convert.RENAME_EXCHANGE))
        io_open = self._wrap_io_open(io.open)
        for owner in (io, builtins):
            self._saved.append((owner, "open", owner.open))
            owner.open = io_open
        return self

    def stop(self, check: bool = True) -> None:
        """Restore the real calls; with `check`, compare the model with the disk.

        Raises
        ------
        RecorderError
            If the shadow model differs from the tree on disk (a call the
            recorder missed or modelled wrongly).
        """
        while self._saved:
            owner, name, real = self._saved.pop()
            setattr(owner, name, real)
        if check:
            diff = self.tree.differences(scan(self.root))
            if diff:
                raise RecorderError("the recorded operations do not give the tree on disk: " +
                                    "; ".join(diff))

    def __enter__(self) -> "Recorder":
        return self.start()

    def __exit__(self, kind, exc, tb) -> None:
        self.stop(check=kind is None)


__all__ = ["Recorder", "RecorderError", "FsTree", "Inode", "scan", "objects", "describe",
           "EFFECTS", "ROOT", "Write", "Truncate", "Sync", "SyncAll", "Link", "Unlink",
           "Rename", "Exchange", "Open", "Close", "Mark"]
