# Groupby kernels: keys factorized into dense group numbers, aggregates accumulated per group.
#
# Factorizing (one hash table per key column, and one per pair of codes for
# several keys) and every accumulation loop run with the GIL released.  A
# table or accumulator may be shared between threads: a lock taken without
# the GIL serialises its calls (the driver, bcolzx._analytics.groupby, gives
# each pool thread its own, so the lock is never contended).  Group numbers
# are given in order of first appearance; a code below 0 marks a row that
# belongs to no group (a NaT key dropped, a row filtered out) and is skipped.

from cpython.pythread cimport (
    WAIT_LOCK,
    PyThread_acquire_lock,
    PyThread_allocate_lock,
    PyThread_free_lock,
    PyThread_release_lock,
    PyThread_type_lock,
)
from libc.math cimport isnan
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memset

import numpy as np

cdef int64_t EMPTY = -1


cdef inline uint64_t _mix(uint64_t x) noexcept nogil:
    """A 64-bit finaliser (splitmix64): every input bit moves every output bit."""
    x ^= x >> 30
    x *= <uint64_t>0xbf58476d1ce4e5b9
    x ^= x >> 27
    x *= <uint64_t>0x94d049bb133111eb
    x ^= x >> 31
    return x


cdef inline uint64_t _hash_bytes(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    cdef uint64_t h = <uint64_t>0x9e3779b97f4a7c15 ^ <uint64_t>n
    cdef uint64_t word
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        memcpy(&word, p + i, 8)
        h = _mix(h ^ word)
        i += 8
    if i < n:  # the last bytes, little-endian, without a call
        word = 0
        while i < n:
            word |= <uint64_t>p[i] << (8 * (i & 7))
            i += 1
        h = _mix(h ^ word)
    return h


cdef inline bint _same(const uint8_t* a, const uint8_t* b, Py_ssize_t n) noexcept nogil:
    """Whether ``a[:n]`` and ``b[:n]`` hold the same bytes (short keys without a call)."""
    cdef Py_ssize_t j
    if n > 16:
        return memcmp(a, b, <size_t>n) == 0
    for j in range(n):
        if a[j] != b[j]:
            return False
    return True


cdef int _new_slots(Py_ssize_t cap, int64_t** codes, void** more) noexcept nogil:
    """Allocate the `cap` slots of a hash table: group codes, all empty, and
    8 more bytes a slot (a key or a hash); -1 when out of memory."""
    cdef Py_ssize_t i
    codes[0] = <int64_t*>malloc(cap * sizeof(int64_t))
    more[0] = malloc(cap * 8)
    if codes[0] == NULL or more[0] == NULL:
        free(codes[0])
        free(more[0])
        return -1
    for i in range(cap):
        codes[0][i] = EMPTY
    return 0


cdef int _rehash(int64_t** codes, uint64_t** hashes, Py_ssize_t old_cap,
                 Py_ssize_t cap) noexcept nogil:
    """Move the slots of a table of (group code, key hash) pairs, `old_cap` of
    them, into `cap` new slots (a power of two), by the hashes they keep;
    -1 when out of memory (nothing lost)."""
    cdef int64_t* sc
    cdef uint64_t* sh
    cdef Py_ssize_t i, j
    cdef uint64_t mask = cap - 1
    if _new_slots(cap, &sc, <void**>&sh) < 0:
        return -1
    for i in range(old_cap):
        if codes[0][i] != EMPTY:
            j = hashes[0][i] & mask
            while sc[j] != EMPTY:
                j = (j + 1) & mask
            sc[j] = codes[0][i]
            sh[j] = hashes[0][i]
    free(codes[0])
    free(hashes[0])
    codes[0], hashes[0] = sc, sh
    return 0


cdef class _Locked:
    cdef PyThread_type_lock _lock

    def __cinit__(self, *args, **kwargs):
        self._lock = PyThread_allocate_lock()
        if self._lock == NULL:
            raise MemoryError("cannot allocate a lock")

    def __dealloc__(self):
        if self._lock != NULL:
            PyThread_free_lock(self._lock)


cdef class _Groups(_Locked):
    """A table that numbers groups, ``0 .. ngroups-1``."""
    cdef Py_ssize_t _n        # groups

    @property
    def ngroups(self):
        """Groups so far."""
        return self._n


cdef class Int64Table(_Groups):
    """Group numbers of int64 keys, in order of first appearance.

    ``factorize(keys, codes)`` writes each key's group number into `codes`
    (new keys get the next number); :meth:`keys` gives the keys by group number.
    """
    cdef int64_t* _slot_key
    cdef int64_t* _slot_code
    cdef int64_t* _keys
    cdef Py_ssize_t _cap      # slots (a power of two)
    cdef Py_ssize_t _keys_cap

    def __cinit__(self, *args, **kwargs):
        self._cap = 0
        self._n = 0
        self._keys_cap = 0
        if self._grow(64) < 0:
            raise MemoryError("cannot allocate a hash table")

    def __dealloc__(self):
        free(self._slot_key)
        free(self._slot_code)
        free(self._keys)

    cdef int _grow(self, Py_ssize_t cap) noexcept nogil:
        """Rehash into `cap` slots; -1 when out of memory (nothing lost)."""
        cdef int64_t* sk
        cdef int64_t* sc
        cdef Py_ssize_t i, j
        cdef uint64_t mask = cap - 1
        if _new_slots(cap, &sc, <void**>&sk) < 0:
            return -1
        for i in range(self._n):
            j = _mix(<uint64_t>self._keys[i]) & mask
            while sc[j] != EMPTY:
                j = (j + 1) & mask
            sk[j] = self._keys[i]
            sc[j] = i
        free(self._slot_key)
        free(self._slot_code)
        self._slot_key, self._slot_code, self._cap = sk, sc, cap
        return 0

    cdef int _factorize(self, const int64_t* keys, const uint8_t* valid, int64_t* codes,
                        Py_ssize_t n) noexcept nogil:
        cdef Py_ssize_t i, j
        cdef uint64_t mask = self._cap - 1
        cdef int64_t k, c, last_key = 0, last_code = -1
        cdef int64_t* more
        cdef int64_t* sk = self._slot_key
        cdef int64_t* sc = self._slot_code
        for i in range(n):
            if valid != NULL and not valid[i]:
                codes[i] = -1
                continue
            k = keys[i]
            if k == last_key and last_code >= 0:  # runs of one key (sorted data)
                codes[i] = last_code
                continue
            j = _mix(<uint64_t>k) & mask
            c = sc[j]
            while c != EMPTY and sk[j] != k:
                j = (j + 1) & mask
                c = sc[j]
            if c == EMPTY:
                if self._n == self._keys_cap:
                    more = <int64_t*>realloc(self._keys,
                                             (2 * self._keys_cap + 64) * sizeof(int64_t))
                    if more == NULL:
                        return -1
                    self._keys, self._keys_cap = more, 2 * self._keys_cap + 64
                c = self._n
                self._keys[c] = k
                sk[j] = k
                sc[j] = c
                self._n += 1
                if 4 * self._n > self._cap:  # a sparse table: short probes
                    if self._grow(4 * self._cap) < 0:
                        return -1
                    mask = self._cap - 1
                    sk, sc = self._slot_key, self._slot_code
            codes[i] = c
            last_key, last_code = k, c
        return 0

    def factorize(self, const int64_t[::1] keys, int64_t[::1] codes, const uint8_t[::1] valid=None):
        """Write the group number of each of `keys` into `codes` (-1 where `valid` is 0).

        Raises
        ------
        ValueError
            If `codes` or `valid` is not as long as `keys`.
        MemoryError
            If the table cannot grow.
        """
        cdef Py_ssize_t n = keys.shape[0]
        cdef int rc
        cdef const uint8_t* v = NULL
        if codes.shape[0] != n or (valid is not None and valid.shape[0] != n):
            raise ValueError("keys, codes and valid must have the same length")
        if valid is not None and n:
            v = &valid[0]
        if n == 0:
            return
        with nogil:
            PyThread_acquire_lock(self._lock, WAIT_LOCK)
            rc = self._factorize(&keys[0], v, &codes[0], n)
            PyThread_release_lock(self._lock)
        if rc < 0:
            raise MemoryError("cannot grow the table of groups")

    def keys(self):
        """The keys by group number (a new int64 array)."""
        out = np.empty(self._n, dtype=np.int64)
        cdef int64_t[::1] o = out
        if self._n:
            memcpy(&o[0], self._keys, self._n * sizeof(int64_t))
        return out


cdef class BytesTable(_Groups):
    """Group numbers of fixed-width byte keys (``S<n>``, or ``U<n>`` as bytes)."""
    cdef Py_ssize_t _width
    cdef int64_t* _slot_code
    cdef uint64_t* _slot_hash
    cdef uint8_t* _keys
    cdef Py_ssize_t _cap
    cdef Py_ssize_t _keys_cap

    def __cinit__(self, Py_ssize_t width):
        if width < 1:
            raise ValueError(f"width must be positive, not {width}")
        self._width = width
        self._cap = 0
        self._n = 0
        self._keys_cap = 0
        if self._grow(64) < 0:
            raise MemoryError("cannot allocate a hash table")

    def __dealloc__(self):
        free(self._slot_code)
        free(self._slot_hash)
        free(self._keys)

    cdef int _grow(self, Py_ssize_t cap) noexcept nogil:
        if _rehash(&self._slot_code, &self._slot_hash, self._cap, cap) < 0:
            return -1
        self._cap = cap
        return 0

    cdef int _factorize(self, const uint8_t* keys, const uint8_t* valid, int64_t* codes,
                        Py_ssize_t n) noexcept nogil:
        cdef Py_ssize_t i, j, w = self._width
        cdef uint64_t mask = self._cap - 1, h
        cdef const uint8_t* k
        cdef uint8_t* more
        cdef int64_t c
        for i in range(n):
            if valid != NULL and not valid[i]:
                codes[i] = -1
                continue
            k = keys + i * w
            h = _hash_bytes(k, w)
            j = h & mask
            while True:
                c = self._slot_code[j]
                if c == EMPTY or (self._slot_hash[j] == h and
                                  memcmp(self._keys + c * w, k, w) == 0):
                    break
                j = (j + 1) & mask
            if c != EMPTY:
                codes[i] = c
                continue
            if self._n == self._keys_cap:
                more = <uint8_t*>realloc(self._keys, (2 * self._keys_cap + 64) * w)
                if more == NULL:
                    return -1
                self._keys, self._keys_cap = more, 2 * self._keys_cap + 64
            memcpy(self._keys + self._n * w, k, w)
            self._slot_code[j] = self._n
            self._slot_hash[j] = h
            codes[i] = self._n
            self._n += 1
            if 2 * self._n > self._cap:
                if self._grow(2 * self._cap) < 0:
                    return -1
                mask = self._cap - 1
        return 0

    def factorize(self, keys, int64_t[::1] codes, const uint8_t[::1] valid=None):
        """Write the group number of each row of `keys` (a C-contiguous array
        whose items are ``width`` bytes) into `codes`.

        Raises
        ------
        ValueError
            If the items are not ``width`` bytes or the lengths differ.
        MemoryError
            If the table cannot grow.
        """
        arr = np.ascontiguousarray(keys)
        if arr.dtype.itemsize != self._width:
            raise ValueError(f"keys of {arr.dtype.itemsize} bytes, the table's are {self._width}")
        cdef const uint8_t[::1] raw = arr.reshape(-1).view(np.uint8)
        cdef Py_ssize_t n = arr.shape[0]
        cdef const uint8_t* v = NULL
        cdef int rc
        if codes.shape[0] != n or (valid is not None and valid.shape[0] != n):
            raise ValueError("keys, codes and valid must have the same length")
        if n == 0:
            return
        if valid is not None:
            v = &valid[0]
        with nogil:
            PyThread_acquire_lock(self._lock, WAIT_LOCK)
            rc = self._factorize(&raw[0], v, &codes[0], n)
            PyThread_release_lock(self._lock)
        if rc < 0:
            raise MemoryError("cannot grow the table of groups")

    def keys(self):
        """The keys by group number, as a ``(ngroups, width)`` uint8 array."""
        out = np.empty((self._n, self._width), dtype=np.uint8)
        cdef uint8_t[:, ::1] o = out
        if self._n:
            memcpy(&o[0, 0], self._keys, self._n * self._width)
        return out


cdef class VarBytesTable(_Groups):
    """Group numbers of variable-length byte keys (UTF-8 strings or bytes).

    Keys are given as one buffer of their bytes and ``n + 1`` offsets into it
    (key ``i`` is ``data[offsets[i]:offsets[i + 1]]``), as
    :func:`bcolzx._ext.strings.flatten` makes them; ``flags`` may mark rows
    to skip (1: code -1) or missing values kept as a group of their own (2:
    the *missing group*, one for the whole table).  :meth:`keys` gives the
    keys back in the same form, by group number.
    """
    cdef int64_t* _slot_code
    cdef uint64_t* _slot_hash
    cdef uint8_t* _data       # the groups' keys, end to end
    cdef int64_t* _offs       # _n + 1 offsets into _data
    cdef Py_ssize_t _cap      # slots (a power of two)
    cdef Py_ssize_t _offs_cap
    cdef Py_ssize_t _data_cap
    cdef int64_t _na_code     # the missing group's number, -1 until it appears

    def __cinit__(self, *args, **kwargs):
        self._cap = 0
        self._n = 0
        self._data_cap = 0
        self._na_code = -1
        self._offs_cap = 64
        self._offs = <int64_t*>malloc(self._offs_cap * sizeof(int64_t))
        if self._offs == NULL or self._grow(64) < 0:
            raise MemoryError("cannot allocate a hash table")
        self._offs[0] = 0

    def __dealloc__(self):
        free(self._slot_code)
        free(self._slot_hash)
        free(self._data)
        free(self._offs)

    cdef int _grow(self, Py_ssize_t cap) noexcept nogil:
        if _rehash(&self._slot_code, &self._slot_hash, self._cap, cap) < 0:
            return -1
        self._cap = cap
        return 0

    cdef int _append(self, const uint8_t* k, Py_ssize_t size) noexcept nogil:
        """Store key `k` as group ``_n`` (not yet counted); -1 when out of memory."""
        cdef int64_t* offs
        cdef uint8_t* data
        cdef Py_ssize_t need, end = self._offs[self._n]
        if self._n + 2 > self._offs_cap:
            offs = <int64_t*>realloc(self._offs, 2 * self._offs_cap * sizeof(int64_t))
            if offs == NULL:
                return -1
            self._offs, self._offs_cap = offs, 2 * self._offs_cap
        need = end + size
        if need > self._data_cap:
            need = max(need, 2 * self._data_cap + 256)
            data = <uint8_t*>realloc(self._data, need)
            if data == NULL:
                return -1
            self._data, self._data_cap = data, need
        if size:
            memcpy(self._data + end, k, size)
        self._offs[self._n + 1] = end + size
        return 0

    cdef int _factorize(self, const uint8_t* data, const int64_t* offsets,
                        const uint8_t* flags, int64_t* codes, Py_ssize_t n) noexcept nogil:
        cdef Py_ssize_t i, j, size
        cdef uint64_t mask = self._cap - 1, h
        cdef const uint8_t* k
        cdef int64_t c, last_code = -1
        cdef const uint8_t* last_key = NULL
        cdef Py_ssize_t last_size = 0
        for i in range(n):
            if flags != NULL and flags[i]:
                if flags[i] == 1:
                    codes[i] = -1
                    continue
                if self._na_code < 0:  # the missing group: an empty key, never hashed
                    if self._append(NULL, 0) < 0:
                        return -1
                    self._na_code = self._n
                    self._n += 1
                codes[i] = self._na_code
                continue
            k = data + offsets[i]
            size = offsets[i + 1] - offsets[i]
            if last_code >= 0 and size == last_size and _same(k, last_key, size):
                codes[i] = last_code  # runs of one key (sorted data)
                continue
            h = _hash_bytes(k, size)
            j = h & mask
            while True:
                c = self._slot_code[j]
                if c == EMPTY or (self._slot_hash[j] == h and
                                  self._offs[c + 1] - self._offs[c] == size and
                                  _same(self._data + self._offs[c], k, size)):
                    break
                j = (j + 1) & mask
            if c == EMPTY:
                if self._append(k, size) < 0:
                    return -1
                c = self._n
                self._slot_code[j] = c
                self._slot_hash[j] = h
                self._n += 1
                if 2 * self._n > self._cap:
                    if self._grow(2 * self._cap) < 0:
                        return -1
                    mask = self._cap - 1
            codes[i] = c
            last_code, last_key, last_size = c, k, size
        return 0

    def factorize(self, const uint8_t[::1] data, const int64_t[::1] offsets,
                  int64_t[::1] codes, const uint8_t[::1] flags=None):
        """Write the group number of each key into `codes`.

        Parameters
        ----------
        data : uint8 array
            The keys' bytes.
        offsets : int64 array
            ``n + 1`` offsets into `data`, non-decreasing, within it.
        codes : int64 array
            ``n`` group numbers, written.
        flags : uint8 array, optional
            Per key: 0 a key, 1 a row to skip (code -1), 2 a missing value
            (the missing group).

        Raises
        ------
        ValueError
            If the lengths differ or an offset is outside `data` or decreasing.
        MemoryError
            If the table cannot grow.
        """
        cdef Py_ssize_t n = codes.shape[0], i, size = data.shape[0]
        cdef const uint8_t* f = NULL
        cdef const uint8_t* d = NULL
        cdef int rc
        cdef Py_ssize_t bad = -1
        if offsets.shape[0] != n + 1 or (flags is not None and flags.shape[0] != n):
            raise ValueError("offsets must be one longer than codes, flags as long")
        if n == 0:
            return
        with nogil:
            if not 0 <= offsets[0] <= size:
                bad = 0
            for i in range(n):
                if not offsets[i] <= offsets[i + 1] <= size:
                    bad = i + 1
                    break
        if bad >= 0:
            raise ValueError(f"offset {bad} is decreasing or outside the {size} bytes of keys")
        if flags is not None:
            f = &flags[0]
        if size:
            d = &data[0]
        with nogil:
            PyThread_acquire_lock(self._lock, WAIT_LOCK)
            rc = self._factorize(d, &offsets[0], f, &codes[0], n)
            PyThread_release_lock(self._lock)
        if rc < 0:
            raise MemoryError("cannot grow the table of groups")

    def keys(self):
        """The keys by group number (the missing group included): ``(data, offsets, missing)``, a new uint8
        array of their bytes, ``ngroups + 1`` int64 offsets, and the number of
        the missing group (-1 when there is none)."""
        data = np.empty(self._offs[self._n], dtype=np.uint8)
        offsets = np.empty(self._n + 1, dtype=np.int64)
        cdef uint8_t[::1] d = data
        cdef int64_t[::1] o = offsets
        if self._offs[self._n]:
            memcpy(&d[0], self._data, self._offs[self._n])
        memcpy(&o[0], self._offs, (self._n + 1) * sizeof(int64_t))
        return data, offsets, self._na_code


cdef class PairSet(_Locked):
    """A set of ``(group, value)`` pairs of int64, for ``nunique``."""
    cdef int64_t* _a
    cdef int64_t* _b
    cdef uint8_t* _used
    cdef Py_ssize_t _cap
    cdef Py_ssize_t _n

    def __cinit__(self):
        self._cap = 0
        self._n = 0
        if self._grow(64) < 0:
            raise MemoryError("cannot allocate a hash set")

    def __dealloc__(self):
        free(self._a)
        free(self._b)
        free(self._used)

    cdef inline uint64_t _h(self, int64_t a, int64_t b) noexcept nogil:
        return _mix(<uint64_t>a * <uint64_t>0x9e3779b97f4a7c15 ^ _mix(<uint64_t>b))

    cdef int _grow(self, Py_ssize_t cap) noexcept nogil:
        cdef int64_t* na = <int64_t*>malloc(cap * sizeof(int64_t))
        cdef int64_t* nb = <int64_t*>malloc(cap * sizeof(int64_t))
        cdef uint8_t* nu = <uint8_t*>malloc(cap)
        cdef Py_ssize_t i, j
        cdef uint64_t mask = cap - 1
        if na == NULL or nb == NULL or nu == NULL:
            free(na)
            free(nb)
            free(nu)
            return -1
        memset(nu, 0, cap)
        for i in range(self._cap):
            if self._used[i]:
                j = self._h(self._a[i], self._b[i]) & mask
                while nu[j]:
                    j = (j + 1) & mask
                na[j], nb[j], nu[j] = self._a[i], self._b[i], 1
        free(self._a)
        free(self._b)
        free(self._used)
        self._a, self._b, self._used, self._cap = na, nb, nu, cap
        return 0

    cdef int _add(self, const int64_t* a, const int64_t* b, const uint8_t* valid,
                  Py_ssize_t n) noexcept nogil:
        cdef Py_ssize_t i, j
        cdef uint64_t mask = self._cap - 1
        for i in range(n):
            if a[i] < 0 or (valid != NULL and not valid[i]):
                continue
            j = self._h(a[i], b[i]) & mask
            while self._used[j] and not (self._a[j] == a[i] and self._b[j] == b[i]):
                j = (j + 1) & mask
            if self._used[j]:
                continue
            self._a[j], self._b[j], self._used[j] = a[i], b[i], 1
            self._n += 1
            if 2 * self._n > self._cap:
                if self._grow(2 * self._cap) < 0:
                    return -1
                mask = self._cap - 1
        return 0

    def add(self, const int64_t[::1] groups, const int64_t[::1] values,
            const uint8_t[::1] valid=None):
        """Add the pairs ``(groups[i], values[i])`` (rows of a group below 0, or
        where `valid` is 0, are skipped).

        Raises
        ------
        ValueError
            If the lengths differ.
        MemoryError
            If the set cannot grow.
        """
        cdef Py_ssize_t n = groups.shape[0]
        cdef const uint8_t* v = NULL
        cdef int rc
        if values.shape[0] != n or (valid is not None and valid.shape[0] != n):
            raise ValueError("groups, values and valid must have the same length")
        if n == 0:
            return
        if valid is not None:
            v = &valid[0]
        with nogil:
            PyThread_acquire_lock(self._lock, WAIT_LOCK)
            rc = self._add(&groups[0], &values[0], v, n)
            PyThread_release_lock(self._lock)
        if rc < 0:
            raise MemoryError("cannot grow the set of pairs")

    def pairs(self):
        """The pairs, as two int64 arrays ``(groups, values)`` (in no order)."""
        a = np.empty(self._n, dtype=np.int64)
        b = np.empty(self._n, dtype=np.int64)
        cdef int64_t[::1] oa = a, ob = b
        cdef Py_ssize_t i, k = 0
        for i in range(self._cap):
            if self._used[i]:
                oa[k], ob[k] = self._a[i], self._b[i]
                k += 1
        return a, b

    def counts(self, Py_ssize_t ngroups):
        """Distinct values per group, for groups ``0 .. ngroups-1`` (int64)."""
        out = np.zeros(ngroups, dtype=np.int64)
        cdef int64_t[::1] o = out
        cdef Py_ssize_t i
        for i in range(self._cap):
            if self._used[i]:
                if not 0 <= self._a[i] < ngroups:
                    raise ValueError(f"group {self._a[i]} outside 0..{ngroups}")
                o[self._a[i]] += 1
        return out


# -- accumulations: one family of aggregates per function -------------------------------


def _check(Py_ssize_t n, Py_ssize_t nvalues, Py_ssize_t ngroups, *arrays):
    """ValueError unless there is one value per code and room for `ngroups` groups."""
    if nvalues != n:
        raise ValueError(f"{n} codes and {nvalues} values: one value per code is needed")
    for a in arrays:
        if a is not None and a.shape[0] < ngroups:
            raise ValueError(f"an accumulator holds {a.shape[0]} groups, {ngroups} needed")


def sums_f8(const int64_t[::1] codes, const double[::1] values, Py_ssize_t ngroups,
            double[::1] sums, double[::1] comp, int64_t[::1] counts):
    """Sums (Kahan-compensated, NaN skipped) and counts of non-NaN values per group.

    Raises
    ------
    ValueError
        If an array is too short.
    """
    cdef Py_ssize_t i, n = codes.shape[0]
    cdef int64_t g
    cdef double y, t, v
    _check(n, values.shape[0], ngroups, sums, comp, counts)
    with nogil:
        for i in range(n):
            g = codes[i]
            v = values[i]
            if g < 0 or g >= ngroups or isnan(v):
                continue
            y = v - comp[g]
            t = sums[g] + y
            comp[g] = (t - sums[g]) - y
            sums[g] = t
            counts[g] += 1


def sums_i8(const int64_t[::1] codes, const int64_t[::1] values, Py_ssize_t ngroups,
            int64_t[::1] sums, int64_t[::1] counts):
    """Sums (wrapping as int64, so uint64 sums too) and counts per group.

    Raises
    ------
    ValueError
        If an array is too short.
    """
    cdef Py_ssize_t i, n = codes.shape[0]
    cdef int64_t g
    _check(n, values.shape[0], ngroups, sums, counts)
    with nogil:
        for i in range(n):
            g = codes[i]
            if g < 0 or g >= ngroups:
                continue
            sums[g] = <int64_t>(<uint64_t>sums[g] + <uint64_t>values[i])
            counts[g] += 1


def extremes_f8(const int64_t[::1] codes, const double[::1] values, Py_ssize_t ngroups,
                double[::1] mins, double[::1] maxs):
    """Smallest and largest non-NaN value per group (NaN until one is seen).

    Raises
    ------
    ValueError
        If an array is too short.
    """
    cdef Py_ssize_t i, n = codes.shape[0]
    cdef int64_t g
    cdef double v
    _check(n, values.shape[0], ngroups, mins, maxs)
    with nogil:
        for i in range(n):
            g = codes[i]
            v = values[i]
            if g < 0 or g >= ngroups or isnan(v):
                continue
            if isnan(mins[g]) or v < mins[g]:
                mins[g] = v
            if isnan(maxs[g]) or v > maxs[g]:
                maxs[g] = v


def extremes_i8(const int64_t[::1] codes, const int64_t[::1] values, Py_ssize_t ngroups,
                int64_t[::1] mins, int64_t[::1] maxs, uint8_t[::1] seen,
                const uint8_t[::1] valid=None, bint unsigned=False):
    """Smallest and largest value per group (compared as uint64 if `unsigned`),
    rows where `valid` is 0 skipped; `seen` marks the groups with a value.

    Raises
    ------
    ValueError
        If an array is too short.
    """
    cdef Py_ssize_t i, n = codes.shape[0]
    cdef int64_t g, v
    cdef const uint8_t* ok = NULL
    if valid is not None and valid.shape[0] != n:
        raise ValueError("codes and valid must have the same length")
    _check(n, values.shape[0], ngroups, mins, maxs, seen)
    if valid is not None and n:
        ok = &valid[0]
    with nogil:
        for i in range(n):
            g = codes[i]
            if g < 0 or g >= ngroups or (ok != NULL and not ok[i]):
                continue
            v = values[i]
            if not seen[g]:
                mins[g] = v
                maxs[g] = v
                seen[g] = 1
            elif unsigned:
                if <uint64_t>v < <uint64_t>mins[g]:
                    mins[g] = v
                if <uint64_t>v > <uint64_t>maxs[g]:
                    maxs[g] = v
            else:
                if v < mins[g]:
                    mins[g] = v
                if v > maxs[g]:
                    maxs[g] = v


def moments_f8(const int64_t[::1] codes, const double[::1] values, Py_ssize_t ngroups,
               int64_t[::1] counts, double[::1] means, double[::1] m2):
    """Welford's running count, mean and sum of squared deviations per group (NaN skipped).

    Raises
    ------
    ValueError
        If an array is too short.
    """
    cdef Py_ssize_t i, n = codes.shape[0]
    cdef int64_t g
    cdef double v, d
    _check(n, values.shape[0], ngroups, counts, means, m2)
    with nogil:
        for i in range(n):
            g = codes[i]
            v = values[i]
            if g < 0 or g >= ngroups or isnan(v):
                continue
            counts[g] += 1
            d = v - means[g]
            means[g] += d / counts[g]
            m2[g] += d * (v - means[g])


def first_last(const int64_t[::1] codes, const int64_t[::1] bits, int64_t first_row,
               Py_ssize_t ngroups, int64_t[::1] first_at, int64_t[::1] first_val,
               int64_t[::1] last_at, int64_t[::1] last_val, const uint8_t[::1] valid=None,
               const int64_t[::1] rows=None):
    """The first and last valid value per group (as int64 bits) and their rows.

    Row ``i`` is row ``first_row + i`` of the table, or ``rows[i]`` when
    given; a group's first is kept where its row is smaller than the one
    held (``first_at`` starts at the largest int64), its last where larger
    (``last_at`` starts at -1), so blocks may come in any order.

    Raises
    ------
    ValueError
        If an array is too short.
    """
    cdef Py_ssize_t i, n = codes.shape[0]
    cdef int64_t g, r
    cdef const uint8_t* ok = NULL
    cdef const int64_t* at = NULL
    if (valid is not None and valid.shape[0] != n) or (rows is not None and rows.shape[0] != n):
        raise ValueError("codes, valid and rows must have the same length")
    _check(n, bits.shape[0], ngroups, first_at, first_val, last_at, last_val)
    if valid is not None and n:
        ok = &valid[0]
    if rows is not None and n:
        at = &rows[0]
    with nogil:
        for i in range(n):
            g = codes[i]
            if g < 0 or g >= ngroups or (ok != NULL and not ok[i]):
                continue
            r = at[i] if at != NULL else first_row + i
            if r < first_at[g]:
                first_at[g] = r
                first_val[g] = bits[i]
            if r > last_at[g]:
                last_at[g] = r
                last_val[g] = bits[i]
