/* Standalone tests and micro-benchmark for ext/sha256.c.
 *
 *   ./test_sha256                 run every test with every available path
 *   ./test_sha256 bench [ns]      ns per block per path, one message and two at
 *                                 a time; with ns = OpenSSL's ns per block, ratios
 *                                 (a signed request: test_sign.c's bench)
 *
 * Build and run via ext/tests/run_sha256.sh. Exit status 0 only if all pass.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../sha256.h"
#include "check.h"


/* ------------------------------------------------------------ reference */
/* Deliberately the textbook form: full 64-word schedule, loop over rounds,
 * padding built byte by byte. Shares nothing with the code under test. */

static const uint32_t RK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void ref_block(uint32_t H[8], const uint8_t *p) {
    uint32_t W[64], v[8];
    int i;
    for (i = 0; i < 16; i++)
        W[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (i = 16; i < 64; i++) {
        uint32_t s0 = rotr(W[i - 15], 7) ^ rotr(W[i - 15], 18) ^ (W[i - 15] >> 3);
        uint32_t s1 = rotr(W[i - 2], 17) ^ rotr(W[i - 2], 19) ^ (W[i - 2] >> 10);
        W[i] = W[i - 16] + s0 + W[i - 7] + s1;
    }
    memcpy(v, H, sizeof v);
    for (i = 0; i < 64; i++) {
        uint32_t S1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
        uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
        uint32_t t1 = v[7] + S1 + ch + RK[i] + W[i];
        uint32_t S0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
        uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
        memmove(v + 1, v, 7 * sizeof v[0]);
        v[4] += t1;
        v[0] = t1 + S0 + maj;
    }
    for (i = 0; i < 8; i++) H[i] += v[i];
}

/* SHA-256 of a || b (two pieces so the reference HMAC needs no big buffer). */
static void ref_sha256_2(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, uint8_t out[32]) {
    uint32_t H[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    uint8_t blk[64];
    uint64_t bits = (uint64_t)(alen + blen) * 8;
    size_t total = alen + blen, padded = (total + 9 + 63) / 64 * 64, i, k = 0;
    for (i = 0; i < padded; i++) {
        uint8_t c;
        if (i < alen) c = a[i];
        else if (i < total) c = b[i - alen];
        else if (i == total) c = 0x80;
        else if (i >= padded - 8) c = (uint8_t)(bits >> (8 * (padded - 1 - i)));
        else c = 0;
        blk[k++] = c;
        if (k == 64) ref_block(H, blk), k = 0;
    }
    for (i = 0; i < 32; i++) out[i] = (uint8_t)(H[i / 4] >> (24 - 8 * (i % 4)));
}

static void ref_sha256(const uint8_t *m, size_t len, uint8_t out[32]) { ref_sha256_2(m, len, NULL, 0, out); }

static void ref_hmac(const uint8_t *key, size_t klen, const uint8_t *m, size_t len, uint8_t out[32]) {
    uint8_t k[64] = {0}, pad[64], inner[32];
    size_t i;
    if (klen > 64) ref_sha256(key, klen, k);
    else if (klen) memcpy(k, key, klen);
    for (i = 0; i < 64; i++) pad[i] = k[i] ^ 0x36;
    ref_sha256_2(pad, 64, m, len, inner);
    for (i = 0; i < 64; i++) pad[i] = k[i] ^ 0x5c;
    ref_sha256_2(pad, 64, inner, 32, out);
}

/* -------------------------------------------------------------- helpers */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {  /* xorshift64*: reproducible test data */
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}
static void fill(uint8_t *p, size_t n) { while (n--) *p++ = (uint8_t)rnd(); }

static void to_hex(const uint8_t *d, size_t n, char *out) {
    static const char hx[] = "0123456789abcdef";
    size_t i;
    for (i = 0; i < n; i++) out[2 * i] = hx[d[i] >> 4], out[2 * i + 1] = hx[d[i] & 15];
    out[2 * n] = 0;
}

static size_t from_hex(const char *s, uint8_t *out) {
    size_t n = 0;
    for (; s[0] && s[1]; s += 2) {
        unsigned v;
        sscanf(s, "%2x", &v);
        out[n++] = (uint8_t)v;
    }
    return n;
}

static int hex_eq(const uint8_t *d, size_t n, const char *hex) {
    char buf[129];
    to_hex(d, n, buf);
    return strcmp(buf, hex) == 0;
}

#define MAXLEN 10000
static uint8_t data[MAXLEN + 64];

static void ctx_hash(const uint8_t *m, size_t len, uint8_t out[32]) {
    ck_sha256_ctx c;
    ck_sha256_init(&c);
    ck_sha256_update(&c, m, len);
    ck_sha256_final(&c, out);
}

/* ---------------------------------------------------------------- tests */

static void test_fips(void) {
    static const struct { const char *msg; const char *hex; } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    static uint8_t million[1000000];
    uint8_t out[32];
    ck_sha256_ctx c;
    size_t i;
    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t n = strlen(v[i].msg);
        ck_sha256((const uint8_t *)v[i].msg, n, out);
        CHECK(hex_eq(out, 32, v[i].hex), "FIPS one-shot vector %zu", i);
        ctx_hash((const uint8_t *)v[i].msg, n, out);
        CHECK(hex_eq(out, 32, v[i].hex), "FIPS ctx vector %zu", i);
    }
    memset(million, 'a', sizeof million);
    ck_sha256(million, sizeof million, out);
    CHECK(hex_eq(out, 32, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "million a");
    ck_sha256_init(&c);  /* 1000 x 1000 bytes: every update straddles blocks */
    for (i = 0; i < 1000; i++) ck_sha256_update(&c, million, 1000);
    ck_sha256_final(&c, out);
    CHECK(hex_eq(out, 32, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "million a, pieces");
    /* Empty input through NULL pointers must be fine too. */
    ck_sha256(NULL, 0, out);
    CHECK(hex_eq(out, 32, v[0].hex), "NULL empty one-shot");
    ck_sha256_init(&c);
    ck_sha256_update(&c, NULL, 0);
    ck_sha256_update(&c, (const uint8_t *)"abc", 3);
    ck_sha256_update(&c, NULL, 0);
    ck_sha256_final(&c, out);
    CHECK(hex_eq(out, 32, v[1].hex), "NULL empty updates");
}

/* Every length 0..300 and a spread up to MAXLEN, at several alignments,
 * against the reference and (via `other`, if >= 0) against the other path. */
static void test_lengths(int other) {
    static const size_t big[] = {447, 448, 511, 512, 513, 1000, 1023, 1024, 1025, 4095, 4096,
                                 4097, 5555, 8191, 8192, 9999, 10000};
    size_t k, len;
    for (k = 0; k < 301 + sizeof big / sizeof big[0]; k++) {
        uint8_t r[32], o[32], x[32];
        size_t off = k & 3;
        len = k < 301 ? k : big[k - 301];
        fill(data + off, len);
        ref_sha256(data + off, len, r);
        ck_sha256(data + off, len, o);
        CHECK(!memcmp(r, o, 32), "one-shot len %zu off %zu", len, off);
        ctx_hash(data + off, len, o);
        CHECK(!memcmp(r, o, 32), "ctx len %zu off %zu", len, off);
        if (other >= 0) {
            int cur = ck_sha256_impl();
            ck_sha256_set_impl(other);
            ck_sha256(data + off, len, x);
            ck_sha256_set_impl(cur);
            CHECK(!memcmp(x, o, 32), "paths disagree at len %zu", len);
        }
    }
}

static void test_splits(void) {
    static const size_t lens[] = {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 200, 300, 1000};
    size_t li, i, j;
    for (li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        size_t len = lens[li];
        uint8_t r[32], o[32];
        ck_sha256_ctx c;
        fill(data, len);
        ref_sha256(data, len, r);
        for (i = 0; i <= len; i++) {  /* two pieces, split at every offset */
            ck_sha256_init(&c);
            ck_sha256_update(&c, data, i);
            ck_sha256_update(&c, data + i, len - i);
            ck_sha256_final(&c, o);
            CHECK(!memcmp(r, o, 32), "split len %zu at %zu", len, i);
        }
        if (len <= 200)  /* three pieces, every pair of offsets */
            for (i = 0; i <= len; i++)
                for (j = i; j <= len; j++) {
                    ck_sha256_init(&c);
                    ck_sha256_update(&c, data, i);
                    ck_sha256_update(&c, data + i, j - i);
                    ck_sha256_update(&c, data + j, len - j);
                    ck_sha256_final(&c, o);
                    CHECK(!memcmp(r, o, 32), "split3 len %zu at %zu,%zu", len, i, j);
                }
        ck_sha256_init(&c);  /* byte by byte */
        for (i = 0; i < len; i++) ck_sha256_update(&c, data + i, 1);
        ck_sha256_final(&c, o);
        CHECK(!memcmp(r, o, 32), "bytewise len %zu", len);
    }
}

/* RFC 4231 test cases 1-7. Case 5 compares only the first 128 bits. */
static void test_rfc4231(void) {
    static const struct { const char *key, *msg, *mac; } tc[] = {
        {"0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "4869205468657265",
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
        {"4a656665", "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
         "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd",
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
        {"0102030405060708090a0b0c0d0e0f10111213141516171819",
         "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
        {"0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c", "546573742057697468205472756e636174696f6e",
         "a3b6167473100ee06e0c796c2955552b"},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",  /* 131 bytes */
         "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a65204b6579202d2048617368204b"
         "6579204669727374",
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",  /* 131 bytes */
         "5468697320697320612074657374207573696e672061206c6172676572207468616e20626c6f636b2d73697a65"
         "206b657920616e642061206c6172676572207468616e20626c6f636b2d73697a6520646174612e20546865206b"
         "6579206e6565647320746f20626520686173686564206265666f7265206265696e6720757365642062792074686520"
         "484d414320616c676f726974686d2e",
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
    };
    size_t i;
    for (i = 0; i < sizeof tc / sizeof tc[0]; i++) {
        uint8_t key[200], msg[200], out[32];
        size_t kl = from_hex(tc[i].key, key), ml = from_hex(tc[i].msg, msg), cut = strlen(tc[i].mac) / 2;
        ck_hmac_key k;
        ck_sha256_ctx c;
        CHECK(i != 5 || kl == 131, "case 6 key length %zu", kl);
        ck_hmac_sha256_init(&k, key, kl);
        ck_hmac_sha256(&k, msg, ml, out);
        CHECK(hex_eq(out, cut, tc[i].mac), "RFC 4231 case %zu one-shot", i + 1);
        ck_hmac_sha256_begin(&k, &c);
        ck_hmac_sha256_end(&k, &c, out);  /* empty message then the real one via pieces */
        ck_hmac_sha256_begin(&k, &c);
        ck_sha256_update(&c, msg, ml / 3);
        ck_sha256_update(&c, msg + ml / 3, ml - ml / 3);
        ck_hmac_sha256_end(&k, &c, out);
        CHECK(hex_eq(out, cut, tc[i].mac), "RFC 4231 case %zu pieces", i + 1);
    }
}

/* Random keys (0..200 bytes, i.e. both sides of 64) and messages, one-shot and
 * in random pieces, against the reference HMAC. */
static void test_hmac_random(void) {
    uint8_t key[200], out[32], o2[32], r[32];
    size_t it;
    ck_hmac_key k;
    ck_sha256_ctx c;
    ck_hmac_sha256_init(&k, NULL, 0);
    ck_hmac_sha256(&k, NULL, 0, out);
    ref_hmac(NULL, 0, NULL, 0, r);
    CHECK(!memcmp(out, r, 32), "empty key, empty msg");
    for (it = 0; it < 600; it++) {
        size_t kl = it % 201, ml = (it * 7) % 301, pos = 0;
        fill(key, kl);
        fill(data, ml);
        ref_hmac(key, kl, data, ml, r);
        ck_hmac_sha256_init(&k, key, kl);
        ck_hmac_sha256(&k, data, ml, out);
        CHECK(!memcmp(out, r, 32), "hmac one-shot key %zu msg %zu", kl, ml);
        ck_hmac_sha256_begin(&k, &c);
        while (pos < ml) {  /* pieces of 0..40 bytes, like a signing string */
            size_t p = rnd() % 41;
            if (p > ml - pos) p = ml - pos;
            ck_sha256_update(&c, data + pos, p);
            pos += p;
        }
        ck_hmac_sha256_end(&k, &c, o2);
        CHECK(!memcmp(o2, r, 32), "hmac pieces key %zu msg %zu", kl, ml);
    }
}

/* Two messages at once, every pair of lengths 0..200 (so every mix of whole
 * blocks and 1- or 2-block tails, either lane the longer) plus long ones,
 * at different alignments, as hashes and as HMACs, against the reference. */
static void test_x2(void) {
    static uint8_t other[MAXLEN + 64];
    static const size_t big[] = {300, 1000, 4097, 10000};
    uint8_t key[100], ra[32], rb[32], oa[32], ob[32];
    size_t i, j, n = 201 + sizeof big / sizeof big[0];
    ck_hmac_key k;
    fill(key, sizeof key);
    ck_hmac_sha256_init(&k, key, (size_t)(rnd() % 100));
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j += (i < 201 ? 1 : 7)) {
            size_t la = i < 201 ? i : big[i - 201], lb = j < 201 ? j : big[j - 201];
            const uint8_t *a = data + (i & 3), *b = other + (j & 7);
            fill(data, la + 3);
            fill(other, lb + 7);
            ref_sha256(a, la, ra);
            ref_sha256(b, lb, rb);
            ck_sha256_x2(a, la, b, lb, oa, ob);
            CHECK(!memcmp(ra, oa, 32) && !memcmp(rb, ob, 32), "x2 lens %zu, %zu", la, lb);
            ck_hmac_sha256(&k, a, la, ra);
            ck_hmac_sha256(&k, b, lb, rb);
            ck_hmac_sha256_x2(&k, a, la, b, lb, oa, ob);
            CHECK(!memcmp(ra, oa, 32) && !memcmp(rb, ob, 32), "hmac x2 lens %zu, %zu", la, lb);
        }
    ck_sha256_x2(NULL, 0, NULL, 0, oa, ob);  /* empty messages may come as NULL */
    ref_sha256(NULL, 0, ra);
    CHECK(!memcmp(ra, oa, 32) && !memcmp(ra, ob, 32), "x2 of two NULL, 0");
    ck_sha256_x2(data, 0, data, 0, oa, ob);  /* the same memory in both lanes */
    CHECK(!memcmp(ra, oa, 32) && !memcmp(ra, ob, 32), "x2 of aliased empty messages");
    fill(data, 500);
    ref_sha256(data, 500, ra);
    ck_sha256_x2(data, 500, data, 500, oa, ob);
    CHECK(!memcmp(ra, oa, 32) && !memcmp(ra, ob, 32), "x2 of one message twice");
}

/* State layout is shared: a context started under one path may be finished
 * under another (set_impl can be called at any time). */
static void test_switch_midstream(int other) {
    uint8_t r[32], o[32];
    ck_sha256_ctx c;
    int cur = ck_sha256_impl();
    fill(data, 1000);
    ref_sha256(data, 1000, r);
    ck_sha256_init(&c);
    ck_sha256_update(&c, data, 300);
    ck_sha256_set_impl(other);
    ck_sha256_update(&c, data + 300, 700);
    ck_sha256_set_impl(cur);
    ck_sha256_final(&c, o);
    CHECK(!memcmp(r, o, 32), "switch mid-stream");
}

static void run_all(int impl, int other) {
    CHECK(ck_sha256_set_impl(impl) == 0, "set_impl(%d)", impl);
    CHECK(impl == CK_SHA_AUTO || ck_sha256_impl() == impl, "impl() after set_impl(%d)", impl);
    test_fips();
    test_lengths(other);
    test_splits();
    test_rfc4231();
    test_hmac_random();
    test_x2();
    if (other >= 0) test_switch_midstream(other);
}

/* ---------------------------------------------------------------- bench */

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static volatile uint8_t sink;
static volatile size_t zero_vol;

static double bench_blocks(void) {
    static uint8_t buf[1 << 16];
    uint8_t out[32];
    double best = 1e30;
    int rep, i;
    for (rep = 0; rep < 15; rep++) {
        double t = now_ns();
        for (i = 0; i < 16; i++) ck_sha256(buf, sizeof buf, out), buf[0] ^= out[0];
        t = now_ns() - t;
        if (t < best) best = t;
    }
    sink = buf[0];
    return best / (16.0 * (sizeof buf / 64));
}

/* Two 64 KiB messages through ck_sha256_x2: ns per block of either. */
static double bench_blocks_x2(void) {
    static uint8_t a[1 << 16], b[1 << 16];
    uint8_t oa[32], ob[32];
    double best = 1e30;
    int rep, i;
    for (rep = 0; rep < 15; rep++) {
        double t = now_ns();
        for (i = 0; i < 8; i++) ck_sha256_x2(a, sizeof a, b, sizeof b, oa, ob), a[0] ^= oa[0], b[0] ^= ob[0];
        t = now_ns() - t;
        if (t < best) best = t;
    }
    sink = a[0] ^ b[0];
    return best / (16.0 * (sizeof a / 64));
}

static int bench(double openssl_ns) {
    static const int impls[] = {CK_SHA_PORTABLE, CK_SHA_NI};
    static const char *names[] = {"portable", "sha-ni"};
    int i;
    if (openssl_ns > 0) printf("OpenSSL (hashlib) %8.2f ns/block (given)\n", openssl_ns);
    for (i = 0; i < 2; i++) {
        double blk, blk2;
        if (ck_sha256_set_impl(impls[i]) != 0) {
            printf("%-8s  not available on this CPU/build\n", names[i]);
            continue;
        }
        blk = bench_blocks();
        blk2 = bench_blocks_x2();
        printf("%-8s  %8.2f ns/block, %8.2f two at a time", names[i], blk, blk2);
        if (openssl_ns > 0) printf("  | x OpenSSL: %.2f, %.2f", blk / openssl_ns, blk2 / openssl_ns);
        printf("\n");
    }
    ck_sha256_set_impl(CK_SHA_AUTO);
    return 0;
}

int main(int argc, char **argv) {
    int first, has_ni;
    if (argc > 1 && !strcmp(argv[1], "bench")) return bench(argc > 2 ? atof(argv[2]) : 0);

    /* Before any set_impl: the lazy resolver must pick a concrete path. */
    first = ck_sha256_impl();
    CHECK(first == CK_SHA_PORTABLE || first == CK_SHA_NI, "initial impl %d", first);
    has_ni = ck_sha256_set_impl(CK_SHA_NI) == 0;
    CHECK(has_ni == (first == CK_SHA_NI), "AUTO did not pick the best path");
    if (!has_ni) CHECK(ck_sha256_impl() == CK_SHA_PORTABLE, "failed set_impl(NI) changed the path");
    CHECK(ck_sha256_set_impl(7) == -1 && ck_sha256_set_impl(-1) == -1, "bad impl accepted");
    ck_sha256_set_impl(CK_SHA_AUTO);
    CHECK(ck_sha256_impl() == first, "AUTO resolves differently");

    impl_name = "portable";
    run_all(CK_SHA_PORTABLE, has_ni ? CK_SHA_NI : -1);
    if (has_ni) {
        impl_name = "sha-ni";
        run_all(CK_SHA_NI, CK_SHA_PORTABLE);
    }
    impl_name = "auto";
    run_all(CK_SHA_AUTO, -1);

    printf("sha256: %d checks, %d failures; paths tested: portable%s (auto = %s)\n", checks, failures,
           has_ni ? ", sha-ni" : " (sha-ni unavailable: skipped)", first == CK_SHA_NI ? "sha-ni" : "portable");
    return failures ? 1 : 0;
}
