/* See batch.h. */
#include "batch.h"

#include <string.h>

#include "sign.h"

#if defined(_MSC_VER)
#include <intrin.h>
#if defined(_WIN64)
#define CK_FETCH_ADD(p, v) ((size_t)_InterlockedExchangeAdd64((volatile __int64 *)(p), (__int64)(v)))
#else
#define CK_FETCH_ADD(p, v) ((size_t)_InterlockedExchangeAdd((volatile long *)(p), (long)(v)))
#endif
#define CK_STORE_INT(p, v) _InterlockedExchange((volatile long *)(p), (long)(v))
#else
#define CK_FETCH_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define CK_STORE_INT(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#endif

const char ck_ref_miss[1] = {0};

/* a * b + c as 128 bits: the low half returned, the high half in *hi. */
static inline uint64_t muladd(uint64_t a, uint64_t b, uint64_t c, uint64_t *hi) {
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

static const uint64_t POW10[20] = {1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL,
    1000000ULL, 10000000ULL, 100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL,
    1000000000000ULL, 10000000000000ULL, 100000000000000ULL, 1000000000000000ULL,
    10000000000000000ULL, 100000000000000000ULL, 1000000000000000000ULL,
    10000000000000000000ULL};

#if (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) || \
    defined(_M_X64) || defined(_M_ARM64) || defined(_M_IX86)
/* The value of the 8 ASCII digits at s (s[0] the most significant), or -1 when a
 * byte is not a digit: 8 at once in one word (byte i of it is s[i]). */
static inline int64_t eight_digits(const char *s) {
    uint64_t x;
    memcpy(&x, s, 8);
    /* every high nibble 3, and no low nibble past 9 (adding 6 would carry into it) */
    if ((x & 0xF0F0F0F0F0F0F0F0ULL) != 0x3030303030303030ULL ||
        ((x + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) != 0x3030303030303030ULL)
        return -1;
    x -= 0x3030303030303030ULL;
    /* byte 2k becomes the pair 10 * s[2k] + s[2k + 1] (at most 99: nothing carries) */
    x = x * 10 + (x >> 8);
    /* the pairs p0..p3 (bytes 0, 2, 4, 6) make p0 10^6 + p1 10^4 + p2 100 + p3: it is the
     * sum of the high halves of two products, whose low halves stay below 2**32 */
    uint64_t even = x & 0x000000FF000000FFULL, odd = (x >> 16) & 0x000000FF000000FFULL;
    return (int64_t)((even * (100ULL + (1000000ULL << 32)) + odd * (1ULL + (10000ULL << 32))) >>
                     32);
}
#define CK_SIXTEEN_AT_ONCE 1
#endif

/* The value of the k <= 16 ASCII digits at s into *v; 0 on a non-digit. */
static inline int digits_chunk(const char *s, size_t k, uint64_t *v) {
#ifdef CK_SIXTEEN_AT_ONCE
    if (k == 16) {
        int64_t hi = eight_digits(s), lo = eight_digits(s + 8);
        if (hi < 0 || lo < 0) return 0;
        *v = (uint64_t)hi * 100000000ULL + (uint64_t)lo;
        return 1;
    }
#endif
    uint64_t chunk = 0;
    for (size_t j = 0; j < k; j++) {
        unsigned d = (unsigned)(unsigned char)s[j] - 48u;
        if (d > 9) return 0;
        chunk = chunk * 10 + d;
    }
    *v = chunk;
    return 1;
}

int ck_u256_digits(const char *s, size_t n, ck_u256 *out) {
    /* longer (leading zeros) goes to the Python path */
    if (n == 0 || n > 128) return 0;
    out->w[0] = out->w[1] = out->w[2] = out->w[3] = 0;
    /* the first n % 16 digits, then 16 at a time: value = value * 10^k + chunk, over
     * only the limbs the value has reached (a 77-digit token id: 13, then 4 x 16) */
    size_t i = 0, k = n % 16 ? n % 16 : 16;
    int used = 1;
    while (i < n) {
        uint64_t carry;
        if (!digits_chunk(s + i, k, &carry)) return 0;
        for (int w = 0; w < used; w++) out->w[w] = muladd(out->w[w], POW10[k], carry, &carry);
        if (carry) {
            if (used == 4) return 0; /* past 2**256 - 1 */
            out->w[used++] = carry;
        }
        i += k;
        k = 16;
    }
    return 1;
}

int ck_hex_limbs(const char *s, ck_u256 *out) {
    for (int k = 0; k < 4; k++) {
        uint64_t w = 0;
        for (int j = 0; j < 16; j++) {
            char ch = s[16 * k + j];
            uint64_t d;
            if (ch >= '0' && ch <= '9')
                d = (uint64_t)(ch - '0');
            else if (ch >= 'a' && ch <= 'f')
                d = (uint64_t)(ch - 'a' + 10);
            else if (ch >= 'A' && ch <= 'F')
                d = (uint64_t)(ch - 'A' + 10);
            else
                return 0;
            w = (w << 4) | d;
        }
        out->w[3 - k] = w;
    }
    return 1;
}

/* The uint256 of 32 big-endian bytes. */
static void be_limbs(const uint8_t *p, ck_u256 *x) {
    for (int k = 0; k < 4; k++) {
        uint64_t w = 0;
        for (int t = 0; t < 8; t++) w = (w << 8) | p[8 * k + t];
        x->w[3 - k] = w;
    }
}

static int is_flag(int kind) { return kind == CK_C_SIDE || kind == CK_C_NEG_RISK; }
static int is_word(int kind) { return kind == CK_C_METADATA || kind == CK_C_BUILDER; }

/* One element of a Python sequence (see ck_ref); 0 when the Python path must take it. */
static int fill_ref(const ck_ref *r, int kind, uint8_t *field) {
    ck_u256 *x = (ck_u256 *)field;
    if (r->p == CK_REF_MISS) return 0;
    if (r->p == NULL) {
        if (is_flag(kind)) {
            if (r->v > 1) return 0;
            *field = (uint8_t)r->v;
        } else {
            if (is_word(kind) && r->v != 0) return 0; /* a word is None (0) or bytes/text */
            x->w[0] = r->v;
            x->w[1] = x->w[2] = x->w[3] = 0;
        }
        return 1;
    }
    if (r->v & CK_REF_LIMBS) {
        if (is_flag(kind) || is_word(kind)) return 0;
        memcpy(x, r->p, 32);
        return 1;
    }
    if (r->v & CK_REF_RAW) {
        if (!is_word(kind) || (r->v & ~CK_REF_RAW) != 32) return 0;
        be_limbs((const uint8_t *)r->p, x);
        return 1;
    }
    if (kind == CK_C_SIDE) {
        if (r->v == 3 && memcmp(r->p, "BUY", 3) == 0)
            *field = 0;
        else if (r->v == 4 && memcmp(r->p, "SELL", 4) == 0)
            *field = 1;
        else
            return 0;
        return 1;
    }
    if (kind == CK_C_NEG_RISK) return 0;
    if (is_word(kind))
        return r->v == 66 && r->p[0] == '0' && (r->p[1] == 'x' || r->p[1] == 'X') &&
               ck_hex_limbs(r->p + 2, x);
    return ck_u256_digits(r->p, (size_t)r->v, x);
}

int64_t ck_fill_run(const ck_src *s, int64_t j0, int64_t m, ck_order *orders, int kind,
                    size_t off) {
    uint8_t *base = (uint8_t *)orders + off;
    int flag = is_flag(kind);
    int fmt = s->fmt, width = s->width;
    const uint8_t *prev = NULL; /* CK_F_STR: the text of the row before, when parsed */
    int64_t prev_len = -1;
    for (int64_t i = 0; i < m; i++) {
        uint8_t *field = base + i * (int64_t)sizeof(ck_order);
        ck_u256 *x = (ck_u256 *)field;
        if (fmt == CK_F_REFS) {
            const ck_ref *r = (const ck_ref *)s->data + j0 + i;
            /* the same object as the row before (a batch's few token ids): its field again */
            if (i > 0 && r->p == r[-1].p && r->v == r[-1].v && r->p != CK_REF_MISS)
                memcpy(field, field - sizeof(ck_order), flag ? 1 : 32);
            else if (!fill_ref(r, kind, field))
                return i;
            continue;
        }
        int64_t j = s->offset + j0 + i;
        const uint8_t *p;
        if (s->valid != NULL && !((s->valid[j >> 3] >> (j & 7)) & 1)) return i;
        switch (fmt) {
        case CK_F_DICT: {
            int64_t d;
            p = s->data + j * width;
            if (width == 1) {
                d = s->is_signed ? (int64_t)(int8_t)p[0] : (int64_t)p[0];
            } else if (width == 2) {
                uint16_t u;
                memcpy(&u, p, 2);
                d = s->is_signed ? (int64_t)(int16_t)u : (int64_t)u;
            } else if (width == 4) {
                uint32_t u;
                memcpy(&u, p, 4);
                d = s->is_signed ? (int64_t)(int32_t)u : (int64_t)u;
            } else {
                memcpy(&d, p, 8); /* an unsigned index past 2**63 reads negative: refused */
            }
            if (d < 0 || d >= s->ndict || !s->ok[d]) return i;
            if (flag)
                *field = s->table[32 * d];
            else
                memcpy(x, s->table + 32 * d, 32);
            break;
        }
        case CK_F_INT:
        case CK_F_DEC:
            p = s->data + j * width;
            if (s->is_signed && (p[width - 1] & 0x80)) return i; /* negative: the Python path words it */
            if (flag) { /* an int column (decimals hold amounts only) */
                uint64_t u = 0;
                memcpy(&u, p, (size_t)width);
                if (u > 1) return i;
                *field = (uint8_t)u;
            } else {
                x->w[0] = x->w[1] = x->w[2] = x->w[3] = 0;
                memcpy(x->w, p, (size_t)width);
            }
            break;
        case CK_F_BOOL:
            *field = (s->data[j >> 3] >> (j & 7)) & 1;
            break;
        case CK_F_BOOL8:
            *field = s->data[j] != 0;
            break;
        case CK_F_STR: {
            int64_t a, b;
            if (width == 4) {
                int32_t t[2];
                memcpy(t, s->offs + 4 * j, 8);
                a = t[0], b = t[1];
            } else {
                memcpy(&a, s->offs + 8 * j, 8);
                memcpy(&b, s->offs + 8 * j + 8, 8);
            }
            p = s->data + a;
            b -= a;
            if (i > 0 && b == prev_len && b > 8 && memcmp(p, prev, (size_t)b) == 0) {
                /* the text of the row before (a batch's few token ids): its field again */
                memcpy(field, field - sizeof(ck_order), flag ? 1 : 32);
                break;
            }
            prev = p;
            prev_len = b;
            if (kind == CK_C_SIDE) {
                if (b == 3 && memcmp(p, "BUY", 3) == 0)
                    *field = 0;
                else if (b == 4 && memcmp(p, "SELL", 4) == 0)
                    *field = 1;
                else
                    return i;
            } else if (is_word(kind)) {
                if (!(b == 66 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') &&
                      ck_hex_limbs((const char *)p + 2, x)))
                    return i;
            } else if (kind == CK_C_NEG_RISK || b < 0 || !ck_u256_digits((const char *)p, (size_t)b, x)) {
                return i;
            }
            break;
        }
        case CK_F_FSB32:
            be_limbs(s->data + 32 * j, x);
            break;
        default:
            return i;
        }
    }
    return m;
}

int ck_batch_fill(const ck_batch *b, int64_t b0, int64_t b1, ck_order *orders) {
    for (int64_t r = b0; r < b1; r++) orders[r - b0] = *b->tmpl;
    for (int c = 0; c < b->ncols; c++) {
        const ck_column *col = &b->cols[c];
        /* the first run ending after b0: binary search (a column may have many chunks) */
        int lo = 0, hi = col->nsrcs;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (col->srcs[mid].start + col->srcs[mid].n <= b0)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (int k = lo; k < col->nsrcs && col->srcs[k].start < b1; k++) {
            const ck_src *s = &col->srcs[k];
            int64_t a = s->start > b0 ? s->start : b0;
            int64_t e = s->start + s->n < b1 ? s->start + s->n : b1;
            if (ck_fill_run(s, a - s->start, e - a, orders + (a - b0), col->kind, col->off) < e - a)
                return 0;
        }
    }
    return 1;
}

static const char V_HEX[4][2] = {{'1', 'b'}, {'1', 'c'}, {'1', 'd'}, {'1', 'e'}};

int ck_sign_digest(const ck_signer *s, const uint8_t digest[32], char *out) {
    /* secp256k1_ecdsa_recoverable_signature: 65 opaque bytes; aligned like the library's
     * own callers would place it */
    union {
        unsigned char data[65];
        uint64_t align;
    } sig;
    unsigned char rs[64];
    int recid = 0;
    if (!s->sign(s->ctx, &sig, digest, s->key, NULL, NULL)) return 0;
    s->serialize(s->ctx, rs, &recid, &sig);
    out[0] = '0';
    out[1] = 'x';
    ck_hex(rs, 64, out + 2);
    memcpy(out + 130, V_HEX[recid & 3], 2);
    return 1;
}

int ck_sign_order(const ck_batch *b, const ck_order *order, const uint8_t id[32], char *out) {
    if (b->wrap == NULL) return ck_sign_digest(b->signer, id, out);
    const ck_wrap *w = b->wrap;
    const uint8_t *domain = b->ctx->domain[order->neg_risk ? 1 : 0];
    uint8_t contents[32], wrapped[224], message[66], digest[32];
    ck_order_struct_hash(b->ctx, order, contents);
    memcpy(wrapped, w->head, 32);
    memcpy(wrapped + 32, contents, 32);
    memcpy(wrapped + 64, w->tail, 160);
    message[0] = 0x19;
    message[1] = 0x01;
    memcpy(message + 2, domain, 32);
    ck_keccak256(wrapped, sizeof wrapped, message + 34); /* hashStruct(TypedDataSign) */
    ck_keccak256(message, sizeof message, digest);
    if (!ck_sign_digest(b->signer, digest, out)) return 0;
    ck_hex(domain, 32, out + CK_SIG_CHARS);
    ck_hex(contents, 32, out + CK_SIG_CHARS + 64);
    memcpy(out + CK_SIG_CHARS + 128, w->type_hex, w->type_hex_len);
    return 1;
}

enum { SUB = 64 }; /* orders filled and hashed at a time: ~15 KiB of structs, in L1 */

/* Rows b0 .. b1 - 1's ends in an Arrow string array of ids: a function of the row
 * alone, written here whatever the rows' ids turn out to be (a missed block's too). */
static void write_offsets(const ck_batch *b, int64_t b0, int64_t b1) {
    if (b->offs_wide) {
        int64_t *o = (int64_t *)b->offs;
        for (int64_t r = b0; r < b1; r++) o[r + 1] = CK_ID_CHARS * (r + 1);
    } else {
        int32_t *o = (int32_t *)b->offs;
        for (int64_t r = b0; r < b1; r++) o[r + 1] = (int32_t)(CK_ID_CHARS * (r + 1));
    }
}

static void run_block(ck_batch *b, int64_t b0, int64_t b1) {
    ck_order orders[SUB];
    uint8_t dig[SUB][32];
    if (b->offs != NULL) write_offsets(b, b0, b1);
    for (int64_t s0 = b0; s0 < b1; s0 += SUB) {
        int64_t m = b1 - s0 < SUB ? b1 - s0 : SUB;
        const uint8_t *d;
        if (b->ctx != NULL) {
            if (!ck_batch_fill(b, s0, s0 + m, orders)) {
                CK_STORE_INT(&b->missed[(b0 - b->lo) / b->block], 1);
                return;
            }
            ck_order_ids(b->ctx, orders, (size_t)m, dig);
            d = dig[0];
        } else {
            d = b->digests + 32 * (s0 - b->base);
        }
        if (b->ids != NULL) {
            for (int64_t i = 0; i < m; i++) {
                char *at = b->ids + CK_ID_CHARS * (s0 + i - b->base);
                at[0] = '0';
                at[1] = 'x';
                ck_hex(d + 32 * i, 32, at + 2);
            }
        }
        if (b->signer != NULL) {
            for (int64_t i = 0; i < m; i++) {
                char *at = b->sigs + b->sig_chars * (size_t)(s0 + i - b->base);
                if (!ck_sign_order(b, orders + i, d + 32 * i, at)) CK_STORE_INT(&b->failed, 1);
            }
        }
    }
}

void ck_batch_run(ck_task *task) {
    ck_batch *b = (ck_batch *)task;
    size_t n = (size_t)(b->hi - b->lo);
    for (;;) {
        size_t at = CK_FETCH_ADD(&b->next, (size_t)b->block);
        if (at >= n) return;
        int64_t b0 = b->lo + (int64_t)at;
        int64_t b1 = b0 + b->block < b->hi ? b0 + b->block : b->hi;
        run_block(b, b0, b1);
    }
}

void ck_batch_go(ck_batch *b, int helpers) {
    int got = 0;
    b->task.run = ck_batch_run;
    b->next = 0;
    if (helpers > 0 && b->hi - b->lo > b->block) got = ck_pool_start(&b->task, helpers);
    ck_batch_run(&b->task);
    if (got) ck_pool_wait();
}
