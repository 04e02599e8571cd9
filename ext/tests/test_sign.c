/* Standalone tests for ext/sign.c: hex, nonce expansion and batch signing,
 * on every SHA-256 path, against compositions of the one-message functions
 * (which test_sha256.c holds against a textbook reference). Its main job is
 * to run the batch code under ASan/UBSan and valgrind: run via
 * ext/tests/run_sha256.sh. Exit status 0 only if all pass.
 *
 *   ./test_sign bench [ns]   ns per signed 300-byte raw-order request, in
 *                            batches of 32; with ns = OpenSSL's ns per SHA-256
 *                            block (S), also the cost in S */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../sign.h"
#include "check.h"

static unsigned long long rng = 0x2545f4914f6cdd1dull;
static unsigned rnd(void) {  /* xorshift64: reproducible test data */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (unsigned)(rng >> 32);
}

static void hex_ref(const uint8_t *d, size_t n, char *out) {
    size_t i;
    for (i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

static void test_hex(void) {
    uint8_t in[300];
    char got[601], want[601];
    size_t n, i;
    for (i = 0; i < 256; i++) in[i] = (uint8_t)i;  /* every byte value, SIMD and tail */
    for (n = 0; n <= 256; n += (n < 70 ? 1 : 31)) {
        memset(got, '#', sizeof got);
        ck_hex(in + (n & 7), n, got);
        hex_ref(in + (n & 7), n, want);
        CHECK(!memcmp(got, want, 2 * n) && got[2 * n] == '#', "hex of %zu bytes", n);
    }
}

static void test_expand(void) {
    uint8_t seed[32], out[32 * 9 + 1], msg[40], want[32];
    size_t n, i;
    int j;
    for (i = 0; i < 32; i++) seed[i] = (uint8_t)rnd();
    for (n = 0; n <= 9; n++) {
        out[32 * n] = 0xa5;
        ck_expand_seed(seed, out, n);
        CHECK(out[32 * n] == 0xa5, "expand wrote past %zu blocks", n);
        for (i = 0; i < n; i++) {
            memcpy(msg, seed, 32);
            for (j = 0; j < 8; j++) msg[32 + j] = (uint8_t)(i >> (56 - 8 * j));
            ck_sha256(msg, sizeof msg, want);
            CHECK(!memcmp(out + 32 * i, want, 32), "expand block %zu of %zu", i, n);
        }
    }
}

enum { MAXREQ = 7, PATHMAX = 1200, BODYMAX = 700 };

/* Batches of 0..7 requests with random fields (paths up to 1200 chars, so
 * signing strings past the 512-byte stack buffer) against one-at-a-time. */
static void test_batches(void) {
    static char paths[MAXREQ][PATHMAX], nonces[MAXREQ][40], sigs[MAXREQ][64];
    static uint8_t bodies[MAXREQ][BODYMAX];
    static const char *methods[] = {"GET", "POST", "DELETE"};
    ck_request r[MAXREQ];
    ck_hmac_key key;
    uint8_t secret[80];
    size_t n, i, k, round;
    for (round = 0; round < 40; round++) {
        for (i = 0; i < sizeof secret; i++) secret[i] = (uint8_t)rnd();
        ck_hmac_sha256_init(&key, secret, 1 + rnd() % sizeof secret);
        n = round % (MAXREQ + 1);
        for (i = 0; i < n; i++) {
            size_t pl = 1 + rnd() % (round & 1 ? PATHMAX : 60), nl = 1 + rnd() % 40;
            for (k = 0; k < pl; k++) paths[i][k] = (char)(k ? 0x21 + rnd() % 94 : '/');
            for (k = 0; k < nl; k++) nonces[i][k] = (char)(0x21 + rnd() % 94);
            r[i].method = methods[rnd() % 3];
            r[i].method_len = strlen(r[i].method);
            r[i].path = paths[i], r[i].path_len = pl;
            r[i].ts = "1700000000000", r[i].ts_len = 13;
            r[i].nonce = nonces[i], r[i].nonce_len = nl;
            r[i].body_len = rnd() % BODYMAX;
            for (k = 0; k < r[i].body_len; k++) bodies[i][k] = (uint8_t)rnd();
            r[i].body = r[i].body_len || rnd() % 2 ? bodies[i] : NULL;
            r[i].sig = sigs[i];
        }
        CHECK(ck_sign_requests(&key, r, n) == 0, "batch of %zu", n);
        for (i = 0; i < n; i++) {
            char *s = malloc(PATHMAX + 200), want[64];
            uint8_t d[32];
            int len = sprintf(s, "%s\n%.*s\n%s\n%.*s\n", r[i].method, (int)r[i].path_len, r[i].path, r[i].ts,
                              (int)r[i].nonce_len, r[i].nonce);
            ck_sha256(r[i].body, r[i].body_len, d);
            hex_ref(d, 32, s + len);
            ck_hmac_sha256(&key, (const uint8_t *)s, (size_t)len + 64, d);
            {
                char tmp[65];
                hex_ref(d, 32, tmp);
                memcpy(want, tmp, 64);
            }
            CHECK(!memcmp(sigs[i], want, 64), "request %zu of %zu (path %zu chars)", i, n, r[i].path_len);
            free(s);
        }
    }
}

/* The request #5 measures: POST /api/ext/v1/orders/raw with a 300-byte body,
 * 9 compressions; the batch as headers_many hands it over (32 at a time). */
static int bench(double s_ns) {
    static const int impls[] = {CK_SHA_PORTABLE, CK_SHA_NI};
    static const char *names[] = {"portable", "sha-ni"};
    static uint8_t body[32][300];
    static char sig[32][64];
    ck_request r[32];
    ck_hmac_key key;
    int i, k, rep, it;
    ck_hmac_sha256_init(&key, (const uint8_t *)"secret", 6);
    for (k = 0; k < 32; k++) {
        memset(body[k], k, sizeof body[k]);
        r[k].method = "POST", r[k].method_len = 4;
        r[k].path = "/api/ext/v1/orders/raw", r[k].path_len = 22;
        r[k].ts = "1700000000000", r[k].ts_len = 13;
        r[k].nonce = "0123456789abcdef0123456789abcdef", r[k].nonce_len = 32;
        r[k].body = body[k], r[k].body_len = sizeof body[k];
        r[k].sig = sig[k];
    }
    for (i = 0; i < 2; i++) {
        double best = 1e30;
        if (ck_sha256_set_impl(impls[i]) != 0) continue;
        for (rep = 0; rep < 15; rep++) {
            struct timespec t0, t1;
            double t;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            for (it = 0; it < 1000; it++) {
                ck_sign_requests(&key, r, 32);
                body[0][0] ^= (uint8_t)sig[0][0];  /* keep the work live */
            }
            clock_gettime(CLOCK_MONOTONIC, &t1);
            t = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (1000.0 * 32);
            if (t < best) best = t;
        }
        printf("%-8s  %7.1f ns per signed request", names[i], best);
        if (s_ns > 0) printf(" = %.2f S", best / s_ns);
        printf("\n");
    }
    ck_sha256_set_impl(CK_SHA_AUTO);
    return 0;
}

int main(int argc, char **argv) {
    static const int impls[] = {CK_SHA_PORTABLE, CK_SHA_NI};
    int i, tried = 0;
    if (argc > 1 && !strcmp(argv[1], "bench")) return bench(argc > 2 ? atof(argv[2]) : 0);
    test_hex();
    for (i = 0; i < 2; i++) {
        if (ck_sha256_set_impl(impls[i]) != 0) continue;
        impl_name = i ? "sha-ni" : "portable";
        tried++;
        test_expand();
        test_batches();
    }
    ck_sha256_set_impl(CK_SHA_AUTO);
    printf("sign: %d checks, %d failures, %d sha256 path(s)\n", checks, failures, tried);
    return failures ? 1 : 0;
}
