/* A batch of order ids (and optionally their signatures), end to end in
 * native threads: every column read straight from its buffers (Arrow, numpy)
 * or from the text/int each Python object already holds (taken by the
 * Cython glue under the GIL in one pass, see ck_ref), the orders hashed, the
 * ids written as "0x" + 64 hex into a text buffer, and each digest signed
 * with libsecp256k1 through function pointers handed over by the glue.
 *
 * Nothing here touches a Python object or needs the GIL. A value the fast
 * readers do not take (a null, a negative, an unusual spelling, an error)
 * marks its block "missed"; the glue redoes such blocks row by row through
 * Python values, so the first bad row is worded exactly as the list path
 * words it. Interface owned by ext/_core_c.pyx; implementation in batch.c.
 */
#ifndef CLOBKIT_BATCH_H
#define CLOBKIT_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "keccak.h"
#include "workers.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The field a column fills (the order of OrderHasher.order_ids' columns). */
enum {
    CK_C_TOKEN = 0, CK_C_MAKER = 1, CK_C_TAKER = 2, CK_C_SIDE = 3, CK_C_SALT = 4,
    CK_C_FEE = 5, CK_C_NONCE = 6, CK_C_EXPIRATION = 7, CK_C_NEG_RISK = 8,
    CK_C_TIMESTAMP = 9, CK_C_METADATA = 10, CK_C_BUILDER = 11
};

/* How a run of a column is stored: clobkit.core.columns' F_* (Arrow, numpy)
 * and CK_F_REFS, the per-object references of a Python sequence. */
enum {
    CK_F_INT = 0, CK_F_BOOL = 1, CK_F_BOOL8 = 2, CK_F_DEC = 3, CK_F_STR = 4,
    CK_F_FSB32 = 5, CK_F_DICT = 7, CK_F_REFS = 100
};

/* One element of a Python sequence as the glue found it: ``p`` ASCII text of
 * ``v`` bytes (a str's own UTF-8, or a bytes object when CK_REF_RAW is set in
 * ``v``; with CK_REF_LIMBS, a ck_u256 the glue read from an int past 63
 * bits), or, with ``p`` NULL, the non-negative int ``v`` (None, False: 0;
 * True: 1). ``p`` == CK_REF_MISS: a value only the Python path may take. */
typedef struct {
    const char *p;
    uint64_t v;
} ck_ref;

#define CK_REF_RAW (1ULL << 63)
#define CK_REF_LIMBS (1ULL << 62)
extern const char ck_ref_miss[1];
#define CK_REF_MISS (ck_ref_miss)

/* One contiguous run of a column: rows start .. start + n - 1. */
typedef struct {
    int fmt;
    int width;      /* bytes per element (int, decimal), per offset (string), per index (dict) */
    int is_signed;  /* two's complement (signed ints, decimals, dictionary indices) */
    const uint8_t *valid; /* Arrow validity bitmap, or NULL (no nulls) */
    const uint8_t *data;  /* elements; CK_F_REFS: ck_ref[] indexed by row - start */
    const uint8_t *offs;  /* string offsets */
    int64_t offset;       /* Arrow slice offset, in elements */
    int64_t start, n;
    const uint8_t *table; /* CK_F_DICT: 32 bytes per dictionary value (a flag: its first byte) */
    const uint8_t *ok;    /* CK_F_DICT: 1 where the value was taken */
    int64_t ndict;
} ck_src;

/* A column: its runs (consecutive, ascending rows), and what it fills. */
typedef struct {
    const ck_src *srcs;
    int nsrcs;
    int kind;       /* CK_C_* */
    size_t off;     /* byte offset of the field in ck_order */
} ck_column;

/* Fill field ``kind`` (at byte ``off``) of orders[0 .. m - 1] from elements
 * j0 .. j0 + m - 1 of ``s``. Returns the first element not taken, or m. */
int64_t ck_fill_run(const ck_src *s, int64_t j0, int64_t m, ck_order *orders, int kind,
                    size_t off);

/* 1..128 ASCII digits into limbs; 0 on a non-digit or a value past 2**256 - 1. */
int ck_u256_digits(const char *s, size_t n, ck_u256 *out);

/* 64 hex digits (most significant first) into limbs; 0 on a non-hex digit. */
int ck_hex_limbs(const char *s, ck_u256 *out);

/* libsecp256k1's recoverable signing, reached through pointers the glue takes
 * from coincurve's compiled module (see clobkit.signing). The signature
 * struct is 65 opaque bytes (secp256k1_ecdsa_recoverable_signature). */
typedef int (*ck_secp_sign_fn)(const void *ctx, void *sig, const unsigned char *msg32,
                               const unsigned char *seckey, const void *noncefp,
                               const void *ndata);
typedef int (*ck_secp_serialize_fn)(const void *ctx, unsigned char *out64, int *recid,
                                    const void *sig);
typedef struct {
    ck_secp_sign_fn sign;
    ck_secp_serialize_fn serialize;
    const void *ctx;           /* a context only read while signing: shared by all threads */
    const unsigned char *key;  /* 32 bytes, verified by the caller */
} ck_signer;

/* "0x" + 130 hex (r || s || v, v = 27 + recovery id) of one 32-byte digest
 * into ``out`` (132 chars). 0 when libsecp256k1 refuses (never for a valid key). */
int ck_sign_digest(const ck_signer *s, const uint8_t digest[32], char *out);

enum { CK_ID_CHARS = 66, CK_SIG_CHARS = 132 };

/* POLY_1271 (a deposit wallet, ERC-7739): what wraps each order's struct hash
 * before its owner signs it, the same for a whole batch (clobkit.signing's
 * _Wrapper). The signed digest is keccak(0x1901 || domain || keccak(head ||
 * contents || tail)), and the signature's text is the ECDSA signature's
 * followed by the hex of domain, contents and ``type_hex`` (the Order type
 * string and its uint16 length, already hex). */
typedef struct {
    uint8_t head[32];     /* keccak256 of the TypedDataSign type string + the Order type's */
    uint8_t tail[160];    /* name hash, version hash, chain id, the wallet, zero salt */
    const char *type_hex;
    size_t type_hex_len;
} ck_wrap;

/* Rows lo .. hi - 1 of a batch, taken by every thread ``block`` rows at a time. */
typedef struct {
    ck_task task;             /* first: the pool runs ck_batch_run through it */
    const ck_order_ctx *ctx;  /* NULL: ``digests`` are given (signing ids alone) */
    const ck_order *tmpl;     /* every order starts as this (the scalar arguments) */
    const ck_column *cols;
    int ncols;
    int64_t lo, hi;
    int64_t block;
    char *ids;            /* out, or NULL: 66 chars per row, row r at ids + 66 * (r - base) */
    void *offs;           /* out, or NULL: an Arrow string array's offsets (base 0), each
                           * row's offs[r + 1] = 66 (r + 1); offs[0] is the glue's */
    int offs_wide;        /* int64 offsets (a large_string array), else int32 */
    const uint8_t *digests; /* in, when ctx is NULL: 32 bytes per row, from base */
    const ck_signer *signer; /* or NULL */
    const ck_wrap *wrap;  /* with signer: NULL (the id is signed), or POLY_1271's wrapper */
    char *sigs;           /* out with signer: sig_chars per row, from base */
    size_t sig_chars;     /* CK_SIG_CHARS, or with wrap CK_SIG_CHARS + 128 + type_hex_len */
    int64_t base;
    uint8_t *missed;      /* out: per block ((r - lo) / block), 1 when a value was not taken */
    int failed;           /* out: set when a signature could not be made */
    size_t next;          /* shared counter, advanced atomically */
} ck_batch;

/* The signature text of one order of the batch into ``out`` (b->sig_chars chars):
 * of its id, or through b->wrap (``order``, the filled order, is then read). 0
 * when libsecp256k1 refuses. */
int ck_sign_order(const ck_batch *b, const ck_order *order, const uint8_t id[32], char *out);

/* Take blocks of the batch until none is left (any thread, no GIL). */
void ck_batch_run(ck_task *task);

/* Read the fields of rows b0 .. b1 - 1 into orders (from the template); 0 on a miss. */
int ck_batch_fill(const ck_batch *b, int64_t b0, int64_t b1, ck_order *orders);

/* Run a batch over the calling thread and up to ``helpers`` pool threads. */
void ck_batch_go(ck_batch *b, int helpers);

#ifdef __cplusplus
}
#endif

#endif
