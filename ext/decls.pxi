# The C side: the project's headers (keccak.h, workers.h, batch.h, sha256.h, sign.h) and
# the small inline C helpers (fork watch, thread clock, 128-bit products, wipe, int limbs).

cdef extern from "Python.h":
    PyObject *Py_True
    PyObject *Py_False
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
    ctypedef struct ck_wrap:
        uint8_t head[32]
        uint8_t tail[160]
        const char *type_hex
        size_t type_hex_len
    ctypedef struct ck_batch:
        ck_task task
        const ck_order_ctx *ctx
        const ck_order *tmpl
        const ck_column *cols
        int ncols
        int64_t lo, hi
        int64_t block
        char *ids
        void *offs
        int offs_wide
        const uint8_t *digests
        const ck_signer *signer
        const ck_wrap *wrap
        char *sigs
        size_t sig_chars
        int64_t base
        uint8_t *missed
        int failed
        size_t next
    int64_t ck_fill_run(const ck_src *s, int64_t j0, int64_t m, ck_order *orders, int kind,
                        size_t off) nogil
    bint ck_u256_digits(const char *s, size_t n, ck_u256 *out) nogil
    bint ck_hex_limbs(const char *s, ck_u256 *out) nogil
    int ck_sign_digest(const ck_signer *s, const uint8_t *digest, char *out) nogil
    int ck_sign_order(const ck_batch *b, const ck_order *order, const uint8_t *id,
                      char *out) nogil
    void ck_batch_run(ck_task *task) noexcept nogil
    void ck_batch_go(ck_batch *b, int helpers) nogil

cdef extern from *:
    """
    /* The exact types whose contents the glue takes for the workers under the
       GIL (immutable: an int's value, a str's or bytes' text, copied). */
    static inline int ck_is_ascii_str(PyObject *o) {
        return PyUnicode_CheckExact(o) && PyUnicode_IS_COMPACT_ASCII(o);
    }
    static inline int ck_is_int(PyObject *o) { return PyLong_CheckExact(o); }
    static inline int ck_is_bytes(PyObject *o) { return PyBytes_CheckExact(o); }
    /* Ask for the object 16 items on (its header and the next line, where a
       str's text goes on) while item i is read: a sequence's objects lie anywhere
       in memory, and each is a cache miss the loop would otherwise wait for. */
    static inline void ck_prefetch_item(PyObject *const *items, Py_ssize_t i, Py_ssize_t m) {
    #if defined(__GNUC__) || defined(__clang__)
        if (i + 16 < m) {
            const char *p = (const char *)items[i + 16];
            __builtin_prefetch(p);
            __builtin_prefetch(p + 64);
        }
    #else
        (void)items; (void)i; (void)m;
    #endif
    }
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
    void ck_prefetch_item(PyObject **items, Py_ssize_t i, Py_ssize_t m)
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
