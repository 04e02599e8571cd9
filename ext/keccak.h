/* Keccak-256 (the Ethereum variant: pad 0x01 ... 0x80) and the EIP-712 digest
 * of the exchange's Order struct, absorbed straight from 64-bit limbs.
 *
 * Interface owned by the Cython glue (ext/_core_c.pyx); implementation in
 * keccak.c. Portable C99 (plus C11's anonymous unions) everywhere, with AVX2
 * four-lane and AVX-512 eight-lane paths chosen at run time (see
 * ck_keccak_set_impl). No allocation, no globals written after the
 * one-time dispatch, safe to call from many threads without the GIL.
 */
#ifndef CLOBKIT_KECCAK_H
#define CLOBKIT_KECCAK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A uint256 as four 64-bit limbs, w[0] least significant. */
typedef struct {
    uint64_t w[4];
} ck_u256;

/* The per-order variable fields of the V1 struct
 *   Order(uint256 salt,address maker,address signer,address taker,uint256 tokenId,
 *         uint256 makerAmount,uint256 takerAmount,uint256 expiration,uint256 nonce,
 *         uint256 feeRateBps,uint8 side,uint8 signatureType)
 * and of the V2/V3 struct
 *   Order(uint256 salt,address maker,address signer,uint256 tokenId,uint256 makerAmount,
 *         uint256 takerAmount,uint8 side,uint8 signatureType,uint256 timestamp,
 *         bytes32 metadata,bytes32 builder)
 * which share the record: each version's three own fields overlay the other's
 * (a bytes32 is held as the uint256 of its big-endian bytes), so a V1 batch
 * moves no more memory than before V2 existed. */
typedef struct {
    ck_u256 salt;
    ck_u256 token_id;
    ck_u256 maker_amount;
    ck_u256 taker_amount;
    union {
        ck_u256 expiration; /* V1 */
        ck_u256 timestamp;  /* V2/V3, milliseconds */
    };
    union {
        ck_u256 nonce;    /* V1 */
        ck_u256 metadata; /* V2/V3 */
    };
    union {
        ck_u256 fee_rate_bps; /* V1 */
        ck_u256 builder;      /* V2/V3 */
    };
    uint8_t side;     /* 0 BUY, 1 SELL */
    uint8_t neg_risk; /* 0: domain[0] (CTF exchange), 1: domain[1] (NegRisk exchange) */
} ck_order;

/* The struct an order context hashes: V2 and V3 differ only in the domain. */
enum { CK_LAYOUT_V1 = 1, CK_LAYOUT_V2 = 2 };

/* What is constant for one wallet: the 32-byte words of the struct encoding
 * that never change, and both domain separators. All words are the ABI
 * encoding (big-endian, left-padded) exactly as they appear in the message. */
typedef struct {
    uint8_t typehash[32];       /* keccak256 of the Order type string (of the layout) */
    uint8_t maker[32];          /* address, left-padded to 32 bytes */
    uint8_t signer[32];
    uint8_t taker[32];          /* zero address (V1 only) */
    uint8_t signature_type[32]; /* uint8 as a 32-byte word */
    uint8_t domain[2][32];      /* [0] CTF exchange, [1] NegRisk exchange */
    uint8_t layout;             /* CK_LAYOUT_V2 for V2/V3, otherwise V1 */
} ck_order_ctx;

/* Keccak-f[1600] on 25 lanes (24 rounds), portable. */
void ck_keccakf1600(uint64_t state[25]);

/* Keccak-256 of len bytes (any length, including 0). */
void ck_keccak256(const uint8_t *in, size_t len, uint8_t out[32]);

/* out[i] = keccak256(0x1901 || domain[orders[i].neg_risk] || keccak256(encode(order i)))
 * for i in [0, n): the EIP-712 digest, i.e. the clob_order_id bytes, of the
 * struct ctx->layout names. Uses the fastest path allowed by ck_keccak_set_impl. */
void ck_order_ids(const ck_order_ctx *ctx, const ck_order *orders, size_t n, uint8_t (*out)[32]);

/* keccak256(encode(order)): the EIP-712 hashStruct alone (portable; not a hot path). */
void ck_order_struct_hash(const ck_order_ctx *ctx, const ck_order *order, uint8_t out[32]);

/* Implementation choice: CK_IMPL_AUTO picks the best path the CPU supports. */
enum { CK_IMPL_AUTO = 0, CK_IMPL_PORTABLE = 1, CK_IMPL_AVX2 = 2, CK_IMPL_AVX512 = 3 };

/* Force a path (for tests and benchmarks). Returns 0 on success, -1 if the
 * CPU (or the compiler) does not support it; then nothing changes. */
int ck_keccak_set_impl(int impl);

/* The path ck_order_ids uses now (never CK_IMPL_AUTO). */
int ck_keccak_impl(void);

#ifdef __cplusplus
}
#endif

#endif
