/* SHA-256 and HMAC-SHA256 with precomputed key states.
 *
 * Interface owned by the Cython glue (ext/_core_c.pyx); implementation in
 * sha256.c. Portable C99 everywhere, with an x86 SHA-NI path chosen at run time
 * (see ck_sha256_set_impl). No allocation; thread-safe once dispatched.
 */
#ifndef CLOBKIT_SHA256_H
#define CLOBKIT_SHA256_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Incremental context. */
typedef struct {
    uint32_t h[8];
    uint64_t total;  /* bytes absorbed so far */
    uint8_t buf[64];
    size_t buflen;
} ck_sha256_ctx;

void ck_sha256_init(ck_sha256_ctx *ctx);
void ck_sha256_update(ck_sha256_ctx *ctx, const uint8_t *data, size_t len);
void ck_sha256_final(ck_sha256_ctx *ctx, uint8_t out[32]);

/* One-shot SHA-256. */
void ck_sha256(const uint8_t *in, size_t len, uint8_t out[32]);

/* Two messages at once: the same digests as two ck_sha256 calls, at close to
 * the cost of one on SHA-NI (the two rounds chains interleave). */
void ck_sha256_x2(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, uint8_t outa[32],
                  uint8_t outb[32]);

/* HMAC key with both padded-key blocks already compressed: signing then costs
 * only the message blocks plus one outer block. */
typedef struct {
    uint32_t inner[8]; /* state after compressing key ^ ipad */
    uint32_t outer[8]; /* state after compressing key ^ opad */
} ck_hmac_key;

void ck_hmac_sha256_init(ck_hmac_key *key, const uint8_t *secret, size_t len);

/* Start an HMAC: ctx continues from the inner state (64 bytes absorbed). */
void ck_hmac_sha256_begin(const ck_hmac_key *key, ck_sha256_ctx *ctx);
/* Finish an HMAC begun with ck_hmac_sha256_begin and fed with ck_sha256_update. */
void ck_hmac_sha256_end(const ck_hmac_key *key, ck_sha256_ctx *ctx, uint8_t out[32]);

/* One-shot HMAC with a prepared key. */
void ck_hmac_sha256(const ck_hmac_key *key, const uint8_t *msg, size_t len, uint8_t out[32]);

/* Two HMACs with one key at once (as ck_sha256_x2). */
void ck_hmac_sha256_x2(const ck_hmac_key *key, const uint8_t *a, size_t alen, const uint8_t *b,
                       size_t blen, uint8_t outa[32], uint8_t outb[32]);

enum { CK_SHA_AUTO = 0, CK_SHA_PORTABLE = 1, CK_SHA_NI = 2 };

/* Force a path (tests, benchmarks). 0 on success, -1 if unsupported (no change). */
int ck_sha256_set_impl(int impl);
/* The path in use now (never CK_SHA_AUTO). */
int ck_sha256_impl(void);

#ifdef __cplusplus
}
#endif

#endif
