/* The native batch (batch.c) and worker pool (workers.c) under many callers,
 * and its decimal parser against a reference.
 *
 * Builds batches of every column storage (Python-sequence refs, Arrow-style
 * strings, little-endian ints, big-endian 32-byte words), runs each alone as
 * the reference, then from 8 threads at once, each asking for 0 to 7 helpers
 * again and again (the pool serves one caller at a time; the others run
 * alone): every id and signature must equal the reference, and a bad value
 * must mark exactly its block as missed. Run plain, under ASan + UBSan, and
 * under ThreadSanitizer (make tsan). The signer is a stand-in with
 * libsecp256k1's signature (a keccak of digest and key), enough to drive the
 * signing plumbing without linking the library.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "sign.h"
#include "check.h"

enum { N = 5000, CALLERS = 8, ROUNDS = 12, BLOCK = 64 };

static char texts[N][80];
static ck_ref token_refs[N], salt_refs[N];
static int32_t str_offs[N + 1];
static char str_data[N * 24];
static uint64_t makers[N];
static uint8_t words[N][32];
static ck_src srcs[5];
static ck_column cols[5];
static ck_order tmpl;
static ck_order_ctx ctx;
static char want_ids[N * CK_ID_CHARS], want_sigs[N * CK_SIG_CHARS];

static int fake_sign(const void *c, void *sig, const unsigned char *msg32, const unsigned char *key,
                     const void *noncefp, const void *ndata) {
    uint8_t in[64];
    (void)c, (void)noncefp, (void)ndata;
    memcpy(in, msg32, 32);
    memcpy(in + 32, key, 32);
    ck_keccak256(in, 64, (uint8_t *)sig);
    ((uint8_t *)sig)[64] = msg32[0] & 1;
    return 1;
}

static int fake_serialize(const void *c, unsigned char *out64, int *recid, const void *sig) {
    (void)c;
    memcpy(out64, sig, 32);
    memcpy(out64 + 32, sig, 32);
    *recid = ((const uint8_t *)sig)[64];
    return 1;
}

static const unsigned char KEY[32] = {7, 7, 7};
static const ck_signer SIGNER = {fake_sign, fake_serialize, NULL, KEY};

static void setup(void) {
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    uint8_t *raw = (uint8_t *)&ctx;
    for (size_t i = 0; i < sizeof ctx; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        raw[i] = (uint8_t)x;
    }
    ctx.layout = CK_LAYOUT_V1;
    memset(&tmpl, 0, sizeof tmpl);
    str_offs[0] = 0;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        /* a few long token ids, repeated as a batch repeats them */
        snprintf(texts[i], sizeof texts[i], "%llu%llu%llu", (unsigned long long)(i / 100 + 1),
                 (unsigned long long)0xFFFFFFFFFFFFULL, (unsigned long long)(i / 100));
        token_refs[i].p = texts[i];
        token_refs[i].v = strlen(texts[i]);
        salt_refs[i].p = NULL; /* an int taken under the GIL */
        salt_refs[i].v = x % 1000000000000ULL;
        int len = snprintf(str_data + str_offs[i], 24, "%llu", (unsigned long long)(x >> 20));
        str_offs[i + 1] = str_offs[i] + len;
        makers[i] = x * 31;
        for (int j = 0; j < 32; j++) words[i][j] = (uint8_t)(x >> (j % 8));
    }
    srcs[0] = (ck_src){.fmt = CK_F_REFS, .data = (const uint8_t *)token_refs, .start = 0, .n = N};
    srcs[1] = (ck_src){.fmt = CK_F_REFS, .data = (const uint8_t *)salt_refs, .start = 0, .n = N};
    srcs[2] = (ck_src){.fmt = CK_F_STR, .width = 4, .offs = (const uint8_t *)str_offs,
                       .data = (const uint8_t *)str_data, .start = 0, .n = N};
    /* ints in two runs, the second an Arrow slice at offset 3 of the same buffer */
    srcs[3] = (ck_src){.fmt = CK_F_INT, .width = 8, .data = (const uint8_t *)makers, .start = 0, .n = 1000};
    srcs[4] = (ck_src){.fmt = CK_F_FSB32, .data = (const uint8_t *)words, .start = 0, .n = N};
    cols[0] = (ck_column){&srcs[0], 1, CK_C_TOKEN, offsetof(ck_order, token_id)};
    cols[1] = (ck_column){&srcs[1], 1, CK_C_SALT, offsetof(ck_order, salt)};
    cols[2] = (ck_column){&srcs[2], 1, CK_C_TAKER, offsetof(ck_order, taker_amount)};
    cols[3] = (ck_column){&srcs[4], 1, CK_C_NONCE, offsetof(ck_order, nonce)};
    cols[4] = (ck_column){&srcs[3], 1, CK_C_MAKER, offsetof(ck_order, maker_amount)};
}

static void batch(ck_batch *b, char *ids, char *sigs, uint8_t *missed, int64_t lo, int64_t hi) {
    memset(b, 0, sizeof *b);
    b->ctx = &ctx;
    b->tmpl = &tmpl;
    b->cols = cols;
    b->ncols = 4; /* the int column covers the first 1000 rows: left out of the full batches */
    b->lo = lo;
    b->hi = hi;
    b->block = BLOCK;
    b->ids = ids;
    b->base = lo;
    b->signer = &SIGNER;
    b->sigs = sigs;
    b->sig_chars = CK_SIG_CHARS; /* the id itself signed (wrap NULL) */
    b->missed = missed;
}

static int bad[CALLERS]; /* each caller's failures (the CHECK counters are not shared) */

static void *caller(void *arg) {
    int me = (int)(intptr_t)arg;
    char *ids = malloc(N * CK_ID_CHARS), *sigs = malloc(N * CK_SIG_CHARS);
    uint8_t missed[N / BLOCK + 1];
    for (int r = 0; r < ROUNDS; r++) {
        ck_batch b;
        int64_t lo = (me * 37 + r * 101) % 700;
        memset(missed, 0, sizeof missed);
        batch(&b, ids, sigs, missed, lo, N);
        ck_batch_go(&b, (me + r) % 8);
        bad[me] += memcmp(ids, want_ids + CK_ID_CHARS * lo, (size_t)(N - lo) * CK_ID_CHARS) != 0;
        bad[me] += memcmp(sigs, want_sigs + CK_SIG_CHARS * lo, (size_t)(N - lo) * CK_SIG_CHARS) != 0;
        bad[me] += b.failed;
        for (size_t k = 0; k < sizeof missed; k++) bad[me] += missed[k];
    }
    free(ids);
    free(sigs);
    return NULL;
}

/* The decimal parser against a digit-at-a-time reference: every length 1..130
 * (past 128: refused), leading zeros, values around 2**256, and a non-digit byte
 * at every place. Each text is malloc'ed to its exact length, so ASan / valgrind
 * see any read past it (the parser loads 8 bytes at a time). */
static int digits_reference(const char *s, size_t n, ck_u256 *x) {
    if (n == 0 || n > 128) return 0;
    memset(x, 0, sizeof *x);
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - 48u;
        if (d > 9) return 0;
        unsigned __int128 carry = d;
        for (int w = 0; w < 4; w++) {
            unsigned __int128 t = (unsigned __int128)x->w[w] * 10 + carry;
            x->w[w] = (uint64_t)t;
            carry = t >> 64;
        }
        if (carry) return 0;
    }
    return 1;
}

static void check_digits(const char *text, size_t n) {
    char *s = malloc(n ? n : 1);
    memcpy(s, text, n);
    ck_u256 got, want;
    int ok = ck_u256_digits(s, n, &got), ok_want = digits_reference(s, n, &want);
    CHECK(ok == ok_want && (!ok || memcmp(&got, &want, sizeof got) == 0),
          "digits of length %zu: %d, want %d", n, ok, ok_want);
    free(s);
}

static void test_digits(void) {
    /* 2**256 - 1, 2**256, 10**77 */
    static const char *edges[] = {
        "115792089237316195423570985008687907853269984665640564039457584007913129639935",
        "115792089237316195423570985008687907853269984665640564039457584007913129639936",
        "100000000000000000000000000000000000000000000000000000000000000000000000000000",
        "999999999999999999999999999999999999999999999999999999999999999999999999999999",
    };
    static const char bad[] = {'/', ':', '*', ' ', 0, 0x7f, (char)0xb0, 'a', '+', '-'};
    char text[131];
    for (size_t e = 0; e < sizeof edges / sizeof *edges; e++) check_digits(edges[e], strlen(edges[e]));
    for (size_t n = 1; n <= 130; n++) {
        for (size_t i = 0; i < n; i++) text[i] = (char)('0' + (i * 7 + n) % 10);
        if (n > 77) memset(text, '0', n - 77); /* leading zeros: still below 2**256 */
        check_digits(text, n);
        for (size_t at = 0; at < n; at++) {
            char keep = text[at];
            text[at] = bad[(at + n) % sizeof bad];
            check_digits(text, n);
            text[at] = keep;
        }
    }
    check_digits("", 0);
}

int main(void) {
    setup();
    test_digits();
    uint8_t missed[N / BLOCK + 1] = {0};
    ck_batch b;
    batch(&b, want_ids, want_sigs, missed, 0, N);
    ck_batch_go(&b, 0);
    CHECK(!b.failed, "a reference signature failed");
    CHECK(memcmp(want_ids, "0x", 2) == 0 && memcmp(want_sigs, "0x", 2) == 0, "no 0x prefix");

    /* one order through the portable path: the batch hashes what it read */
    ck_order one = tmpl;
    uint8_t d[32];
    char hex[CK_ID_CHARS];
    CHECK(ck_u256_digits(texts[9], strlen(texts[9]), &one.token_id), "digits");
    one.salt.w[0] = salt_refs[9].v;
    for (int k = 0; k < 4; k++)
        for (int t = 0; t < 8; t++) one.nonce.w[3 - k] = (one.nonce.w[3 - k] << 8) | words[9][8 * k + t];
    CHECK(ck_u256_digits(str_data + str_offs[9], (size_t)(str_offs[10] - str_offs[9]), &one.taker_amount), "digits");
    ck_order_ids(&ctx, &one, 1, (uint8_t(*)[32])d);
    hex[0] = '0', hex[1] = 'x';
    ck_hex(d, 32, hex + 2);
    CHECK(memcmp(hex, want_ids + 9 * CK_ID_CHARS, CK_ID_CHARS) == 0, "row 9's id");

    pthread_t t[CALLERS];
    for (int i = 0; i < CALLERS; i++) pthread_create(&t[i], NULL, caller, (void *)(intptr_t)i);
    for (int i = 0; i < CALLERS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < CALLERS; i++) CHECK(bad[i] == 0, "caller %d: %d batches differ", i, bad[i]);

    /* the int column (rows 0..999) joins, and a bad value at row 700 marks block 700 / 64 */
    char *ids = malloc(1000 * CK_ID_CHARS), *sigs = malloc(1000 * CK_SIG_CHARS);
    memset(missed, 0, sizeof missed);
    batch(&b, ids, sigs, missed, 0, 1000);
    b.ncols = 5;
    token_refs[700].p = CK_REF_MISS;
    ck_batch_go(&b, 3);
    for (int k = 0; k < 1000 / BLOCK + 1; k++)
        CHECK(missed[k] == (k == 700 / BLOCK), "block %d missed: %d", k, missed[k]);
    token_refs[700].p = texts[700];
    free(ids);
    free(sigs);

    printf("batch: %d checks, %d failures\n", checks, failures);
    return failures != 0;
}
