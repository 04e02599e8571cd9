/* API request signing (section 5 of the API text), a batch at a time.
 *
 *   signing string = METHOD \n PATH \n TIMESTAMP \n NONCE \n hex(SHA-256(body))
 *   signature      = lowercase hex HMAC-SHA256(secret, signing string)
 *
 * Interface owned by the Cython glue (ext/_core_c.pyx), which validates every
 * text field as printable ASCII before it gets here. Implementation in sign.c.
 */
#ifndef CLOBKIT_SIGN_H
#define CLOBKIT_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *method, *path, *ts, *nonce;  /* path already cut where the query is not signed */
    size_t method_len, path_len, ts_len, nonce_len;
    const uint8_t *body;  /* may be NULL when body_len is 0 */
    size_t body_len;
    char *sig;            /* out: 64 lowercase hex chars, no terminator */
} ck_request;

/* Sign n requests with one key. 0 on success; -1 if a signing string too
 * long for the stack could not be allocated (the signatures are then unset). */
int ck_sign_requests(const ck_hmac_key *key, const ck_request *reqs, size_t n);

/* Nonce material: n 32-byte blocks SHA-256(seed || i) for i = 0..n-1 (i as
 * 8 bytes big-endian), i.e. SHA-256 in counter mode under a fresh OS seed.
 * Nonces need only be unique; this keeps them unpredictable too, at a third
 * of the cost of reading as many bytes from the OS (~13 ns vs ~43 ns for a
 * 16-byte nonce here). */
void ck_expand_seed(const uint8_t seed[32], uint8_t *out, size_t n);

/* Lowercase hex of n bytes into 2n chars (no terminator). */
void ck_hex(const uint8_t *in, size_t n, char *out);

#ifdef __cplusplus
}
#endif

#endif
