"""Chunk encoding: the compressors of an array, the byte-delta policy, special values.

An array's chunks are compressed by one of two C-Blosc2 pipelines after the
byte shuffle: plain, or followed by the byte-delta filter.  With the dataset's
``bytedelta`` set to ``"auto"``, a sample of chunks (the first, then one every
:data:`~bcolzx._format.layout.BYTEDELTA_RETRIAL`) are trials: the leading
:data:`~bcolzx._format.layout.BYTEDELTA_SAMPLE` bytes of each are compressed
both ways, byte-delta first, then plain, stopped as soon as it is too large
to be kept (:meth:`Encoder.plain_limit`); byte-delta stays in use while it
saves at least 10% there, and the chunk is then compressed once.  The
trials run in order, one chunk at a time, so 1 and 8 threads store the same
pipelines.  A chunk of one repeated
value (zeros, NaN, a constant) is not compressed at all: it becomes a
:class:`~bcolzx._storage.base.Special`, coded in the index (bcolzx format
only).  Several chunks are encoded chunk-parallel (:func:`encode_runs`):
the calling thread and pool threads take them one at a time
(:func:`bcolzx._threads.share`), each with a single-threaded compressor of
its own, computing the zone-map bounds while the chunk is in its cache, into
outputs the calling thread made (:class:`~bcolzx._ext.codec.ChunkBatch`).
"""

from __future__ import annotations

import math
import threading

import numpy as np

from bcolzx import _threads
from bcolzx._ext import codec
from bcolzx._ext.special import SPECIAL_NAN, SPECIAL_VALUE, SPECIAL_ZERO, special_value
from bcolzx._format import layout
from bcolzx._format.superchunk import SPECIAL_CBYTES
from bcolzx._storage.base import Special
from bcolzx._storage.zones import bounds

__all__ = ["Encoder", "special", "quantize", "encode_in_pool", "encode_into", "encode_runs"]

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

    def encode(self, rows: np.ndarray):
        """Compressed bytes of `rows`, or a Special when they are one constant."""
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
        return self.pick(rows).compress(rows)

    def pick(self, rows: np.ndarray, local=None, decide: bool = True) -> codec.Compressor:
        """The pipeline a byte-delta trial on `rows` keeps (the current one
        afterwards, if `decide`): the one that wins on their sample
        (:func:`trial_sample`), compressed both ways with ``local(compressor)``
        (default: the compressors themselves)."""
        local = local if local is not None else (lambda comp: comp)
        sample = trial_sample(rows)
        delta = len(local(self.delta).compress(sample))
        fits = local(self.plain).compress(sample, self.plain_limit(delta)) is not None
        if decide:
            self._decide(fits)
        return self.plain if fits else self.delta

    @staticmethod
    def plain_limit(delta: int) -> int:
        """The largest plain chunk a trial keeps when byte-delta makes it `delta`
        bytes: byte-delta stays while it saves >= 10% (``delta * 10 <= plain * 9``),
        so a plain compression stops as soon as it is larger."""
        return (10 * delta - 1) // 9

    def _decide(self, plain_fits: bool) -> int:
        """The outcome of a trial: the plain chunk fits :meth:`plain_limit` or
        byte-delta stays.  1 if it does, else 0."""
        self.until_trial = layout.BYTEDELTA_RETRIAL
        self.comp = self.plain if plain_fits else self.delta
        return int(not plain_fits)

    def encoded_size(self, rows: np.ndarray) -> int:
        """Bytes :meth:`encode` would store for `rows`, changing nothing."""
        if self.native and special(rows, self.itemsize) is not None:
            return SPECIAL_CBYTES
        if self.delta is None or self.until_trial:
            return len(self.comp.compress(rows))
        return len(self.pick(rows, decide=False).compress(rows))

    def encode_parts(self, parts: list, want_bounds: bool, nthreads: int) -> list:
        """``(entry, bounds or None)`` of each chunk of `parts`, in order.

        With several threads and several chunks of the bcolzx format, this
        thread and pool threads share them (:func:`encode_runs`), a byte-delta
        trial included: its two compressions are the first two items, and the
        chunks after it wait for its outcome.  The trial is the chunk it would
        be one chunk at a time (the first that is not a special), so 1 and 8
        threads store the same pipelines.
        """
        if nthreads < 2 or len(parts) < 2 or not self.native:
            return [(self.encode(part), None) for part in parts]
        done, encoded = 0, []
        while done < len(parts):
            trial = None
            if self.trial_due:  # the first chunk that is not a special is the trial
                while done < len(parts):
                    entry = special(parts[done], self.itemsize)
                    if entry is None:
                        trial = parts[done]
                        done += 1
                        break
                    encoded.append((entry, None))
                    done += 1
                if trial is None:
                    break
            take = len(parts) - done
            if self.delta is not None:
                take = min(take, self.until_trial if trial is None else layout.BYTEDELTA_RETRIAL)
            encoded.extend(encode_runs(self, want_bounds, parts[done:done + take], nthreads,
                                       trial))
            if trial is None:
                self.counted(take)
            else:
                self.until_trial -= take
            done += take
        return encoded


def trial_sample(rows: np.ndarray) -> np.ndarray:
    """The leading rows of a trial chunk its two compressions compare:
    :data:`~bcolzx._format.layout.BYTEDELTA_SAMPLE` bytes of them, at least one row."""
    per_row = max(1, rows.nbytes // max(1, len(rows)))
    return rows[:max(1, layout.BYTEDELTA_SAMPLE // per_row)]


def encode_in_pool(batch: codec.ChunkBatch, like: codec.Compressor, itemsize: int,
                   rows: np.ndarray, want_bounds: bool) -> tuple:
    """:func:`encode_into` of `rows`, the only chunk of `batch`, with this pool
    thread's single-threaded copy of `like`."""
    return encode_into(batch, 0, _threads.compressor(like), itemsize, rows, want_bounds)


#: Uncompressed bytes of the chunks one :class:`~bcolzx._ext.codec.ChunkBatch`
#: holds (its outputs are made at once, at their largest size).
BATCH_BYTES = 16 << 20


def encode_into(batch: codec.ChunkBatch, k: int, comp: codec.Compressor, itemsize: int,
                rows: np.ndarray, want_bounds: bool) -> tuple:
    """``(Special or None, bounds or None)`` of chunk `k` of `batch` (`rows`),
    compressed by `comp` into the batch unless it is a special."""
    entry = None
    if not batch.compress(k, comp, 0, itemsize):  # one item repeated: maybe a special
        entry = special(rows, itemsize)
        if entry is None:
            batch.compress(k, comp)
    return entry, bounds(rows) if want_bounds else None


def encode_runs(enc: Encoder, want_bounds: bool, parts: list, nthreads: int,
                trial: np.ndarray | None = None) -> list:
    """``(entry, bounds or None)`` of `trial` (if given: a byte-delta trial,
    which picks `enc`'s pipeline) and of each chunk of `parts`, in order,
    shared by this thread and ``nthreads - 1`` pool threads
    (:func:`_threads.share`), each with single-threaded copies of `enc`'s
    compressors, into the outputs of a :class:`~bcolzx._ext.codec.ChunkBatch`
    made here (:data:`BATCH_BYTES` at a time)."""
    out: list = []
    if trial is not None:
        out = _trial(enc, want_bounds, parts, nthreads, trial)
        parts = parts[len(out) - 1:]
    nbytes = max(parts[0].nbytes, 1) if parts else 1
    step = max(1, BATCH_BYTES // nbytes)
    for at in range(0, len(parts), step):
        out.extend(_batch(enc.comp, enc.itemsize, want_bounds, parts[at:at + step], nthreads))
    return out


def _batch(like: codec.Compressor, itemsize: int, want_bounds: bool, run: list,
           nthreads: int) -> list:
    """:func:`encode_runs` of the chunks of `run` (one batch), compressed as `like`."""
    batch = codec.ChunkBatch(run)
    done = _threads.share(lambda k: encode_into(batch, k, _threads.compressor(like), itemsize,
                                                run[k], want_bounds),
                          range(len(run)), nthreads)
    return [(batch.take(k) if entry is None else entry, computed)
            for k, (entry, computed) in enumerate(done)]


def _trial(enc: Encoder, want_bounds: bool, parts: list, nthreads: int,
           trial: np.ndarray) -> list:
    """:func:`encode_runs` of a byte-delta `trial` and the first chunks of
    `parts` after it (a batch's worth): the trial is the first item (this
    thread takes it: its sample compressed both ways picks the pipeline, then
    the chunk is compressed once), the chunks wait for its outcome."""
    parts = parts[:max(0, BATCH_BYTES // max(trial.nbytes, 1) - 1)]
    batch = codec.ChunkBatch([trial, *parts])
    decided = threading.Event()
    picked: list = []  # the pipeline the trial keeps
    itemsize = enc.itemsize

    def one(k: int):
        if k == 0:
            try:
                picked.append(enc.pick(trial, _threads.compressor))
            finally:
                decided.set()
        else:
            decided.wait()
            if not picked:  # the trial failed: its exception is raised first
                return None, None
        rows = trial if k == 0 else parts[k - 1]
        return encode_into(batch, k, _threads.compressor(picked[0]), itemsize, rows,
                           want_bounds)

    done = _threads.share(one, range(len(parts) + 1), nthreads)
    return [(batch.take(k) if entry is None else entry, computed)
            for k, (entry, computed) in enumerate(done)]
