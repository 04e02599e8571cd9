/* API request signing, a batch at a time (see sign.h).
 *
 * Requests go through two at a time: their body hashes, then their HMACs, are
 * computed by the two-lane SHA-256 functions, whose SHA-NI chains interleave.
 * A lone last request (or a batch of one) takes the one-message functions.
 */
#include "sign.h"

#include <stdlib.h>
#include <string.h>

/* "000102...ff": one 2-byte copy per input byte, independent of byte order. */
#define P16(h) h "0" h "1" h "2" h "3" h "4" h "5" h "6" h "7" h "8" h "9" h "a" h "b" h "c" h "d" h "e" h "f"
static const char PAIRS[] = P16("0") P16("1") P16("2") P16("3") P16("4") P16("5") P16("6") P16("7")
    P16("8") P16("9") P16("a") P16("b") P16("c") P16("d") P16("e") P16("f");

#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <emmintrin.h>
#define CK_HEX_SSE2 1

/* 16 bytes to 32 chars with SSE2 (in every x86-64 CPU): the nibbles
 * interleaved high first, each n becoming '0' + n, plus 39 more when n > 9
 * ('a' - '0' - 10). A signed request needs 80 bytes of hex: the table loop
 * took ~40 ns of it, this ~5. */
static inline void hex16(const uint8_t *in, char *out) {
    const __m128i low4 = _mm_set1_epi8(0x0f), nine = _mm_set1_epi8(9);
    const __m128i zero = _mm_set1_epi8('0'), gap = _mm_set1_epi8('a' - '0' - 10);
    __m128i v = _mm_loadu_si128((const __m128i *)in);
    __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), low4), lo = _mm_and_si128(v, low4);
    __m128i a = _mm_unpacklo_epi8(hi, lo), b = _mm_unpackhi_epi8(hi, lo);
    a = _mm_add_epi8(_mm_add_epi8(a, zero), _mm_and_si128(_mm_cmpgt_epi8(a, nine), gap));
    b = _mm_add_epi8(_mm_add_epi8(b, zero), _mm_and_si128(_mm_cmpgt_epi8(b, nine), gap));
    _mm_storeu_si128((__m128i *)out, a);
    _mm_storeu_si128((__m128i *)(out + 16), b);
}
#endif

void ck_hex(const uint8_t *in, size_t n, char *out) {
#ifdef CK_HEX_SSE2
    for (; n >= 16; n -= 16, in += 16, out += 32) hex16(in, out);
#endif
    for (; n; n--, in++, out += 2) memcpy(out, PAIRS + 2 * *in, 2);
}

/* A signing string fits here unless its path runs to hundreds of chars. */
enum { STACK = 512 };

/* Where r's signing string is built: the caller's stack buffer or, if too
 * long, the heap (NULL when that fails). */
static char *buffer(const ck_request *r, char stack[STACK], size_t *len) {
    *len = r->method_len + r->path_len + r->ts_len + r->nonce_len + 4 + 64;
    return *len <= STACK ? stack : (char *)malloc(*len);
}

static char *line(char *d, const char *s, size_t n) {
    memcpy(d, s, n);
    d[n] = '\n';
    return d + n + 1;
}

/* Everything before the body hash; returns where its 64 hex chars go. */
static char *head(char *d, const ck_request *r) {
    d = line(d, r->method, r->method_len);
    d = line(d, r->path, r->path_len);
    d = line(d, r->ts, r->ts_len);
    return line(d, r->nonce, r->nonce_len);
}

static int sign1(const ck_hmac_key *key, const ck_request *r) {
    char stack[STACK];
    uint8_t d[32];
    size_t len;
    char *s = buffer(r, stack, &len);
    if (!s) return -1;
    ck_sha256(r->body, r->body_len, d);
    ck_hex(d, 32, head(s, r));
    ck_hmac_sha256(key, (const uint8_t *)s, len, d);
    ck_hex(d, 32, r->sig);
    if (s != stack) free(s);
    return 0;
}

static int sign2(const ck_hmac_key *key, const ck_request *a, const ck_request *b) {
    char stack_a[STACK], stack_b[STACK];
    uint8_t da[32], db[32];
    size_t la, lb;
    char *sa = buffer(a, stack_a, &la), *sb = buffer(b, stack_b, &lb);
    int ok = sa && sb;
    if (ok) {
        ck_sha256_x2(a->body, a->body_len, b->body, b->body_len, da, db);
        ck_hex(da, 32, head(sa, a));
        ck_hex(db, 32, head(sb, b));
        ck_hmac_sha256_x2(key, (const uint8_t *)sa, la, (const uint8_t *)sb, lb, da, db);
        ck_hex(da, 32, a->sig);
        ck_hex(db, 32, b->sig);
    }
    if (sa != stack_a) free(sa);  /* free(NULL) is a no-op */
    if (sb != stack_b) free(sb);
    return ok ? 0 : -1;
}

int ck_sign_requests(const ck_hmac_key *key, const ck_request *reqs, size_t n) {
    size_t i;
    for (i = 0; i + 1 < n; i += 2)
        if (sign2(key, reqs + i, reqs + i + 1)) return -1;
    return i < n ? sign1(key, reqs + i) : 0;
}

void ck_expand_seed(const uint8_t seed[32], uint8_t *out, size_t n) {
    uint8_t a[40], b[40];
    size_t i;
    int j;
    memcpy(a, seed, 32);
    memcpy(b, seed, 32);
    for (i = 0; i < n; i += 2) {
        for (j = 0; j < 8; j++) {
            a[32 + j] = (uint8_t)((uint64_t)i >> (56 - 8 * j));
            b[32 + j] = (uint8_t)((uint64_t)(i + 1) >> (56 - 8 * j));
        }
        if (i + 1 < n)
            ck_sha256_x2(a, sizeof a, b, sizeof b, out + 32 * i, out + 32 * (i + 1));
        else
            ck_sha256(a, sizeof a, out + 32 * i);
    }
}
