"""Chunk encoding: the compressors of an array, the byte-delta policy, special values.

An array's chunks are compressed by one of two C-Blosc2 pipelines after the
byte shuffle: plain, or followed by the byte-delta filter.  With the dataset's
``bytedelta`` set to ``"auto"``, a sample of chunks (the first, then one every
:data:`~bcolzx._format.layout.BYTEDELTA_RETRIAL`) is compressed both ways,
and byte-delta stays in use while it saves at least 10%: the trials run in
order, one chunk at a time, so 1 and 8 threads store the same pipelines.  A
chunk of one repeated value (zeros, NaN, a constant) is not compressed at
all: it becomes a :class:`~bcolzx._storage.base.Special`, coded in the index
(bcolzx format only).  Several chunks are encoded chunk-parallel, each pool
thread compressing a contiguous run with a single-threaded compressor of its
own and computing the zone-map bounds while the chunk is in its cache.
"""

from __future__ import annotations

import math

import numpy as np

from bcolzx import _threads
from bcolzx._ext import codec
from bcolzx._ext.special import SPECIAL_NAN, SPECIAL_VALUE, SPECIAL_ZERO, special_value
from bcolzx._format import layout
from bcolzx._format.superchunk import SPECIAL_CBYTES
from bcolzx._storage.base import Special
from bcolzx._storage.zones import bounds

__all__ = ["Encoder", "special", "quantize", "encode_chunk", "encode_in_pool"]

_SPECIAL_IN_INDEX = (SPECIAL_ZERO, SPECIAL_NAN)


def quantize(data: np.ndarray, significant_digits: int) -> np.ndarray:
    """Round floats to a power-of-two scale keeping `significant_digits` decimals.

    The same transformation as legacy bcolz's ``quantize`` cparam: data become
    ``around(scale * data) / scale`` with ``scale = 2**bits`` and ``bits`` the
    number of bits that hold `significant_digits` decimal digits; the mantissa
    bits below then are zeros, which compress.

    Raises
    ------
    TypeError
        If `data` is not floating point.
    """
    if data.dtype.kind != "f":
        raise TypeError("quantize is meant only for floating point data")
    if not significant_digits:
        return data
    bits = math.ceil(math.log2(10.0 ** significant_digits))
    scale = 2.0 ** bits
    return np.around(scale * data) / scale


def special(rows: np.ndarray, itemsize: int) -> Special | None:
    """`rows` as a special entry when they are one constant the index can hold, else None."""
    kind, value = special_value(rows, itemsize)
    if kind in _SPECIAL_IN_INDEX or (kind == SPECIAL_VALUE and itemsize <= 8):
        return Special(kind, value)
    return None


class Encoder:
    """The compressors of one array (for a thread count) and its byte-delta policy.

    Parameters
    ----------
    storage : Storage
        The dataset's storage metadata (codec, level, shuffle, block size,
        byte-delta mode).
    itemsize : int
        Bytes of one item (the shuffle's typesize).
    native : bool
        Chunks in the bcolzx format (specials allowed); else legacy chunks,
        compressed by `own`.
    nthreads : int
        C-Blosc2 threads per chunk.
    own : object, optional
        The store's own compressor (a legacy store's C-Blosc 1.x one).
    previous : Encoder, optional
        The encoder this one replaces (another thread count): its pipeline
        choice and trial countdown carry over.
    """

    def __init__(self, storage, itemsize: int, native: bool, nthreads: int, own=None,
                 previous: "Encoder | None" = None):
        self.itemsize = itemsize
        self.native = native
        self.until_trial = 0 if previous is None else previous.until_trial
        if own is not None:
            self.comp, self.plain, self.delta = own, None, None
            return
        cp = storage.cparams
        typesize = min(itemsize, 255) if itemsize else 1
        # One stream per block (no split): faster both ways and, after the
        # byte shuffle, as small or smaller (benchmarks/bench_codec.py).
        plain = codec.Compressor(cp.cname, cp.clevel, cp.shuffle, typesize, storage.blocksize,
                                 nthreads, split=False)
        delta = None
        if storage.bytedelta != "off" and cp.shuffle == codec.SHUFFLE and itemsize <= 255:
            delta = codec.Compressor(cp.cname, cp.clevel, cp.shuffle, typesize,
                                     storage.blocksize, nthreads, bytedelta=True, split=False)
        using_delta = previous is not None and previous.comp is previous.delta \
            and previous.delta is not None
        if storage.bytedelta == "on" and delta is not None:
            self.comp, self.plain, self.delta = delta, None, None
        elif delta is not None:
            self.plain, self.delta = plain, delta
            self.comp = delta if using_delta else plain
        else:
            self.comp, self.plain, self.delta = plain, None, None

    @property
    def trial_due(self) -> bool:
        """Whether the next chunk must be a byte-delta trial (encoded here, in order)."""
        return self.delta is not None and not self.until_trial

    def counted(self, n: int = 1) -> None:
        """`n` chunks were encoded with the current pipeline (between trials)."""
        if self.delta is not None:
            self.until_trial = max(0, self.until_trial - n)

    def encode(self, rows: np.ndarray, nthreads: int = 1):
        """Compressed bytes of `rows`, or a Special when they are one constant.

        With `nthreads` > 1, a byte-delta trial compresses both ways at once,
        on two pool threads.
        """
        if not self.native:
            return self.comp.compress(rows)
        entry = special(rows, self.itemsize)
        if entry is not None:
            if self.until_trial:  # counts as a chunk between trials
                self.until_trial -= 1
            return entry
        if self.delta is None:
            return self.comp.compress(rows)
        if self.until_trial:
            self.until_trial -= 1
            return self.comp.compress(rows)
        # A trial: both pipelines; byte-delta stays while it saves >= 10%.
        if nthreads > 1:
            plain, delta = _threads.run_all(lambda like: _threads.compressor(like).compress(rows),
                                            [self.plain, self.delta], 2)
        else:
            plain, delta = self.plain.compress(rows), self.delta.compress(rows)
        self.until_trial = layout.BYTEDELTA_RETRIAL
        if len(delta) * 10 <= len(plain) * 9:
            self.comp = self.delta
            return delta
        self.comp = self.plain
        return plain

    def encoded_size(self, rows: np.ndarray) -> int:
        """Bytes :meth:`encode` would store for `rows`, changing nothing."""
        if self.native and special(rows, self.itemsize) is not None:
            return SPECIAL_CBYTES
        if self.delta is None or self.until_trial:
            return len(self.comp.compress(rows))
        plain, delta = len(self.plain.compress(rows)), len(self.delta.compress(rows))
        return delta if delta * 10 <= plain * 9 else plain

    def encode_parts(self, parts: list, want_bounds: bool, nthreads: int) -> list:
        """``(entry, bounds or None)`` of each chunk of `parts`, in order.

        With several threads and several chunks of the bcolzx format, they are
        cut in contiguous runs encoded at once (:func:`encode_runs`); byte-delta
        trials still run one chunk at a time, in order.
        """
        if nthreads < 2 or len(parts) < 2 or not self.native:
            return [(self.encode(part), None) for part in parts]
        done, encoded = 0, []
        while done < len(parts):
            if self.trial_due:  # picks the pipeline
                encoded.append((self.encode(parts[done], nthreads), None))
                done += 1
                continue
            take = len(parts) - done
            if self.delta is not None:
                take = min(take, self.until_trial)
                self.until_trial -= take
            encoded.extend(encode_runs(self.comp, self.itemsize, want_bounds,
                                       parts[done:done + take], nthreads))
            done += take
        return encoded


def encode_chunk(comp: codec.Compressor, itemsize: int, rows: np.ndarray,
                 want_bounds: bool) -> tuple:
    """``(entry, bounds or None)`` of one chunk of `rows`, compressed by `comp`."""
    entry = special(rows, itemsize)
    return (comp.compress(rows) if entry is None else entry,
            bounds(rows) if want_bounds else None)


def encode_in_pool(like: codec.Compressor, itemsize: int, rows: np.ndarray,
                   want_bounds: bool) -> tuple:
    """:func:`encode_chunk` with this pool thread's single-threaded copy of `like`."""
    return encode_chunk(_threads.compressor(like), itemsize, rows, want_bounds)


def encode_runs(like: codec.Compressor, itemsize: int, want_bounds: bool, parts: list,
                nthreads: int) -> list:
    """``(entry, bounds or None)`` of each chunk of `parts`, in order, the
    chunks cut in `nthreads` contiguous runs encoded at once (this thread
    takes the first), each thread with a single-threaded copy of `like`."""

    def run(chunks):
        comp = _threads.compressor(like)
        return [encode_chunk(comp, itemsize, rows, want_bounds) for rows in chunks]

    n = len(parts)
    runs = [parts[n * w // nthreads:n * (w + 1) // nthreads] for w in range(nthreads)]
    runs = [r for r in runs if r]
    out = []
    for encoded in _threads.map_ordered(run, runs, nthreads):
        out.extend(encoded)
    return out
