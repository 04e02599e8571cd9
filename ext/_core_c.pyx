# cython: language_level=3, freethreading_compatible=False
"""Compiled twin of the core (``clobkit._core_c``).

Same names, signatures and exceptions as ``clobkit._core_py``. The hot paths
(order ids, request signing, amounts of ordinary inputs) run in C; any input
the fast path does not recognise is handed to the pure twin, which either
computes it or raises the canonical error, so both twins agree on every input.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.unicode cimport PyUnicode_GET_LENGTH
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc
from libc.string cimport memchr, memcmp, memcpy, memset

import os as _os

from clobkit import _arrow_ids as _ids
from clobkit import _columns as _col
from clobkit import _amounts_py as _a
from clobkit import _parse as _p
from clobkit._types import CORE_API
from clobkit.errors import OrderFieldError, SignatureInputError
from clobkit._types import Amounts
from clobkit._wallet import prepare_wallet

cdef extern from "Python.h":
    ctypedef struct PyTypeObject:
        PyObject *(*tp_alloc)(PyTypeObject *, Py_ssize_t) except NULL
    void PyTuple_SET_ITEM(object t, Py_ssize_t i, object v)
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    void *PyUnicode_DATA(object o)
    bint PyUnicode_IS_COMPACT_ASCII(object o)
    PyObject **PySequence_Fast_ITEMS(object o)
    long long PyLong_AsLongLongAndOverflow(object o, int *overflow) except? -1
    dict PyDict_Copy(object d)
    void _incref "Py_INCREF"(PyObject *o)
    void _decref "Py_DECREF"(PyObject *o)
    int PyDict_SetItem(object d, object k, object v) except -1

cdef extern from *:
    """
    #include <time.h>
    /* Nonce bytes pooled in this process must never be reused by a forked
       child: fork marks the pool stale (getpid() per request is a syscall). */
    static volatile int ck_nonces_stale = 1;
    #if defined(_WIN32)
    static void ck_watch_fork(void) {}
    #else
    #include <pthread.h>
    static void ck_mark_stale(void) { ck_nonces_stale = 1; }
    static void ck_watch_fork(void) { pthread_atfork(NULL, NULL, ck_mark_stale); }
    #endif
    /* CPU time of the calling thread (ns): what it spent itself, not counting
       the time it waited or was preempted; 0 where the clock is missing. */
    static long long ck_thread_ns(void) {
    #if defined(CLOCK_THREAD_CPUTIME_ID)
        struct timespec ts;
        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
        return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    #else
        return 0;
    #endif
    }
    static long long ck_now_ms(void) {
        struct timespec ts;
        if (timespec_get(&ts, TIME_UTC) != TIME_UTC) return -1;
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    #include "keccak.h"
    /* Cython has no pointer-to-array type: digests travel as flat bytes. */
    #define ck_order_ids_flat(ctx, orders, n, out) \
        ck_order_ids((ctx), (orders), (n), (uint8_t (*)[32])(out))
    /* a * b + c as 128 bits: the low half returned, the high half in *hi. */
    static inline uint64_t ck_muladd(uint64_t a, uint64_t b, uint64_t c, uint64_t *hi) {
    #if defined(__SIZEOF_INT128__)
        unsigned __int128 t = (unsigned __int128)a * b + c;
        *hi = (uint64_t)(t >> 64);
        return (uint64_t)t;
    #else
        uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
        uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
        uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
        uint64_t lo = (mid << 32) | (uint32_t)p00;
        uint64_t h = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
        lo += c;
        h += lo < c;
        *hi = h;
        return lo;
    #endif
    }
    /* Zero memory in a way the compiler may not drop as a dead store. */
    static void ck_wipe(void *p, size_t n) {
        volatile unsigned char *v = (volatile unsigned char *)p;
        while (n--) *v++ = 0;
    }
    /* 128-bit product check: a * b fits in 64 bits. */
    static int ck_mul_ok(uint64_t a, uint64_t b, uint64_t *out) {
    #if defined(__GNUC__) || defined(__clang__)
        return !__builtin_mul_overflow(a, b, out);
    #else
        if (a != 0 && b > UINT64_MAX / a) return 0;
        *out = a * b;
        return 1;
    #endif
    }
    """
    int ck_nonces_stale
    void ck_watch_fork()
    long long ck_now_ms()
    long long ck_thread_ns() nogil
    int ck_mul_ok(uint64_t a, uint64_t b, uint64_t *out)
    void ck_wipe(void *p, size_t n)
    uint64_t ck_muladd(uint64_t a, uint64_t b, uint64_t c, uint64_t *hi) nogil
    void ck_order_ids_flat(const ck_order_ctx *ctx, const ck_order *orders, size_t n, uint8_t *out) nogil

cdef extern from "keccak.h":
    ctypedef struct ck_u256:
        uint64_t w[4]
    ctypedef struct ck_order:
        ck_u256 salt
        ck_u256 token_id
        ck_u256 maker_amount
        ck_u256 taker_amount
        ck_u256 expiration  # V1; the same storage as timestamp (an anonymous union)
        ck_u256 nonce  # V1; metadata
        ck_u256 fee_rate_bps  # V1; builder
        ck_u256 timestamp
        ck_u256 metadata
        ck_u256 builder
        uint8_t side
        uint8_t neg_risk
    ctypedef struct ck_order_ctx:
        uint8_t typehash[32]
        uint8_t maker[32]
        uint8_t signer[32]
        uint8_t taker[32]
        uint8_t signature_type[32]
        uint8_t domain[2][32]
        uint8_t layout
    enum:
        CK_LAYOUT_V1
        CK_LAYOUT_V2
    void ck_keccak256(const uint8_t *inp, size_t length, uint8_t *out) nogil
    void ck_order_struct_hash(const ck_order_ctx *ctx, const ck_order *order, uint8_t *out) nogil
    int ck_keccak_set_impl(int impl)
    int ck_keccak_impl()

cdef extern from "workers.h":
    ctypedef struct ck_task:
        void (*run)(ck_task *task) noexcept nogil
    int ck_pool_start(ck_task *job, int helpers) nogil
    void ck_pool_wait() nogil

cdef extern from "batch.h":
    enum:
        C_TOKEN "CK_C_TOKEN"
        C_MAKER "CK_C_MAKER"
        C_TAKER "CK_C_TAKER"
        C_SIDE "CK_C_SIDE"
        C_SALT "CK_C_SALT"
        C_FEE "CK_C_FEE"
        C_NONCE "CK_C_NONCE"
        C_EXPIRATION "CK_C_EXPIRATION"
        C_NEG_RISK "CK_C_NEG_RISK"
        C_TIMESTAMP "CK_C_TIMESTAMP"
        C_METADATA "CK_C_METADATA"
        C_BUILDER "CK_C_BUILDER"
        CK_F_REFS
        CK_ID_CHARS
        CK_SIG_CHARS
    uint64_t CK_REF_RAW
    uint64_t CK_REF_LIMBS
    const char *CK_REF_MISS
    ctypedef struct ck_ref:
        const char *p
        uint64_t v
    ctypedef struct ck_src:
        int fmt
        int width
        int is_signed
        const uint8_t *valid
        const uint8_t *data
        const uint8_t *offs
        int64_t offset
        int64_t start, n
        const uint8_t *table
        const uint8_t *ok
        int64_t ndict
    ctypedef struct ck_column:
        const ck_src *srcs
        int nsrcs
        int kind
        size_t off
    ctypedef int (*ck_secp_sign_fn)(const void *ctx, void *sig, const unsigned char *msg32,
                                    const unsigned char *seckey, const void *noncefp,
                                    const void *ndata) noexcept nogil
    ctypedef int (*ck_secp_serialize_fn)(const void *ctx, unsigned char *out64, int *recid,
                                         const void *sig) noexcept nogil
    ctypedef struct ck_signer:
        ck_secp_sign_fn sign
        ck_secp_serialize_fn serialize
        const void *ctx
        const unsigned char *key
    ctypedef struct ck_batch:
        ck_task task
        const ck_order_ctx *ctx
        const ck_order *tmpl
        const ck_column *cols
        int ncols
        int64_t lo, hi
        int64_t block
        char *ids
        const uint8_t *digests
        const ck_signer *signer
        char *sigs
        int64_t base
        uint8_t *missed
        int failed
        size_t next
    int64_t ck_fill_run(const ck_src *s, int64_t j0, int64_t m, ck_order *orders, int kind,
                        size_t off) nogil
    bint ck_u256_digits(const char *s, size_t n, ck_u256 *out) nogil
    bint ck_hex_limbs(const char *s, ck_u256 *out) nogil
    int ck_sign_digest(const ck_signer *s, const uint8_t *digest, char *out) nogil
    void ck_batch_run(ck_task *task) noexcept nogil
    void ck_batch_go(ck_batch *b, int helpers) nogil

cdef extern from *:
    """
    /* The exact types whose contents the workers may read without the GIL
       (immutable, and kept alive by the call's tuple). */
    static inline int ck_is_ascii_str(PyObject *o) {
        return PyUnicode_CheckExact(o) && PyUnicode_IS_COMPACT_ASCII(o);
    }
    static inline int ck_is_int(PyObject *o) { return PyLong_CheckExact(o); }
    static inline int ck_is_bytes(PyObject *o) { return PyBytes_CheckExact(o); }
    /* A non-negative int below 2**256 into limbs (0), or -1 (an error is left
       cleared: the Python path words it). */
    static int ck_int_limbs(PyObject *o, ck_u256 *x) {
        unsigned char b[32];
    #if PY_VERSION_HEX >= 0x030D0000
        Py_ssize_t need = PyLong_AsNativeBytes(o, b, 32, Py_ASNATIVEBYTES_LITTLE_ENDIAN |
            Py_ASNATIVEBYTES_UNSIGNED_BUFFER | Py_ASNATIVEBYTES_REJECT_NEGATIVE);
        if (need < 0 || need > 32) { PyErr_Clear(); return -1; }
    #else
        if (_PyLong_AsByteArray((PyLongObject *)o, b, 32, 1, 0) < 0) { PyErr_Clear(); return -1; }
    #endif
        for (int i = 0; i < 4; i++) {
            uint64_t w = 0;
            for (int j = 7; j >= 0; j--) w = (w << 8) | b[8 * i + j];
            x->w[i] = w;
        }
        return 0;
    }
    """
    bint ck_is_ascii_str(PyObject *o)
    bint ck_is_int(PyObject *o)
    bint ck_is_bytes(PyObject *o)
    int ck_int_limbs(PyObject *o, ck_u256 *x)


cdef extern from "sha256.h":
    ctypedef struct ck_hmac_key:
        pass
    void ck_sha256(const uint8_t *inp, size_t length, uint8_t *out) nogil
    void ck_hmac_sha256_init(ck_hmac_key *key, const uint8_t *secret, size_t length) nogil
    void ck_hmac_sha256(const ck_hmac_key *key, const uint8_t *msg, size_t length, uint8_t *out) nogil
    int ck_sha256_set_impl(int impl)
    int ck_sha256_impl()

cdef extern from "sign.h":
    ctypedef struct ck_request:
        const char *method
        const char *path
        const char *ts
        const char *nonce
        size_t method_len, path_len, ts_len, nonce_len
        const uint8_t *body
        size_t body_len
        char *sig
    int ck_sign_requests(const ck_hmac_key *key, const ck_request *reqs, size_t n) nogil
    void ck_hex(const uint8_t *inp, size_t n, char *out) nogil
    void ck_expand_seed(const uint8_t *seed, uint8_t *out, size_t n) nogil

__all__ = list(CORE_API)

# Shared with the pure twin: constants and the canonical (slow-path) parsers.
cdef object UINT256_MAX = (1 << 256) - 1
cdef PyTypeObject *AMOUNTS = <PyTypeObject *>Amounts


cdef inline object _amounts(uint64_t maker, uint64_t taker):
    """An ``Amounts`` tuple, allocated directly (tuple.__new__ would iterate an argument tuple)."""
    cdef object t = <object>AMOUNTS.tp_alloc(AMOUNTS, 2)
    Py_DECREF(t)  # tp_alloc's reference now belongs to t
    cdef object m = maker, k = taker
    Py_INCREF(m)
    Py_INCREF(k)
    PyTuple_SET_ITEM(t, 0, m)
    PyTuple_SET_ITEM(t, 1, k)
    return t
cdef uint64_t POW10[20]
POW10[0] = 1
for _i in range(1, 20):
    POW10[_i] = POW10[_i - 1] * 10

keccak_impls = {"portable": 1, "avx2": 2, "avx512": 3}
sha256_impls = {"portable": 1, "sha-ni": 2}


cdef list _distrusted = []  # SIMD Keccak paths that disagreed with the portable one


def self_check():
    """Known-answer check of every SIMD Keccak path against the portable one.

    Both order structs (V1, and V2/V3) are checked. Runs at import: a path that disagrees on any digest (a miscompiled or
    untested SIMD path on this CPU) is never used, so an order id is never
    wrong, only slower. Returns the paths distrusted (normally none).
    """
    cdef ck_order_ctx ctx
    cdef ck_order orders[19]
    cdef uint8_t want[19 * 32]
    cdef uint8_t got[19 * 32]
    cdef uint64_t x = 0x9E3779B97F4A7C15ULL
    cdef int i, j, impl
    cdef uint8_t *raw = <uint8_t *>&ctx
    for i in range(<int>sizeof(ck_order_ctx)):
        x ^= x << 13; x ^= x >> 7; x ^= x << 17
        raw[i] = <uint8_t>x
    raw = <uint8_t *>orders
    for i in range(<int>sizeof(orders)):
        x ^= x << 13; x ^= x >> 7; x ^= x << 17
        raw[i] = <uint8_t>x
    for i in range(19):  # edges in a few orders: all-zero and all-one words
        orders[i].side = i & 1
        orders[i].neg_risk = (i >> 1) & 1
        if i % 5 == 0:
            for j in range(4):
                orders[i].token_id.w[j] = 0
                orders[i].salt.w[j] = 0xFFFFFFFFFFFFFFFFULL
    previous = ck_keccak_impl()
    del _distrusted[:]
    for layout in (CK_LAYOUT_V1, CK_LAYOUT_V2):  # both order structs
        ctx.layout = layout
        ck_keccak_set_impl(1)
        ck_order_ids_flat(&ctx, orders, 19, want)
        for name, impl in (("avx2", 2), ("avx512", 3)):
            if name in _distrusted or ck_keccak_set_impl(impl) != 0:
                continue
            ck_order_ids_flat(&ctx, orders, 19, got)
            for i in range(1, 20):  # every batch length: exercises each tail
                ck_order_ids_flat(&ctx, orders + 19 - i, i, got + 32 * (19 - i))
                if memcmp(got, want, 19 * 32) != 0:
                    _distrusted.append(name)
                    break
    ck_keccak_set_impl(previous if keccak_names[previous] not in _distrusted else _best_keccak())
    return list(_distrusted)


keccak_names = {1: "portable", 2: "avx2", 3: "avx512"}


cdef int _best_keccak():
    for name, impl in (("avx512", 3), ("avx2", 2)):
        if name not in _distrusted and ck_keccak_set_impl(impl) == 0:
            return impl
    return 1


def set_implementation(*, keccak=None, sha256=None):
    """Force a hash path for tests and benchmarks ("auto" restores the best).

    Returns False when the CPU or the build lacks the path, or the import
    self-check distrusted it (nothing changes then).
    """
    ok = True
    if keccak is not None:
        if keccak == "auto":
            ck_keccak_set_impl(_best_keccak())
        elif keccak in _distrusted:
            ok = False
        else:
            ok = ck_keccak_set_impl(keccak_impls[keccak]) == 0
    if sha256 is not None:
        ok = ck_sha256_set_impl(0 if sha256 == "auto" else sha256_impls[sha256]) == 0 and ok
    return ok


def implementation():
    """The hash paths in use now, e.g. {"keccak": "avx2", "sha256": "sha-ni"}."""
    names_s = {v: k for k, v in sha256_impls.items()}
    return {"keccak": keccak_names[ck_keccak_impl()], "sha256": names_s[ck_sha256_impl()]}


# ---------------------------------------------------------------------------
# Small helpers


cdef inline str _hex_str(const uint8_t *data, Py_ssize_t n, bint prefix):
    cdef Py_ssize_t off = 2 if prefix else 0
    cdef str s = PyUnicode_New(2 * n + off, 127)
    cdef char *out = <char *>PyUnicode_DATA(s)
    cdef Py_ssize_t i
    if prefix:
        out[0] = 48  # '0'
        out[1] = 120  # 'x'
    ck_hex(data, n, out + off)
    return s


cdef inline bint _ascii_view(object s, const char **data, Py_ssize_t *n):
    """Borrow the bytes of an ASCII str without copying."""
    if type(s) is not str or not PyUnicode_IS_COMPACT_ASCII(s):
        return False
    data[0] = <const char *>PyUnicode_DATA(s)
    n[0] = PyUnicode_GET_LENGTH(s)
    return True


cdef class _Bytes:
    """A read-only view of any bytes-like object (bytes without a buffer request)."""
    cdef Py_buffer buf
    cdef bint held
    cdef const uint8_t *data
    cdef Py_ssize_t n

    def __dealloc__(self):
        if self.held:
            PyBuffer_Release(&self.buf)


cdef _Bytes _bytes(object data):
    cdef _Bytes v = _Bytes.__new__(_Bytes)
    if type(data) is bytes:
        v.data = <const uint8_t *>PyBytes_AS_STRING(data)
        v.n = PyBytes_GET_SIZE(data)
        return v
    PyObject_GetBuffer(data, &v.buf, PyBUF_SIMPLE)  # raises TypeError for non-buffers
    v.held = True
    v.data = <const uint8_t *>v.buf.buf
    v.n = v.buf.len
    return v


cdef inline _Bytes _data(object data, str field="data"):
    """``data``'s bytes; anything but a simple buffer goes through the pure twin's rule."""
    try:
        return _bytes(data)
    except (TypeError, BufferError):  # not bytes-like, or not contiguous
        return _bytes(_p.as_bytes(data, field))


def keccak256(data):
    """Keccak-256 (Ethereum's, not SHA3-256) of ``data`` (any bytes-like object)."""
    cdef _Bytes v = _data(data)
    cdef uint8_t out[32]
    ck_keccak256(v.data, v.n, out)
    return PyBytes_FromStringAndSize(<char *>out, 32)


def sha256_hex(data):
    """Lowercase hex SHA-256 of ``data`` (any bytes-like object)."""
    cdef _Bytes v = _data(data)
    cdef uint8_t out[32]
    ck_sha256(v.data, v.n, out)
    return _hex_str(out, 32, False)


def append_column(lines, values, width):
    """Each line of ``lines`` + ``,`` + its ``width``-byte value from ``values``, LF-ended.

    ``lines``: bytes-like, lines ending in LF or CRLF (the last may lack one);
    ``values``: bytes-like, ``width`` bytes per line, back to back (ids from
    ``order_ids(out="arrow")``). Returns bytes. One pass of copies: CSV rows
    with a new last column, as ``clobkit order-ids`` writes them.
    """
    cdef _Bytes src, vals
    src = _data(lines, "lines")
    vals = _data(values, "values")
    cdef Py_ssize_t w = _p.parse_width(width)
    cdef const uint8_t *p = src.data
    cdef const uint8_t *end = src.data + src.n
    cdef const uint8_t *nl
    cdef Py_ssize_t count = 0, crs = 0, size, k
    count = _count_lines(src.data, src.n, &crs)
    if vals.n != count * w:
        raise _p.column_size_error(vals.n, count, w)
    # each line loses its CR and gains "," + value (+ an LF if it had none)
    size = src.n - crs + count * (w + 1) + (1 if src.n and src.data[src.n - 1] != 10 else 0)
    out = PyBytes_FromStringAndSize(NULL, size)
    cdef char *at = PyBytes_AS_STRING(out)
    with nogil:
        for k in range(count):
            nl = <const uint8_t *>memchr(p, 10, end - p)
            size = (nl if nl != NULL else end) - p
            if size and p[size - 1] == 13:
                size -= 1  # CRLF: the row ends in LF alone
            memcpy(at, p, size)
            at += size
            at[0] = 44  # ','
            memcpy(at + 1, vals.data + k * w, w)
            at[w + 1] = 10
            at += w + 2
            p = nl + 1 if nl != NULL else end
    return out


cdef Py_ssize_t _count_lines(const uint8_t *data, Py_ssize_t n, Py_ssize_t *crs) noexcept nogil:
    """Lines in ``data`` (its LFs, plus one if the last line has none); ``crs``: lines
    ending in CR (before their LF, or at the very end)."""
    cdef const uint8_t *p = data
    cdef const uint8_t *end = data + n
    cdef const uint8_t *nl
    cdef const uint8_t *stop
    cdef Py_ssize_t count = 0
    while p < end:
        nl = <const uint8_t *>memchr(p, 10, end - p)
        stop = nl if nl != NULL else end
        count += 1
        if stop > p and (stop - 1)[0] == 13:
            crs[0] += 1
        if nl == NULL:
            break
        p = nl + 1
    return count


# ---------------------------------------------------------------------------
# uint256 fields


cdef inline object _name(object field, Py_ssize_t i):
    """The field named in an error: ``salt``, or ``salts[12]`` inside a batch."""
    return field if i < 0 else f"{field}[{i}]"


cdef inline int _u256(object value, ck_u256 *out, object field, Py_ssize_t i) except -1:
    """A uint256 field from an int or a decimal string; the pure twin words every error."""
    cdef int overflow = 0
    cdef long long v
    cdef const char *data
    cdef Py_ssize_t n
    cdef bytes raw
    if type(value) is int:
        v = PyLong_AsLongLongAndOverflow(value, &overflow)
        if overflow == 0 and v >= 0:
            out.w[0] = <uint64_t>v
            out.w[1] = out.w[2] = out.w[3] = 0
            return 0
    elif _ascii_view(value, &data, &n) and ck_u256_digits(data, n, out):
        return 0
    # big ints, int subclasses and every error
    raw = _p.parse_uint256(value, _name(field, i)).to_bytes(32, "little")
    memcpy(out.w, PyBytes_AS_STRING(raw), 32)
    _le_limbs(out)
    return 0


cdef inline void _le_limbs(ck_u256 *x) noexcept nogil:
    """Little-endian bytes in x.w -> native limbs (a no-op on little-endian hosts)."""
    cdef const uint8_t *b = <const uint8_t *>x.w
    cdef uint64_t w[4]
    cdef int i, j
    for i in range(4):
        w[i] = 0
        for j in range(8):
            w[i] |= (<uint64_t>b[8 * i + j]) << (8 * j)
    for i in range(4):
        x.w[i] = w[i]


cdef inline int _side(object value, object field, Py_ssize_t i) except -1:
    if type(value) is str:
        if value == "BUY":
            return 0
        if value == "SELL":
            return 1
    elif type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        # an int subclass (Side, an IntEnum) reads as its int; enum is not imported here
        if value == 0:
            return 0
        if value == 1:
            return 1
    return _p.parse_side(value, _name(field, i))


cdef inline int _flag(object value, object field, Py_ssize_t i) except -1:
    if value is False:
        return 0
    if value is True:
        return 1
    return 1 if _p.parse_flag(value, _name(field, i)) else 0


# ---------------------------------------------------------------------------
# Order ids

cdef object UNSET = _p.UNSET  # "not given": a field of the other order version


cdef inline int _word(object value, ck_u256 *out, object field, Py_ssize_t i) except -1:
    """A bytes32 (None, 32 bytes or 0x + 64 hex) as the uint256 of its big-endian bytes."""
    cdef const char *s
    cdef Py_ssize_t n
    cdef const uint8_t *b
    cdef int k, j
    cdef uint64_t w
    cdef bytes raw
    if value is None:
        out.w[0] = out.w[1] = out.w[2] = out.w[3] = 0
        return 0
    if type(value) is bytes and PyBytes_GET_SIZE(value) == 32:
        b = <const uint8_t *>PyBytes_AS_STRING(value)
        for k in range(4):
            w = 0
            for j in range(8):
                w = (w << 8) | b[8 * k + j]
            out.w[3 - k] = w
        return 0
    if _ascii_view(value, &s, &n) and n == 66 and s[0] == 48 and (s[1] == 120 or s[1] == 88) \
            and ck_hex_limbs(s + 2, out):
        return 0
    # every other spelling and every error
    raw = _p.parse_word(value, _name(field, i)).to_bytes(32, "little")
    memcpy(out.w, PyBytes_AS_STRING(raw), 32)
    _le_limbs(out)
    return 0


cdef inline int _set(ck_order *o, int c, object value, object name, Py_ssize_t i) except -1:
    """Parse one field (column kind c) of an order; ``i`` >= 0 inside a batch."""
    if c == C_TOKEN:
        return _u256(value, &o.token_id, name, i)
    if c == C_MAKER:
        return _u256(value, &o.maker_amount, name, i)
    if c == C_TAKER:
        return _u256(value, &o.taker_amount, name, i)
    if c == C_SIDE:
        o.side = <uint8_t>_side(value, name, i)
        return 0
    if c == C_SALT:
        return _u256(value, &o.salt, name, i)
    if c == C_FEE:
        return _u256(value, &o.fee_rate_bps, name, i)
    if c == C_NONCE:
        return _u256(value, &o.nonce, name, i)
    if c == C_EXPIRATION:
        return _u256(value, &o.expiration, name, i)
    if c == C_TIMESTAMP:
        return _u256(value, &o.timestamp, name, i)
    if c == C_METADATA:
        return _word(value, &o.metadata, name, i)
    if c == C_BUILDER:
        return _word(value, &o.builder, name, i)
    o.neg_risk = <uint8_t>_flag(value, name, i)
    return 0


cdef inline void _zero(ck_u256 *x) noexcept nogil:
    x.w[0] = x.w[1] = x.w[2] = x.w[3] = 0


cdef inline int _fill(int version, ck_order *o, object token_id, object maker_amount,
                      object taker_amount, object side, object salt, object fee_rate_bps,
                      object nonce, object expiration, object timestamp, object metadata,
                      object builder) except -1:
    """One order's fields, checked against the version first (the pure twin's order)."""
    if version == 1:
        if timestamp is not UNSET or metadata is not UNSET or builder is not UNSET:
            _p.check_version_fields(
                version, (fee_rate_bps, nonce, expiration, timestamp, metadata, builder)
            )
    elif fee_rate_bps is not UNSET or nonce is not UNSET or expiration is not UNSET \
            or timestamp is UNSET:
        _p.check_version_fields(
            version, (fee_rate_bps, nonce, expiration, timestamp, metadata, builder)
        )
    _u256(token_id, &o.token_id, "token_id", -1)
    _u256(maker_amount, &o.maker_amount, "maker_amount", -1)
    _u256(taker_amount, &o.taker_amount, "taker_amount", -1)
    o.side = <uint8_t>_side(side, "side", -1)
    _u256(salt, &o.salt, "salt", -1)
    if version == 1:
        if fee_rate_bps is UNSET:
            _zero(&o.fee_rate_bps)
        else:
            _u256(fee_rate_bps, &o.fee_rate_bps, "fee_rate_bps", -1)
        if nonce is UNSET:
            _zero(&o.nonce)
        else:
            _u256(nonce, &o.nonce, "nonce", -1)
        if expiration is UNSET:
            _zero(&o.expiration)
        else:
            _u256(expiration, &o.expiration, "expiration", -1)
    else:
        _u256(timestamp, &o.timestamp, "timestamp", -1)
        _word(None if metadata is UNSET else metadata, &o.metadata, "metadata", -1)
        _word(None if builder is UNSET else builder, &o.builder, "builder", -1)
    return 0


cdef class OrderHasher:
    """The exchange's ``clob_order_id`` (EIP-712 order digest) for one wallet, offline.

    ``wallet`` is a ``WalletInfo`` or the ``data`` mapping of ``GET /wallet``.
    ``version`` (1, 2 or 3) is the exchange's order format; None takes it from
    the wallet's exchange addresses (docs/exchange-versions.md). Domain
    separators and the wallet's constant words are computed once here.
    """

    cdef ck_order_ctx ctx
    cdef object _prepared
    cdef readonly int version
    cdef readonly int signature_type
    cdef readonly object chain_id
    cdef readonly str maker
    cdef readonly str signer

    def __init__(self, wallet, *, version=None):
        p = prepare_wallet(wallet, keccak256, version)
        self._prepared = p
        memcpy(self.ctx.typehash, <char *>p.typehash, 32)
        memcpy(self.ctx.maker, <char *>p.maker, 32)
        memcpy(self.ctx.signer, <char *>p.signer, 32)
        memcpy(self.ctx.taker, <char *>p.taker, 32)
        memcpy(self.ctx.signature_type, <char *>p.signature_type, 32)
        memcpy(self.ctx.domain[0], <char *>p.domain_ctf, 32)
        memcpy(self.ctx.domain[1], <char *>p.domain_neg_risk, 32)
        self.ctx.layout = CK_LAYOUT_V1 if p.version == 1 else CK_LAYOUT_V2
        self.version = p.version
        self.signature_type = p.signature_type_value
        self.chain_id = p.chain_id
        self.maker = p.maker_address
        self.signer = p.signer_address

    def __repr__(self):
        p = self._prepared
        return (
            f"OrderHasher(maker=0x{p.maker[12:].hex()}, chain_id={p.chain_id}, version={p.version})"
        )

    def domain_separator(self, neg_risk=False):
        """The 32-byte EIP-712 domain separator of the CTF (or NegRisk) exchange."""
        return PyBytes_FromStringAndSize(<char *>self.ctx.domain[_flag(neg_risk, "neg_risk", -1)], 32)

    def order_id(
        self,
        *,
        token_id,
        maker_amount,
        taker_amount,
        side,
        salt,
        fee_rate_bps=UNSET,
        nonce=UNSET,
        expiration=UNSET,
        timestamp=UNSET,
        metadata=UNSET,
        builder=UNSET,
        neg_risk=False,
    ):
        """The ``clob_order_id`` of one order: ``"0x"`` + 64 lowercase hex digits.

        V1 orders take ``fee_rate_bps``, ``nonce``, ``expiration`` (0 when
        left out); V2/V3 orders take ``timestamp`` (ms, required) and the
        bytes32 ``metadata`` and ``builder`` (zero when left out). A field of
        the other version is an ``OrderFieldError``.
        """
        cdef ck_order o
        cdef uint8_t out[32]
        _fill(self.version, &o, token_id, maker_amount, taker_amount, side, salt,
              fee_rate_bps, nonce, expiration, timestamp, metadata, builder)
        o.neg_risk = <uint8_t>_flag(neg_risk, "neg_risk", -1)
        ck_order_ids_flat(&self.ctx, &o, 1, out)
        return _hex_str(out, 32, True)

    def struct_hash(
        self,
        *,
        token_id,
        maker_amount,
        taker_amount,
        side,
        salt,
        fee_rate_bps=UNSET,
        nonce=UNSET,
        expiration=UNSET,
        timestamp=UNSET,
        metadata=UNSET,
        builder=UNSET,
        neg_risk=False,
    ):
        """The 32-byte EIP-712 ``hashStruct`` of the order (same keywords as ``order_id``)."""
        cdef ck_order o
        cdef uint8_t out[32]
        _fill(self.version, &o, token_id, maker_amount, taker_amount, side, salt,
              fee_rate_bps, nonce, expiration, timestamp, metadata, builder)
        o.neg_risk = <uint8_t>_flag(neg_risk, "neg_risk", -1)
        ck_order_struct_hash(&self.ctx, &o, out)
        return PyBytes_FromStringAndSize(<char *>out, 32)

    def sign(self, signer, **order):
        """Hash and sign one order: ``SignedOrder(order_id, signature)`` (see clobkit.signing)."""
        from clobkit.signing import sign_order
        return sign_order(self, signer, order)

    def sign_many(self, signer, *, threads=None, **columns):
        """Hash and sign a batch (``order_ids``' keywords): a list of ``SignedOrder``."""
        from clobkit.signing import sign_orders
        return sign_orders(self, signer, columns, threads)

    def order_ids(
        self,
        *,
        token_ids,
        maker_amounts,
        taker_amounts,
        sides,
        salts,
        fee_rate_bps=UNSET,
        nonces=UNSET,
        expirations=UNSET,
        timestamps=UNSET,
        metadatas=UNSET,
        builders=UNSET,
        neg_risk=False,
        threads=None,
        out="list",
    ):
        """``clob_order_id`` of each order of a batch; each argument a sequence or a scalar.

        Every order is read, hashed and written as ``"0x…"`` text by native
        worker threads without the GIL (``threads`` of them, default 1):
        Arrow and numpy columns straight from their buffers, Python sequences
        from the text or int each object holds (taken in one pass under the
        GIL). Returns a list of str, or with ``out="arrow"`` one pyarrow
        string array whose data buffer the workers fill (no Python object per
        id; see ``clobkit._arrow_ids``).
        """
        return self._batch(token_ids, maker_amounts, taker_amounts, sides, salts, fee_rate_bps,
                           nonces, expirations, timestamps, metadatas, builders, neg_risk,
                           threads, out, None)

    def _sign_many(self, handle, key, threads, kwargs):
        """``sign_many``'s native path (see clobkit.signing): ``SignedOrder`` of each order,
        hashed and signed in the worker threads. ``handle``: ``_secp_handle``'s tuple;
        ``key``: the address of the 32 key bytes, alive for the call."""
        cdef _Signer signer = _Signer(handle, key)
        get = kwargs.get
        if "out" in kwargs:  # order_ids' choice of result: the signed orders have one shape
            raise OrderFieldError("out", kwargs["out"], "is not an argument of sign_many")
        return self._batch(kwargs["token_ids"], kwargs["maker_amounts"], kwargs["taker_amounts"],
                           kwargs["sides"], kwargs["salts"], get("fee_rate_bps", UNSET),
                           get("nonces", UNSET), get("expirations", UNSET), get("timestamps", UNSET),
                           get("metadatas", UNSET), get("builders", UNSET), get("neg_risk", False),
                           threads, "list", signer)

    cdef object _batch(self, token_ids, maker_amounts, taker_amounts, sides, salts, fee_rate_bps,
                       nonces, expirations, timestamps, metadatas, builders, neg_risk, threads,
                       out, _Signer signer):
        cdef long long t0 = ck_thread_ns()
        cdef int workers = _p.parse_threads(threads)
        cdef bint arrow = _ids.parse_out(out)
        pa = _ids.pyarrow() if arrow else None
        cdef int kinds[9]
        kinds[0], kinds[1], kinds[2], kinds[3], kinds[4], kinds[8] = \
            C_TOKEN, C_MAKER, C_TAKER, C_SIDE, C_SALT, C_NEG_RISK
        given = (fee_rate_bps, nonces, expirations, timestamps, metadatas, builders)
        if self.version == 1:
            if timestamps is not UNSET or metadatas is not UNSET or builders is not UNSET:
                _p.check_version_fields(1, given, True)
            columns = {
                "token_ids": token_ids,
                "maker_amounts": maker_amounts,
                "taker_amounts": taker_amounts,
                "sides": sides,
                "salts": salts,
                "fee_rate_bps": 0 if fee_rate_bps is UNSET else fee_rate_bps,
                "nonces": 0 if nonces is UNSET else nonces,
                "expirations": 0 if expirations is UNSET else expirations,
                "neg_risk": neg_risk,
            }
            kinds[5], kinds[6], kinds[7] = C_FEE, C_NONCE, C_EXPIRATION
        else:
            if fee_rate_bps is not UNSET or nonces is not UNSET or expirations is not UNSET \
                    or timestamps is UNSET:
                _p.check_version_fields(self.version, given, True)
            columns = {
                "token_ids": token_ids,
                "maker_amounts": maker_amounts,
                "taker_amounts": taker_amounts,
                "sides": sides,
                "salts": salts,
                "timestamps": timestamps,
                "metadatas": None if metadatas is UNSET else metadatas,
                "builders": None if builders is UNSET else builders,
                "neg_risk": neg_risk,
            }
            kinds[5], kinds[6], kinds[7] = C_TIMESTAMP, C_METADATA, C_BUILDER
        # pyarrow / numpy columns: read from their buffers (see _columns)
        for name, value in columns.items():
            if _col.is_columnar(value):
                columns[name] = _col.Column(value, name, _p.COLUMN_KINDS[name])
        cdef Py_ssize_t n = _p.batch_length(columns)
        cdef _Plan plan = _Plan.__new__(_Plan)
        plan.names = list(columns)
        memset(&plan.tmpl, 0, sizeof(ck_order))
        cdef int c
        # Scalars are parsed once into the template order. Sequences become
        # tuples (lists are copied: the workers read the objects' text without
        # the GIL, and a list mutated meanwhile must not free our items).
        fast = []  # (kind, its runs, field offset) of the columnar arguments
        for c in range(9):
            value = columns[plan.names[c]]
            if type(value) is _Column:
                if (<object>value).items is not None:  # numpy objects / strings: the list path
                    value = (<object>value).items
                else:
                    off = _offset(&plan.tmpl, kinds[c])
                    srcs = _sources(value, kinds[c], off)
                    if srcs is not None:
                        fast.append((kinds[c], srcs, off))
                        plan.slow.append((c, value))
                        continue
                    value = value.values()  # a big-endian host: through Python objects
            if _p.is_scalar(value):
                _set(&plan.tmpl, kinds[c], value, plan.names[c], -1)
            else:
                value = value if type(value) is tuple else tuple(value)
                if len(<tuple>value) != n:
                    raise OrderFieldError(plan.names[c], f"<{len(value)} items>", "changed length")
                plan.seqs.append((c, kinds[c], _offset(&plan.tmpl, kinds[c]), value))
                plan.slow.append((c, value))
        plan.slow.sort()
        plan._workers = workers
        result = plan.run(self, n, fast, pa if arrow else None, signer)
        global _held_ns
        _held_ns = ck_thread_ns() - t0 - plan.free_ns
        return result


# ---------------------------------------------------------------------------
# The batch: per-call setup here, under the GIL; every order in ext/batch.c

cdef Py_ssize_t CHUNK = 16384  # rows a round when the GIL has per-row work (sequences, list out)
cdef int64_t BLOCK = 256  # rows a thread takes at a time (whole SIMD groups)
cdef int64_t SIGN_BLOCK = 8  # rows a thread takes at a time when signing (~0.2 ms)


cdef class _Signer:
    """libsecp256k1's functions, its context and a key, for the workers (see ck_signer)."""
    cdef ck_signer s
    cdef object handle  # keeps nothing alive by itself: clobkit.signing owns the context and key

    def __cinit__(self, handle, key):
        sign, serialize, ctx = handle
        self.s.sign = <ck_secp_sign_fn><uintptr_t>sign
        self.s.serialize = <ck_secp_serialize_fn><uintptr_t>serialize
        self.s.ctx = <const void *><uintptr_t>ctx
        self.s.key = <const unsigned char *><uintptr_t>key
        self.handle = handle


cdef class _Plan:
    """One call's columns, template order and buffers (freed when the call ends)."""
    cdef ck_order tmpl
    cdef list names
    cdef list seqs  # (index, kind, field offset, tuple) of the Python sequence arguments
    cdef list slow  # (index, sequence or Column) of every non-scalar argument, for the Python path
    cdef ck_src *fixed  # the runs of the columnar arguments
    cdef ck_column cols[2][9]  # per buffer: the columns, sequences last
    cdef ck_src seqsrc[2][9]
    cdef ck_ref *refs[2][9]
    cdef ck_u256 *big[2][9]  # ints past 63 bits of a sequence, read under the GIL
    cdef char *ids[2]
    cdef char *sigs[2]
    cdef uint8_t *missed[2]
    cdef ck_batch jobs[2]
    cdef int ncols
    cdef int _workers
    cdef long long free_ns  # the calling thread's CPU time with the GIL released

    def __cinit__(self):
        self.names = []
        self.seqs = []
        self.slow = []

    def __dealloc__(self):
        cdef int b, k
        free(self.fixed)
        for b in range(2):
            free(self.ids[b])
            free(self.sigs[b])
            free(self.missed[b])
            for k in range(9):
                free(self.refs[b][k])
                free(self.big[b][k])

    cdef object run(self, OrderHasher hasher, Py_ssize_t n, list fast, object pa, _Signer signer):
        cdef Py_ssize_t total = 0, i = 0, k, nchunks, lo, m, chunk, nblocks
        cdef int b, c, helpers
        cdef _Src s
        cdef bint arrow = pa is not None
        cdef int64_t block = BLOCK if signer is None else SIGN_BLOCK
        cdef int workers_ = self._workers
        cdef long long t
        for kind, srcs, off in fast:
            total += len(srcs)
        self.fixed = <ck_src *>malloc((total if total else 1) * sizeof(ck_src))
        if self.fixed == NULL:
            raise MemoryError()
        for b in range(2):
            i = 0
            c = 0
            for kind, srcs, off in fast:
                self.cols[b][c].srcs = self.fixed + i
                self.cols[b][c].nsrcs = len(srcs)
                self.cols[b][c].kind = kind
                self.cols[b][c].off = off
                for s in srcs:
                    self.fixed[i] = s.src
                    i += 1
                c += 1
            for k in range(len(self.seqs)):
                idx, kind, off, seq = self.seqs[k]
                self.cols[b][c].srcs = &self.seqsrc[b][k]
                self.cols[b][c].nsrcs = 1
                self.cols[b][c].kind = kind
                self.cols[b][c].off = off
                c += 1
        self.ncols = c
        cdef object data = None
        cdef _Out view = None
        cdef char *text = NULL
        cdef list result = None
        if arrow:
            # from Arrow's memory pool: reused between calls, where a fresh
            # bytearray would be zero-filled and page-faulted in every time
            data = pa.allocate_buffer(n * _ids.ID_CHARS)
            view = _Out(data)
            text = <char *>view.buf.buf
            if n == 0:
                view.release()
                return _ids.id_array(pa, data, _ids.offsets(0), 0)
        else:
            result = PyList_New(n)
            if n == 0:
                return result
        # One round for the whole batch when the GIL has nothing to do per row
        # (columnar input, Arrow output); else rounds of CHUNK rows, the GIL's
        # share of round k + 1 and k - 1 done while the workers run round k.
        chunk = n if arrow and not self.seqs else (CHUNK if n > CHUNK else n)
        nchunks = (n + chunk - 1) // chunk
        nblocks = (chunk + block - 1) // block
        for b in range(2 if nchunks > 1 else 1):
            self.missed[b] = <uint8_t *>malloc(nblocks)
            if self.missed[b] == NULL:
                raise MemoryError()
            if not arrow:
                self.ids[b] = <char *>malloc(chunk * CK_ID_CHARS)
                if self.ids[b] == NULL:
                    raise MemoryError()
            if signer is not None:
                self.sigs[b] = <char *>malloc(chunk * CK_SIG_CHARS)
                if self.sigs[b] == NULL:
                    raise MemoryError()
            for k in range(len(self.seqs)):
                self.refs[b][k] = <ck_ref *>malloc(chunk * sizeof(ck_ref))
                if self.refs[b][k] == NULL:
                    raise MemoryError()
        self._prepare(0, 0, chunk if chunk < n else n, hasher, text, signer, block)
        for k in range(nchunks):
            b = k & 1
            lo = k * chunk
            helpers = 0
            if workers_ > 1 and n - lo > block:
                self.jobs[b].task.run = ck_batch_run
                helpers = ck_pool_start(&self.jobs[b].task, workers_ - 1)
            try:
                # round k - 1 is done with buffer b ^ 1 before round k + 1 takes it
                if k > 0:
                    self._finish(b ^ 1, hasher, result, pa, signer)
                if k + 1 < nchunks:
                    m = chunk if n - lo - chunk > chunk else n - lo - chunk
                    self._prepare(b ^ 1, lo + chunk, m, hasher, text, signer, block)
            finally:
                # the helpers read this round's buffers: join them before anything else
                with nogil:
                    t = ck_thread_ns()
                    ck_batch_run(&self.jobs[b].task)
                    if helpers:
                        ck_pool_wait()
                    self.free_ns += ck_thread_ns() - t
        self._finish((nchunks - 1) & 1, hasher, result, pa, signer)
        if arrow:
            view.release()
            return _ids.id_array(pa, data, _id_offsets(pa, n), n)
        return result

    cdef int _prepare(self, int b, Py_ssize_t lo, Py_ssize_t m, OrderHasher hasher, char *text,
                      _Signer signer, int64_t block) except -1:
        """Round buffer ``b`` for rows lo .. lo + m - 1: each sequence's objects taken."""
        cdef int k
        cdef ck_batch *job = &self.jobs[b]
        for k in range(len(self.seqs)):
            idx, kind, off, seq = self.seqs[k]
            _refs(<tuple>seq, lo, m, kind, self.refs[b][k], &self.big[b][k])
            self.seqsrc[b][k].fmt = CK_F_REFS
            self.seqsrc[b][k].data = <const uint8_t *>self.refs[b][k]
            self.seqsrc[b][k].start = lo
            self.seqsrc[b][k].n = m
            self.seqsrc[b][k].offset = 0
            self.seqsrc[b][k].valid = NULL
        memset(job, 0, sizeof(ck_batch))
        job.task.run = ck_batch_run
        job.ctx = &hasher.ctx
        job.tmpl = &self.tmpl
        job.cols = self.cols[b]
        job.ncols = self.ncols
        job.lo = lo
        job.hi = lo + m
        job.block = block
        if text != NULL:
            job.ids = text
            job.base = 0
        else:
            job.ids = self.ids[b]
            job.base = lo
        job.signer = &signer.s if signer is not None else NULL
        job.sigs = self.sigs[b]
        job.missed = self.missed[b]
        memset(self.missed[b], 0, (m + block - 1) // block)
        return 0

    cdef int _finish(self, int b, OrderHasher hasher, list result, object pa,
                     _Signer signer) except -1:
        """Round ``b`` done: its missed blocks through Python values, then its Python objects."""
        cdef ck_batch *job = &self.jobs[b]
        cdef Py_ssize_t nb = (job.hi - job.lo + job.block - 1) // job.block, blk, r, r1
        cdef ck_order o
        cdef uint8_t d[32]
        cdef char *at
        cdef int ok = 1
        for blk in range(nb):
            if not job.missed[blk]:
                continue
            r1 = job.lo + (blk + 1) * job.block
            for r in range(job.lo + blk * job.block, r1 if r1 < job.hi else job.hi):
                o = self.tmpl
                for c, seq in self.slow:
                    value = seq[r]
                    if value is COL_NULL:
                        raise _col.null_error(f"{self.names[c]}[{r}]")
                    _set(&o, _KINDS[c] if hasher.version == 1 else _KINDS2[c], value, self.names[c], r)
                ck_order_ids_flat(&hasher.ctx, &o, 1, d)
                at = job.ids + CK_ID_CHARS * (r - job.base)
                at[0] = 48
                at[1] = 120
                ck_hex(d, 32, at + 2)
                if signer is not None:
                    with nogil:
                        ok = ck_sign_digest(&signer.s, d, job.sigs + CK_SIG_CHARS * (r - job.base))
                    if not ok:
                        job.failed = 1
        if job.failed:
            raise OrderFieldError("private_key", _p.HIDDEN, "could not sign (libsecp256k1 refused)")
        if result is None:
            return 0
        cdef Py_ssize_t i
        cdef str s
        cdef object t
        if signer is None:
            for i in range(job.hi - job.lo):
                s = PyUnicode_New(CK_ID_CHARS, 127)
                memcpy(PyUnicode_DATA(s), job.ids + CK_ID_CHARS * i, CK_ID_CHARS)
                Py_INCREF(s)
                PyList_SET_ITEM(result, job.lo + i, s)
            return 0
        for i in range(job.hi - job.lo):
            t = _signed(job.ids + CK_ID_CHARS * i, job.sigs + CK_SIG_CHARS * i)
            Py_INCREF(t)
            PyList_SET_ITEM(result, job.lo + i, t)
        return 0


cdef int _KINDS[9]
cdef int _KINDS2[9]
_KINDS[0], _KINDS[1], _KINDS[2], _KINDS[3], _KINDS[4], _KINDS[5], _KINDS[6], _KINDS[7], _KINDS[8] = \
    C_TOKEN, C_MAKER, C_TAKER, C_SIDE, C_SALT, C_FEE, C_NONCE, C_EXPIRATION, C_NEG_RISK
_KINDS2[0], _KINDS2[1], _KINDS2[2], _KINDS2[3], _KINDS2[4], _KINDS2[5], _KINDS2[6], _KINDS2[7], _KINDS2[8] = \
    C_TOKEN, C_MAKER, C_TAKER, C_SIDE, C_SALT, C_TIMESTAMP, C_METADATA, C_BUILDER, C_NEG_RISK


cdef long long _held_ns = 0


def _gil_held_ns():
    """CPU time (ns) the last ``order_ids`` / ``sign_many`` batch spent on its calling
    thread holding the GIL: everything but the workers' share it took with the GIL
    released. A benchmark hook (benchmarks/native_pool.py): unlike wall time it is
    not inflated when other processes take the cores."""
    return _held_ns


cdef PyTypeObject *SIGNED = NULL


cdef inline object _signed(const char *order_id, const char *sig):
    """A ``SignedOrder`` (clobkit.signing) of two texts, allocated directly."""
    global SIGNED
    if SIGNED == NULL:
        from clobkit.signing import SignedOrder
        SIGNED = <PyTypeObject *>SignedOrder
    cdef object t = <object>SIGNED.tp_alloc(SIGNED, 2)
    Py_DECREF(t)  # tp_alloc's reference now belongs to t
    cdef str a = PyUnicode_New(CK_ID_CHARS, 127), b = PyUnicode_New(CK_SIG_CHARS, 127)
    memcpy(PyUnicode_DATA(a), order_id, CK_ID_CHARS)
    memcpy(PyUnicode_DATA(b), sig, CK_SIG_CHARS)
    Py_INCREF(a)
    Py_INCREF(b)
    PyTuple_SET_ITEM(t, 0, a)
    PyTuple_SET_ITEM(t, 1, b)
    return t


cdef int _refs(tuple seq, Py_ssize_t lo, Py_ssize_t m, int kind, ck_ref *out,
               ck_u256 **big) except -1:
    """Rows lo .. lo + m - 1 of a sequence as the workers read them (see ck_ref): the
    least CPython allows under the GIL, one type check and one pointer or int per object.

    Whatever is not plainly taken here is CK_REF_MISS: its block goes through the
    Python path, which parses it or words its error as the list path does.
    """
    cdef PyObject **items = PySequence_Fast_ITEMS(seq) + lo
    cdef PyObject *o
    cdef PyObject *last = NULL
    cdef Py_ssize_t i
    cdef long long v
    cdef int overflow
    cdef bint flag = kind == C_SIDE or kind == C_NEG_RISK
    cdef bint word = kind == C_METADATA or kind == C_BUILDER
    cdef ck_ref r
    for i in range(m):
        o = items[i]
        if o == last:
            out[i] = out[i - 1]
            continue
        last = o
        r.p = CK_REF_MISS
        r.v = 0
        if ck_is_ascii_str(o):
            r.p = <const char *>PyUnicode_DATA(<object>o)
            r.v = <uint64_t>PyUnicode_GET_LENGTH(<object>o)
        elif ck_is_int(o):
            if kind != C_NEG_RISK and not word:
                overflow = 0
                v = PyLong_AsLongLongAndOverflow(<object>o, &overflow)
                if overflow == 0 and v >= 0:
                    r.p = NULL
                    r.v = <uint64_t>v
                elif overflow > 0 and not flag:
                    if big[0] == NULL:
                        big[0] = <ck_u256 *>malloc(CHUNK * sizeof(ck_u256))
                        if big[0] == NULL:
                            raise MemoryError()
                    if ck_int_limbs(o, &big[0][i]) == 0:
                        r.p = <const char *>&big[0][i]
                        r.v = CK_REF_LIMBS
        elif kind == C_NEG_RISK:
            if o == <PyObject *>True:
                r.p, r.v = NULL, 1
            elif o == <PyObject *>False:
                r.p, r.v = NULL, 0
        elif word:
            if o == <PyObject *>None:
                r.p, r.v = NULL, 0
            elif ck_is_bytes(o):
                r.p = PyBytes_AS_STRING(<object>o)
                r.v = <uint64_t>PyBytes_GET_SIZE(<object>o) | CK_REF_RAW
        out[i] = r
    return 0


def _secp_check(handle, key, digest):
    """One signature through the native path (a test hook): ``"0x"`` + 130 hex."""
    cdef _Signer signer = _Signer(handle, key)
    cdef const uint8_t[::1] d = digest
    cdef char out[CK_SIG_CHARS]
    if d.shape[0] != 32 or not ck_sign_digest(&signer.s, &d[0], out):
        raise ValueError("could not sign")
    return (<bytes>out[:CK_SIG_CHARS]).decode()


def parse_ids(ids):
    """32 bytes per order id of ``ids`` (``"0x"`` + 64 hex str, or 32 bytes), back to back;
    None when any is not plainly one (clobkit.signing then words the error)."""
    if type(ids) is not list and type(ids) is not tuple:
        return None
    cdef Py_ssize_t n = len(ids), i, j
    cdef PyObject **items = PySequence_Fast_ITEMS(ids)
    cdef PyObject *o
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 32 * n)
    cdef uint8_t *d = <uint8_t *>PyBytes_AS_STRING(out)
    cdef const char *s
    cdef ck_u256 x
    for i in range(n):
        o = items[i]
        if ck_is_ascii_str(o) and PyUnicode_GET_LENGTH(<object>o) == 66:
            s = <const char *>PyUnicode_DATA(<object>o)
            if s[0] != 48 or s[1] != 120 or not ck_hex_limbs(s + 2, &x):
                return None
            for j in range(32):
                d[32 * i + j] = <uint8_t>(x.w[3 - j // 8] >> (56 - 8 * (j % 8)))
        elif ck_is_bytes(o) and PyBytes_GET_SIZE(<object>o) == 32:
            memcpy(d + 32 * i, PyBytes_AS_STRING(<object>o), 32)
        else:
            return None
    return out


def sign_digests(handle, key, digests, threads):
    """Signatures (``"0x"`` + 130 hex) of 32-byte digests back to back, over ``threads``
    native threads (see clobkit.signing); ``handle`` and ``key`` as ``_sign_many``'s."""
    global _held_ns
    cdef long long t0 = ck_thread_ns(), free_ns
    cdef _Signer signer = _Signer(handle, key)
    cdef _Bytes v = _bytes(digests)
    cdef int workers = _p.parse_threads(threads)
    cdef Py_ssize_t n = v.n // 32, i
    cdef ck_batch job
    cdef list result = PyList_New(n)
    cdef str s
    cdef char *sigs = <char *>malloc(n * CK_SIG_CHARS if n else 1)
    if sigs == NULL:
        raise MemoryError()
    try:
        memset(&job, 0, sizeof(ck_batch))
        job.ctx = NULL
        job.digests = v.data
        job.signer = &signer.s
        job.sigs = sigs
        job.lo, job.hi, job.base, job.block = 0, n, 0, SIGN_BLOCK
        with nogil:
            free_ns = ck_thread_ns()
            ck_batch_go(&job, workers - 1)
            free_ns = ck_thread_ns() - free_ns
        if job.failed:
            raise OrderFieldError("private_key", _p.HIDDEN, "could not sign (libsecp256k1 refused)")
        for i in range(n):
            s = PyUnicode_New(CK_SIG_CHARS, 127)
            memcpy(PyUnicode_DATA(s), sigs + CK_SIG_CHARS * i, CK_SIG_CHARS)
            Py_INCREF(s)
            PyList_SET_ITEM(result, i, s)
    finally:
        free(sigs)
    _held_ns = ck_thread_ns() - t0 - free_ns
    return result


# ---------------------------------------------------------------------------
# Columnar arguments: Arrow arrays and numpy arrays read from their buffers

cdef object _Column = _col.Column
cdef object COL_NULL = _col.NULL
cdef uint32_t _ONE = 1
cdef bint LITTLE = (<uint8_t *>&_ONE)[0] == 1  # Arrow data is little-endian; so must we be
cdef int F_INT = _col.F_INT, F_BOOL = _col.F_BOOL, F_BOOL8 = _col.F_BOOL8, F_DEC = _col.F_DEC
cdef int F_STR = _col.F_STR, F_FSB32 = _col.F_FSB32, F_DICT = _col.F_DICT


cdef class _Src:
    """One contiguous run of a column (``src``: raw pointers into buffers held by ``views``)."""
    cdef ck_src src
    cdef list views


cdef const uint8_t *_view(_Src s, object buf) except? NULL:
    if buf is None:
        return NULL
    cdef _Bytes v = _bytes(buf)
    s.views.append(v)
    return v.data


cdef _Src _chunk_src(object chunk, int fmt, Py_ssize_t width, bint signed, Py_ssize_t start):
    """The run of one Arrow array of a plain (not dictionary) storage format."""
    cdef _Src s = _Src.__new__(_Src)
    memset(&s.src, 0, sizeof(ck_src))
    s.views = []
    s.src.fmt, s.src.width, s.src.n, s.src.start, s.src.offset = fmt, width, len(chunk), start, chunk.offset
    s.src.is_signed = signed
    bufs = chunk.buffers()
    s.src.valid = _view(s, bufs[0]) if chunk.null_count else NULL
    if fmt == F_STR:
        s.src.offs = _view(s, bufs[1])
        s.src.data = _view(s, bufs[2])
    else:
        s.src.data = _view(s, bufs[1])
    return s


cdef _Src _dict_src(object col, object chunk, Py_ssize_t start, int kind, Py_ssize_t off):
    """The run of a dictionary array: its indices, and its dictionary parsed once."""
    cdef _Src s = _Src.__new__(_Src)
    cdef _Src d = _chunk_src(chunk.dictionary, col.format, col.width, col.signed, 0)
    cdef Py_ssize_t nd = d.src.n, i = 0, j, m, got
    cdef bint flag = kind == C_SIDE or kind == C_NEG_RISK
    cdef bytearray table = bytearray(32 * nd if nd else 1)
    cdef bytearray ok = bytearray(nd if nd else 1)
    cdef uint8_t *t = <uint8_t *>PyByteArray_AS_STRING(table)
    cdef uint8_t *k = <uint8_t *>PyByteArray_AS_STRING(ok)
    cdef ck_order *tmp = <ck_order *>malloc(FILL_BLOCK * sizeof(ck_order))
    if tmp == NULL:
        raise MemoryError()
    try:
        while i < nd:
            m = FILL_BLOCK if nd - i > FILL_BLOCK else nd - i
            got = ck_fill_run(&d.src, i, m, tmp, kind, off)
            for j in range(got):
                memcpy(t + 32 * (i + j), <char *>&tmp[j] + off, 1 if flag else 32)
                k[i + j] = 1
            i += got + (got < m)  # a value not taken stays 0 in ``ok``: its rows go slow
    finally:
        free(tmp)
    memset(&s.src, 0, sizeof(ck_src))
    s.views = [table, ok, d]
    s.src.fmt, s.src.width, s.src.n, s.src.start, s.src.offset = \
        F_DICT, col.index_width, len(chunk), start, chunk.offset
    s.src.is_signed = col.index_signed
    bufs = chunk.buffers()
    s.src.valid = _view(s, bufs[0]) if chunk.null_count else NULL
    s.src.data = _view(s, bufs[1])
    s.src.table, s.src.ok, s.src.ndict = t, k, nd
    return s


cdef list _sources(object col, int kind, Py_ssize_t off):
    """The runs of a ``_columns.Column`` (None on a big-endian host)."""
    cdef _Src s
    cdef list out = []
    if not LITTLE:
        return None
    if col.array is not None:
        s = _Src.__new__(_Src)
        memset(&s.src, 0, sizeof(ck_src))
        s.views = []
        s.src.fmt, s.src.width, s.src.n, s.src.start, s.src.offset = col.format, col.width, col.n, 0, 0
        s.src.is_signed = col.signed
        s.src.valid = NULL
        s.src.data = _view(s, col.array) if col.n else NULL
        out.append(s)
        return out
    for chunk, start in zip(col.chunks, col.starts):
        if getattr(chunk, "dictionary", None) is not None:
            out.append(_dict_src(col, chunk, start, kind, off))
        else:
            out.append(_chunk_src(chunk, col.format, col.width, col.signed, start))
    return out


cdef Py_ssize_t _offset(ck_order *o, int kind):
    """Byte offset in ck_order of the field a column kind fills."""
    cdef char *base = <char *>o
    if kind == C_TOKEN:
        return <char *>&o.token_id - base
    if kind == C_MAKER:
        return <char *>&o.maker_amount - base
    if kind == C_TAKER:
        return <char *>&o.taker_amount - base
    if kind == C_SIDE:
        return <char *>&o.side - base
    if kind == C_SALT:
        return <char *>&o.salt - base
    if kind == C_FEE:
        return <char *>&o.fee_rate_bps - base
    if kind == C_NONCE:
        return <char *>&o.nonce - base
    if kind == C_EXPIRATION:
        return <char *>&o.expiration - base
    if kind == C_TIMESTAMP:
        return <char *>&o.timestamp - base
    if kind == C_METADATA:
        return <char *>&o.metadata - base
    if kind == C_BUILDER:
        return <char *>&o.builder - base
    return <char *>&o.neg_risk - base


cdef Py_ssize_t FILL_BLOCK = 128  # dictionary values parsed at a time


cdef class _Out:
    """A writable view of a buffer (an Arrow buffer being filled), released once filled."""
    cdef Py_buffer buf
    cdef bint held

    def __cinit__(self, object target):
        PyObject_GetBuffer(target, &self.buf, PyBUF_WRITABLE)
        self.held = True

    cdef void release(self):
        if self.held:
            PyBuffer_Release(&self.buf)
            self.held = False

    def __dealloc__(self):
        self.release()


cdef object _id_offsets(object pa, Py_ssize_t n):
    """Offsets of ``n`` 66-byte ids: int32, or int64 past ``_arrow_ids.INT32_IDS`` (as there)."""
    cdef bint narrow = n <= _ids.INT32_IDS
    buf = pa.allocate_buffer((n + 1) * (4 if narrow else 8))
    cdef _Out view = _Out(buf)
    cdef int32_t *o32 = <int32_t *>view.buf.buf
    cdef int64_t *o64 = <int64_t *>view.buf.buf
    cdef Py_ssize_t i
    with nogil:
        if narrow:
            for i in range(n + 1):
                o32[i] = <int32_t>(66 * i)
        else:
            for i in range(n + 1):
                o64[i] = 66 * i
    view.release()
    return buf


# ---------------------------------------------------------------------------
# Amounts: ordinary inputs (plain decimals, ticks of the table) in 64-bit
# integers; everything else, errors included, through the pure twin.

cdef dict _TICKS = {"0.1": 1, "0.01": 2, "0.001": 3, "0.0001": 4}
cdef object _DEFAULT_TICK = "0.01"
cdef object _Decimal = __import__("decimal").Decimal


cdef double DPOW10[19]
for _i in range(19):
    DPOW10[_i] = <double>POW10[_i]


cdef inline bint _float_decimal(double x, int places, uint64_t *mant) noexcept:
    """x == m / 10**places exactly as its shortest repr reads, for small m.

    Division is correctly rounded, so m / 10**places == x means the decimal
    m / 10**places round-trips to x; below 2**52 no other decimal with as few
    places does, so it is the value of repr(x) (without calling repr).
    """
    cdef double scaled
    cdef uint64_t m
    if not (x > 0.0) or x * DPOW10[places] >= 4503599627370496.0:  # 2**52
        return False
    scaled = x * DPOW10[places]
    m = <uint64_t>(scaled + 0.5)
    if <double>m / DPOW10[places] != x:
        return False
    mant[0] = m
    return True


cdef inline bint _plain(object value, uint64_t *mant, int *frac, int places):
    """value = mant / 10**frac for a plain non-negative decimal with <= 18 digits.

    A float is read through its shortest repr: tried first at ``places``
    decimals (the grid it should sit on), else through repr itself.
    """
    cdef const char *s
    cdef Py_ssize_t n, i
    cdef uint64_t m = 0
    cdef int digits = 0, f = -1
    cdef char ch
    if type(value) is float:
        if _float_decimal(<double>value, places, mant):
            frac[0] = places
            return True
        value = repr(value)
    elif type(value) is int:
        if 0 <= value < 10**18:
            mant[0] = <uint64_t>value
            frac[0] = 0
            return True
        return False
    elif type(value) is _Decimal:
        value = str(value)
    if not _ascii_view(value, &s, &n) or n == 0 or n > 40:
        return False
    for i in range(n):
        ch = s[i]
        if ch == 46:  # '.'
            if f >= 0:
                return False
            f = 0
            continue
        if ch < 48 or ch > 57:
            return False
        if m == 0 and ch == 48:
            if f >= 0:
                f += 1
            continue
        digits += 1
        if digits > 18:
            return False
        m = m * 10 + <uint64_t>(ch - 48)
        if f >= 0:
            f += 1
    if n == 1 and f == 0:  # "."
        return False
    mant[0] = m
    frac[0] = f if f > 0 else 0
    return True


cdef inline int _tick(object tick_size):
    if tick_size is _DEFAULT_TICK:
        return 2
    if type(tick_size) is str:
        return _TICKS.get(tick_size, 0)
    return 0


cdef inline bint _price_ticks(uint64_t mant, int frac, int decimals, uint64_t *ticks):
    """Exact price in ticks when it is on the grid and within [tick, 1 - tick]."""
    cdef uint64_t p
    if frac <= decimals:
        if not ck_mul_ok(mant, POW10[decimals - frac], &p):
            return False
    else:
        if frac - decimals > 18 or mant % POW10[frac - decimals]:
            return False
        p = mant // POW10[frac - decimals]
    if p == 0 or p >= POW10[decimals]:
        return False
    ticks[0] = p
    return True


cdef inline bint _cents(uint64_t mant, int frac, uint64_t *cents):
    """value * 100 when it has at most 2 decimals, non-zero and small enough that units
    fit in 64 bits (else _amounts_py decides: it refuses more decimals)."""
    cdef uint64_t c
    if frac <= 2:
        if not ck_mul_ok(mant, POW10[2 - frac], &c):
            return False
    else:
        if frac - 2 > 19 or mant % POW10[frac - 2]:
            return False
        c = mant // POW10[frac - 2]
    if c == 0 or c > 1_000_000_000_000_000ULL // 10_000:
        return False
    cents[0] = c
    return True


def limit_amounts(side, price, size, tick_size="0.01", *, round_price=False):
    """Maker/taker amounts (6-decimal units) of a limit order of ``size`` shares at ``price``."""
    cdef int s, d = _tick(tick_size), pf, sf
    cdef uint64_t pm, sm, ticks, cents, shares, usdc
    if d and _plain(price, &pm, &pf, d) and _plain(size, &sm, &sf, 2) \
            and _price_ticks(pm, pf, d, &ticks) and _cents(sm, sf, &cents):
        s = _side(side, "side", -1)
        shares = cents * 10_000
        usdc = cents * ticks * POW10[4 - d]
        if s == 0:
            return _amounts(usdc, shares)
        return _amounts(shares, usdc)
    return _a.limit_amounts(side, price, size, tick_size, round_price=round_price)


def market_amounts(side, price, amount, tick_size="0.01", *, round_price=False):
    """Maker/taker amounts of a market order: ``amount`` is USDC for a BUY, shares for a SELL."""
    cdef int s, d = _tick(tick_size), pf, af
    cdef uint64_t pm, am, ticks, cents, maker, scaled, up
    if d and _plain(price, &pm, &pf, d) and _plain(amount, &am, &af, 2) \
            and _price_ticks(pm, pf, d, &ticks) and _cents(am, af, &cents):
        s = _side(side, "side", -1)
        maker = cents * 10_000
        if s == 1:
            return _amounts(maker, cents * ticks * POW10[4 - d])
        # shares = usdc / price rounded up at d + 6 then down at d + 2 decimals
        if ck_mul_ok(cents, POW10[2 * d + 4], &scaled):
            up = scaled // ticks + (1 if scaled % ticks else 0)
            return _amounts(maker, up // 10_000 * POW10[4 - d])
    return _a.market_amounts(side, price, amount, tick_size, round_price=round_price)


def to_units(value, field="value"):
    """Exact 6-decimal units of a non-negative USDC or share amount: "12.34" -> 12_340_000."""
    cdef uint64_t m, units
    cdef int f
    if _plain(value, &m, &f, 6) and f <= 6 and ck_mul_ok(m, POW10[6 - f], &units):
        return units
    return _a.to_units(value, field)
from_units = _a.from_units
market_price = _a.market_price


# ---------------------------------------------------------------------------
# Salts: 8-byte draws, the biased tail rejected (see _parse.salts_from_bytes).

cdef uint64_t SALT_SPAN = 1_000_000_000_001ULL
cdef uint64_t SALT_REJECT_FROM = _p.SALT_REJECT_FROM


def salts_from_bytes(data, n):
    """Up to ``n`` salts from 8-byte little-endian draws, rejecting the biased tail."""
    if type(data) is not bytes:
        data = _p.as_bytes(data, "data")
    if type(n) is not int or n < 0 or n > _p.MAX_COUNT:
        n = _p.parse_count(n)  # raises the canonical error, or is n as a plain int
    cdef const uint8_t[::1] view = data
    cdef Py_ssize_t i, j, got = 0, want = n
    cdef uint64_t draw
    out = []
    for i in range(0, view.shape[0] - 7, 8):
        if got == want:
            break
        draw = 0
        for j in range(8):
            draw |= (<uint64_t>view[i + j]) << (8 * j)
        if draw < SALT_REJECT_FROM:
            out.append(draw % SALT_SPAN)
            got += 1
    return out


def new_salts(n):
    """``n`` salts, each uniform on [0, 10**12], from the OS CSPRNG."""
    if type(n) is not int or n < 0 or n > _p.MAX_COUNT:
        _p.parse_count(n)  # raises the canonical error
    out = []
    while len(out) < n:
        need = n - len(out)
        out += salts_from_bytes(_os.urandom(8 * need + 8), need)
    return out


def new_salt():
    """One salt, uniform on [0, 10**12], from the OS CSPRNG."""
    cdef uint64_t draw
    cdef bytes b
    cdef const uint8_t *p
    cdef int j
    while True:
        b = _os.urandom(8)
        p = <const uint8_t *>PyBytes_AS_STRING(b)
        draw = 0
        for j in range(8):
            draw |= (<uint64_t>p[j]) << (8 * j)
        if draw < SALT_REJECT_FROM:
            return draw % SALT_SPAN


# ---------------------------------------------------------------------------
# Request signing

# Nonce bytes come from a pool: SHA-256 in counter mode under 32 fresh bytes
# from os.urandom per refill (see ck_expand_seed). A fork marks the pool stale
# so a child never repeats its parent's nonces. The GIL serialises access.
cdef enum:
    NONCE_POOL = 4096  # bytes: 256 nonces per seed
cdef uint8_t _pool[NONCE_POOL]
cdef Py_ssize_t _pool_pos = NONCE_POOL
ck_watch_fork()


cdef const uint8_t *_random16() except NULL:
    global _pool_pos, ck_nonces_stale
    cdef bytes seed
    if _pool_pos + 16 > NONCE_POOL or ck_nonces_stale:
        seed = _os.urandom(32)
        ck_nonces_stale = 0
        ck_expand_seed(<const uint8_t *>PyBytes_AS_STRING(seed), _pool, NONCE_POOL // 32)
        _pool_pos = 0
    _pool_pos += 16
    return _pool + _pool_pos - 16


cdef enum:
    K_METHOD = 0
    K_PATH = 1
    K_TS = 2
    K_NONCE = 3


cdef inline bint _text_ok(const char *s, Py_ssize_t n, int kind) noexcept:
    """The fast path's acceptance: never wider than the pure twin's parsers."""
    cdef Py_ssize_t i
    cdef char lo = 0x21, hi = 0x7e
    if n == 0:
        return False
    if kind == K_METHOD:
        lo, hi = 65, 90  # upper-case only; the pure twin upper-cases the rest
    elif kind == K_TS:
        lo, hi = 48, 57
    elif kind == K_PATH and s[0] != 47:  # '/'
        return False
    for i in range(n):
        if s[i] < lo or s[i] > hi:
            return False
    return True


cdef inline object _text(object value, int kind):
    """``value`` when it passes the fast check, else the pure twin's verdict."""
    cdef const char *s = NULL
    cdef Py_ssize_t n = 0
    if _ascii_view(value, &s, &n) and _text_ok(s, n, kind):
        return value
    if kind == K_METHOD:
        return _p.parse_method(value)
    if kind == K_PATH:
        return _p.parse_path(value)
    if kind == K_TS:
        if type(value) is int and 0 <= value <= 0xFFFFFFFFFFFFFFFF:
            return str(value)
        return _p.parse_timestamp(value)  # and an int too long to write
    return _p.parse_token(value, "nonce")


cdef int _sign(const ck_hmac_key *key, object method, object path, bint sign_query,
               object ts, object nonce, object body, char *sig_hex) except -1:
    """Validate (the pure twin words any error), then sign."""
    method = _text(method, K_METHOD)
    path = _text(path, K_PATH)
    ts = _text(ts, K_TS)
    nonce = _text(nonce, K_NONCE)
    if type(body) is not bytes:
        body = _p.parse_body(body)
    return _sign_valid(key, method, path, sign_query, ts, nonce, body, sig_hex)


cdef inline void _request(ck_request *r, str method, str path, bint sign_query, str nonce,
                          bytes body, char *sig) noexcept:
    """Point ``r`` at validated ASCII fields, all but the timestamp (see _stamp).

    The pointers are borrowed: the caller keeps the objects alive until signed.
    """
    cdef Py_ssize_t i, n = 0
    cdef const char *t = NULL
    _ascii_view(method, &t, &n)
    r.method, r.method_len = t, n
    _ascii_view(path, &t, &n)
    if not sign_query:
        for i in range(n):
            if t[i] == 63:  # '?': the bare path is signed
                n = i
                break
    r.path, r.path_len = t, n
    _ascii_view(nonce, &t, &n)
    r.nonce, r.nonce_len = t, n
    r.body = <const uint8_t *>PyBytes_AS_STRING(body)
    r.body_len = PyBytes_GET_SIZE(body)
    r.sig = sig


cdef inline void _stamp(ck_request *r, Py_ssize_t k, str ts) noexcept:
    """Point the timestamp of ``k`` requests at ``ts`` (validated digits)."""
    cdef const char *t = NULL
    cdef Py_ssize_t n = 0, j
    _ascii_view(ts, &t, &n)
    for j in range(k):
        r[j].ts, r[j].ts_len = t, n


cdef int _sign_valid(const ck_hmac_key *key, str method, str path, bint sign_query,
                     str ts, str nonce, bytes body, char *sig_hex) except -1:
    """HMAC of METHOD\\nPATH\\nTS\\nNONCE\\nhex(sha256(body)) into 64 hex chars."""
    cdef ck_request r
    _request(&r, method, path, sign_query, nonce, body, sig_hex)
    _stamp(&r, 1, ts)
    if ck_sign_requests(key, &r, 1) != 0:
        raise MemoryError()
    return 0


cdef int _key(ck_hmac_key *key, object secret) except -1:
    cdef bytes raw = _p.parse_secret(secret)
    ck_hmac_sha256_init(key, <const uint8_t *>PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw))
    return 0


cdef inline str _hex_text(const char *sig):
    cdef str s = PyUnicode_New(64, 127)
    memcpy(PyUnicode_DATA(s), sig, 64)
    return s


def signature(secret, method, path, timestamp, nonce, body=b""):
    """Lowercase hex HMAC-SHA256 of METHOD\\nPATH\\nTIMESTAMP\\nNONCE\\nhex(SHA-256(body))."""
    cdef ck_hmac_key key
    cdef char sig[64]
    # validate in the pure twin's order so the first bad input is the one named
    method = _text(method, K_METHOD)
    path = _text(path, K_PATH)
    timestamp = _text(timestamp, K_TS)
    nonce = _text(nonce, K_NONCE)
    if type(body) is not bytes:
        body = _p.parse_body(body)
    _key(&key, secret)
    _sign_valid(&key, method, path, True, timestamp, nonce, body, sig)
    return _hex_text(sig)


def verify_signature(secret, method, path, timestamp, nonce, body, sig):
    """True when ``sig`` is the signature of the request; compared in constant time.

    Inputs that cannot have been signed (a malformed path, nonce, signature)
    verify as False; only a bad secret raises.
    """
    cdef ck_hmac_key key
    cdef char expected[64]
    cdef const char *s
    cdef Py_ssize_t n, i
    cdef unsigned char diff = 0
    _key(&key, secret)
    if type(sig) is not str and isinstance(sig, str):
        sig = str.__str__(sig)  # a str subclass verifies as its text (as in the pure twin)
    if not _ascii_view(sig, &s, &n):
        return False
    try:
        _sign(&key, method, path, True, timestamp, nonce, body, expected)
    except SignatureInputError:
        return False
    if n != 64:
        return False
    for i in range(64):
        diff |= <unsigned char>(s[i] ^ expected[i])
    return diff == 0


# Requests signed within one millisecond share the timestamp string.
cdef long long _ts_ms = -1
cdef str _ts_str = ""


cdef str _now_text():
    global _ts_ms, _ts_str
    cdef long long now = ck_now_ms()
    if now < 0:
        return _p.parse_timestamp(_p._now_ms())
    if now != _ts_ms:
        _ts_str = str(now)
        _ts_ms = now
    return _ts_str


cdef str H_KEY = "X-API-KEY"
cdef str H_TS = "X-API-TIMESTAMP"
cdef str H_NONCE = "X-API-NONCE"
cdef str H_SIG = "X-API-SIGNATURE"


cdef enum:
    SIGN_CHUNK = 32  # requests signed per pass of headers_many
    HELD = 4  # references held per pending request: method, path, body, nonce


cdef inline void _release(PyObject **held, Py_ssize_t n) noexcept:
    cdef Py_ssize_t j
    for j in range(n):
        _decref(held[j])


cdef object _UNSEEN = object()


cdef class RequestSigner:
    """Signs requests with one API key: the four ``X-API-*`` headers.

    With ``sign_query=True`` (the default, as in the API's cURL examples) the
    signed PATH includes the query string exactly as sent; ``False`` signs the
    bare path. The secret never appears in ``repr`` or errors.
    """

    cdef ck_hmac_key _hk
    cdef dict _template
    cdef readonly str api_key
    cdef readonly bint sign_query

    def __init__(self, api_key, api_secret, *, sign_query=True):
        self.api_key = _p.parse_token(api_key, "api_key")
        _key(&self._hk, api_secret)
        self.sign_query = _p.parse_flag(sign_query, "sign_query")
        self._template = {H_KEY: self.api_key, H_TS: "", H_NONCE: "", H_SIG: ""}

    def __repr__(self):
        return f"RequestSigner(api_key={self.api_key!r}, sign_query={bool(self.sign_query)})"

    def __reduce__(self):
        raise TypeError("RequestSigner cannot be pickled (it holds a secret)")

    def __dealloc__(self):
        # the padded-key states are as good as the secret: wipe them
        ck_wipe(&self._hk, sizeof(ck_hmac_key))

    cdef dict _headers(self, object method, object path, object body, object timestamp_ms, object nonce):
        cdef char sig[64]
        method = _text(method, K_METHOD)
        path = _text(path, K_PATH)
        ts = _now_text() if timestamp_ms is None else _text(timestamp_ms, K_TS)
        n = _hex_str(_random16(), 16, False) if nonce is None else _text(nonce, K_NONCE)
        if type(body) is not bytes:
            body = _p.parse_body(body)
        _sign_valid(&self._hk, method, path, self.sign_query, ts, n, body, sig)
        cdef dict h = PyDict_Copy(self._template)
        PyDict_SetItem(h, H_TS, ts)
        PyDict_SetItem(h, H_NONCE, n)
        PyDict_SetItem(h, H_SIG, _hex_text(sig))
        return h

    def headers(self, method, path, body=b"", *, timestamp_ms=None, nonce=None):
        """``X-API-KEY``, ``X-API-TIMESTAMP`` (ms), ``X-API-NONCE`` (32 hex) and ``X-API-SIGNATURE``."""
        return self._headers(method, path, body, timestamp_ms, nonce)

    def headers_many(self, requests):
        """Headers for each ``(method, path)`` or ``(method, path, body)`` of a batch.

        Requests are signed 32 at a time, two by two, so that their SHA-256
        work interleaves (see ext/sign.c). The 32 share one reading of the
        clock, taken when they are signed.
        """
        cdef list out = []
        cdef ck_request reqs[SIGN_CHUNK]
        cdef char sigs[SIGN_CHUNK * 64]
        cdef PyObject *held[SIGN_CHUNK * HELD]  # owned references the pending requests point into
        cdef Py_ssize_t i = 0, k = 0
        # the last method and path objects and what they validated to: local to
        # this call, so threads sharing the signer never see each other's
        # (None is a request's possible bad input, hence _UNSEEN)
        cdef list seen = [_UNSEEN, None, _UNSEEN, None]
        try:
            for request in requests:
                self._prepare(request, i, &reqs[k], &sigs[64 * k], &held[HELD * k], seen)
                k += 1
                i += 1
                if k == SIGN_CHUNK:
                    self._emit(reqs, sigs, held, k, out)
                    _release(held, HELD * k)
                    k = 0
            if k:
                self._emit(reqs, sigs, held, k, out)
        finally:
            _release(held, HELD * k)
        return out

    cdef int _prepare(self, object request, Py_ssize_t i, ck_request *r, char *sig,
                      PyObject **held, list seen) except -1:
        """Validate request ``i`` and point ``r`` at it; on success hold its objects."""
        cdef Py_ssize_t j
        if type(request) is tuple and len(<tuple>request) == 3:
            method, path, body = (<tuple>request)[0], (<tuple>request)[1], (<tuple>request)[2]
        elif isinstance(request, (tuple, list)) and len(request) in (2, 3):
            method, path = request[0], request[1]
            body = request[2] if len(request) == 3 else b""
        else:
            raise SignatureInputError(
                f"requests[{i}]", request, "must be (method, path) or (method, path, body)"
            )
        # a batch mostly repeats a few method and path objects: check each once
        if method is not seen[0]:
            seen[1] = _text(method, K_METHOD)
            seen[0] = method
        if path is not seen[2]:
            seen[3] = _text(path, K_PATH)
            seen[2] = path
        method, path = seen[1], seen[3]
        if type(body) is not bytes:
            body = _p.parse_body(body)
        nonce = _hex_str(_random16(), 16, False)
        _request(r, method, path, self.sign_query, nonce, body, sig)
        # the request may be a list the caller could change under us: hold
        # what r points into until the chunk is signed
        held[0] = <PyObject *>method
        held[1] = <PyObject *>path
        held[2] = <PyObject *>body
        held[3] = <PyObject *>nonce
        for j in range(HELD):
            _incref(held[j])
        return 0

    cdef int _emit(self, ck_request *reqs, const char *sigs, PyObject **held, Py_ssize_t k,
                   list out) except -1:
        """Stamp and sign ``k`` prepared requests; append their header dicts to ``out``."""
        cdef Py_ssize_t j
        cdef dict h
        cdef str ts = _now_text()
        cdef dict stamped = PyDict_Copy(self._template)  # the timestamp set once per chunk
        PyDict_SetItem(stamped, H_TS, ts)
        _stamp(reqs, k, ts)
        if ck_sign_requests(&self._hk, reqs, k) != 0:
            raise MemoryError()
        for j in range(k):
            h = PyDict_Copy(stamped)
            PyDict_SetItem(h, H_NONCE, <object>held[HELD * j + 3])
            PyDict_SetItem(h, H_SIG, _hex_text(sigs + 64 * j))
            out.append(h)
        return 0


self_check()


def _forced_keccak():
    """``CLOBKIT_KECCAK`` (portable, avx2, avx512 or auto) forces a Keccak path from the
    start: to measure or test the AVX2 path on a CPU that would take AVX-512
    (docs/scale.md). A path the CPU or build lacks is refused with a warning."""
    name = _os.environ.get("CLOBKIT_KECCAK", "")
    if name in ("", "auto"):
        return
    if name not in keccak_impls or not set_implementation(keccak=name):
        import warnings

        warnings.warn(f"CLOBKIT_KECCAK={name!r}: not a Keccak path this CPU runs; "
                      f"using {implementation()['keccak']}", RuntimeWarning, stacklevel=2)


_forced_keccak()
