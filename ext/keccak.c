/* Keccak-256 and the EIP-712 Order digest (clob_order_id). See keccak.h.
 *
 * Layout of this file: the permutation round and the per-order absorb
 * sequence are each written once as macros over a small set of lane
 * operations (CK_XOR, CK_ROL, CK_CHI, ...). Each path -- portable uint64_t,
 * AVX2 with four orders per __m256i, AVX-512 with eight per __m512i -- defines
 * those operations and expands the same macros, so the round, the message
 * layout and the padding exist in one place. A V1 order costs exactly five
 * permutations (four for the 416-byte struct encoding, one for the digest),
 * a V2/V3 order four (three for its 384 bytes, one for the digest).
 */
#include "keccak.h"

#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define CK_HAVE_X86_SIMD 1
#include <immintrin.h>
#else
#define CK_HAVE_X86_SIMD 0
#endif

/* The AVX-512 path names its intrinsics through CK_MM512 so that a test build
 * (-DCK_TEST_SIMDE_AVX512) can compile the very same code against SIMDe's
 * portable emulation and check it on CPUs that lack AVX-512. */
#if CK_HAVE_X86_SIMD && defined(CK_TEST_SIMDE_AVX512)
#include <simde/x86/avx512.h>
#define CK_HAVE_AVX512 1
#define CK_MM512(f) simde_mm512_##f
#define CK_AVX512
typedef simde__m512i ck_m512i;
#elif CK_HAVE_X86_SIMD
#define CK_HAVE_AVX512 1
#define CK_MM512(f) _mm512_##f
#define CK_AVX512 __attribute__((target("avx512f")))
typedef __m512i ck_m512i;
#else
#define CK_HAVE_AVX512 0
#endif

#if defined(__GNUC__)
#define CK_NOINLINE __attribute__((noinline))
#else
#define CK_NOINLINE
#endif

static const uint64_t ck_rc[24] = {
    0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808aULL,
    0x8000000080008000ULL, 0x000000000000808bULL, 0x0000000080000001ULL,
    0x8000000080008081ULL, 0x8000000000008009ULL, 0x000000000000008aULL,
    0x0000000000000088ULL, 0x0000000080008009ULL, 0x000000008000000aULL,
    0x000000008000808bULL, 0x800000000000008bULL, 0x8000000000008089ULL,
    0x8000000000008003ULL, 0x8000000000008002ULL, 0x8000000000000080ULL,
    0x000000000000800aULL, 0x800000008000000aULL, 0x8000000080008081ULL,
    0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL,
};

/* ---- byte order helpers (lanes are little-endian in the byte stream) ---- */

static inline uint64_t ck_load_le64(const uint8_t *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
#endif
}

static inline void ck_store_le64(uint8_t *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 8);
#else
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
#endif
}

/* A limb is a host integer; the ABI word is big-endian, the lane little-endian,
 * so each limb enters the sponge byte-reversed whatever the host order. */
static inline uint64_t ck_bswap64(uint64_t v) {
#if defined(__GNUC__)
    return __builtin_bswap64(v);
#else
    v = (v >> 32) | (v << 32);
    v = ((v & 0xffff0000ffff0000ULL) >> 16) | ((v & 0x0000ffff0000ffffULL) << 16);
    return ((v & 0xff00ff00ff00ff00ULL) >> 8) | ((v & 0x00ff00ff00ff00ffULL) << 8);
#endif
}

/* ---- the permutation, written once over lane operations ----
 *
 * Lanes are named row+column as in the Keccak reference: rows b,g,k,m,s are
 * y = 0..4, columns a,e,i,o,u are x = 0..4, state index x + 5y. Each output
 * plane y' takes B[x'] = ROL(A[x = x'+3y'][y = x'] ^ D[x], rho[x][y]) (this is
 * pi inverted), so theta, rho, pi, chi of one plane need only five B
 * temporaries and the whole round stays in named locals. Two rounds per loop
 * iteration swap the roles of the A and E sets instead of copying 25 lanes. */

#define CK_FOR_LANES(X)                                                 \
    X(ba, 0) X(be, 1) X(bi, 2) X(bo, 3) X(bu, 4)                        \
    X(ga, 5) X(ge, 6) X(gi, 7) X(go, 8) X(gu, 9)                        \
    X(ka, 10) X(ke, 11) X(ki, 12) X(ko, 13) X(ku, 14)                   \
    X(ma, 15) X(me, 16) X(mi, 17) X(mo, 18) X(mu, 19)                   \
    X(sa, 20) X(se, 21) X(si, 22) X(so, 23) X(su, 24)

#define CK_PLANE(A, E, y, l0, l1, l2, l3, l4, d0, d1, d2, d3, d4, r0, r1, r2, r3, r4) \
    B0 = CK_ROL(CK_XOR(A##l0, d0), r0);                                 \
    B1 = CK_ROL(CK_XOR(A##l1, d1), r1);                                 \
    B2 = CK_ROL(CK_XOR(A##l2, d2), r2);                                 \
    B3 = CK_ROL(CK_XOR(A##l3, d3), r3);                                 \
    B4 = CK_ROL(CK_XOR(A##l4, d4), r4);                                 \
    CK_CHI(E, y)

/* Column parity; a path with a three-input xor may override CK_XOR5. */
#define CK_XOR5_PLAIN(a, b, c, d, e) CK_XOR(CK_XOR(CK_XOR(a, b), CK_XOR(c, d)), e)

/* chi as specified; a path may substitute its own CK_CHI. */
#define CK_CHI_PLAIN(E, y)                                              \
    E##y##a = CK_XOR(B0, CK_ANDN(B1, B2));                              \
    E##y##e = CK_XOR(B1, CK_ANDN(B2, B3));                              \
    E##y##i = CK_XOR(B2, CK_ANDN(B3, B4));                              \
    E##y##o = CK_XOR(B3, CK_ANDN(B4, B0));                              \
    E##y##u = CK_XOR(B4, CK_ANDN(B0, B1))

#define CK_ROUND(T, A, E, rc)                                                        \
    do {                                                                             \
        T Ca = CK_XOR5(A##ba, A##ga, A##ka, A##ma, A##sa);                         \
        T Ce = CK_XOR5(A##be, A##ge, A##ke, A##me, A##se);                         \
        T Ci = CK_XOR5(A##bi, A##gi, A##ki, A##mi, A##si);                         \
        T Co = CK_XOR5(A##bo, A##go, A##ko, A##mo, A##so);                         \
        T Cu = CK_XOR5(A##bu, A##gu, A##ku, A##mu, A##su);                         \
        T Da = CK_XOR(Cu, CK_ROL1(Ce));                                              \
        T De = CK_XOR(Ca, CK_ROL1(Ci));                                              \
        T Di = CK_XOR(Ce, CK_ROL1(Co));                                              \
        T Do = CK_XOR(Ci, CK_ROL1(Cu));                                              \
        T Du = CK_XOR(Co, CK_ROL1(Ca));                                              \
        T B0, B1, B2, B3, B4;                                                        \
        CK_PLANE(A, E, b, ba, ge, ki, mo, su, Da, De, Di, Do, Du, 0, 44, 43, 21, 14); \
        E##ba = CK_XOR(E##ba, rc);                                                   \
        CK_PLANE(A, E, g, bo, gu, ka, me, si, Do, Du, Da, De, Di, 28, 20, 3, 45, 61); \
        CK_PLANE(A, E, k, be, gi, ko, mu, sa, De, Di, Do, Du, Da, 1, 6, 25, 8, 18);   \
        CK_PLANE(A, E, m, bu, ga, ke, mi, so, Du, Da, De, Di, Do, 27, 36, 10, 15, 56); \
        CK_PLANE(A, E, s, bi, go, ku, ma, se, Di, Do, Du, Da, De, 62, 55, 39, 41, 2); \
    } while (0)

#define CK_DECL_LANE(n, i) T A##n = s[i], E##n;
#define CK_STORE_LANE(n, i) s[i] = A##n;

/* Body of a permutation function over `T *s`; expects T and the ops defined. */
#define CK_PERMUTE_BODY(T, RC)                    \
    CK_FOR_LANES(CK_DECL_LANE)                    \
    for (int round = 0; round < 24; round += 2) { \
        CK_ROUND(T, A, E, RC(round));             \
        CK_ROUND(T, E, A, RC(round + 1));         \
    }                                             \
    CK_FOR_LANES(CK_STORE_LANE)

/* ---- the Order digest, written once over lane operations ----
 *
 * The 416-byte struct encoding is 52 lanes: word k occupies lanes 4k..4k+3.
 * Rate 136 bytes = 17 lanes, so blocks hold lanes 0..16, 17..33, 34..50 and
 * the last block lane 51 followed by the padding (0x01 right after it, 0x80
 * in the top byte of lane 16). Words in order: typehash, salt, maker, signer,
 * taker, tokenId, makerAmount, takerAmount, expiration, nonce, feeRateBps,
 * side, signatureType. K(i) are the 20 lanes of the five constant words
 * (typehash 0-3, maker 4-7, signer 8-11, taker 12-15, signatureType 16-19).
 *
 * The final message 0x19 0x01 || domain || structHash is 66 bytes, so the
 * domain and hash sit two bytes off the lane grid: lane 4 is the domain's last
 * two bytes under the hash's first six, and each later lane splices two
 * adjacent hash lanes with shifts of 16/48. DOM(0..4) gives the domain part
 * (lane 4 holds just its two bytes). The structHash bytes are exactly the
 * little-endian bytes of state lanes 0..3, so no conversion is needed.
 *
 * Needs: T, ZERO, SET1(c), CK_XOR, CK_OR, CK_SHL, CK_SHR, PERM(s),
 * FIELD(name, v0, v1, v2, v3) (the word's four lanes in stream order),
 * K(i), SIDE, DOM(i); leaves the digest in s[0..3]. */
#define CK_ORDER_DIGEST_BODY(s)                                                       \
    T s[25];                                                                          \
    T f0, f1, f2, f3, e0, e1, e2, e3, h0, h1, h2, h3;                                 \
    for (int i = 0; i < 25; i++) s[i] = ZERO;                                         \
    /* block 1: lanes 0..16 */                                                        \
    s[0] = K(0); s[1] = K(1); s[2] = K(2); s[3] = K(3);                               \
    FIELD(salt, s[4], s[5], s[6], s[7]);                                              \
    s[8] = K(4); s[9] = K(5); s[10] = K(6); s[11] = K(7);                             \
    s[12] = K(8); s[13] = K(9); s[14] = K(10); s[15] = K(11);                         \
    s[16] = K(12);                                                                    \
    PERM(s);                                                                          \
    /* block 2: lanes 17..33 */                                                       \
    s[0] = CK_XOR(s[0], K(13)); s[1] = CK_XOR(s[1], K(14)); s[2] = CK_XOR(s[2], K(15)); \
    FIELD(token_id, f0, f1, f2, f3);                                                  \
    s[3] = CK_XOR(s[3], f0); s[4] = CK_XOR(s[4], f1);                                 \
    s[5] = CK_XOR(s[5], f2); s[6] = CK_XOR(s[6], f3);                                 \
    FIELD(maker_amount, f0, f1, f2, f3);                                              \
    s[7] = CK_XOR(s[7], f0); s[8] = CK_XOR(s[8], f1);                                 \
    s[9] = CK_XOR(s[9], f2); s[10] = CK_XOR(s[10], f3);                               \
    FIELD(taker_amount, f0, f1, f2, f3);                                              \
    s[11] = CK_XOR(s[11], f0); s[12] = CK_XOR(s[12], f1);                             \
    s[13] = CK_XOR(s[13], f2); s[14] = CK_XOR(s[14], f3);                             \
    FIELD(expiration, e0, e1, e2, e3);                                                \
    s[15] = CK_XOR(s[15], e0); s[16] = CK_XOR(s[16], e1);                             \
    PERM(s);                                                                          \
    /* block 3: lanes 34..50; the side word's first three lanes are zero */           \
    s[0] = CK_XOR(s[0], e2); s[1] = CK_XOR(s[1], e3);                                 \
    FIELD(nonce, f0, f1, f2, f3);                                                     \
    s[2] = CK_XOR(s[2], f0); s[3] = CK_XOR(s[3], f1);                                 \
    s[4] = CK_XOR(s[4], f2); s[5] = CK_XOR(s[5], f3);                                 \
    FIELD(fee_rate_bps, f0, f1, f2, f3);                                              \
    s[6] = CK_XOR(s[6], f0); s[7] = CK_XOR(s[7], f1);                                 \
    s[8] = CK_XOR(s[8], f2); s[9] = CK_XOR(s[9], f3);                                 \
    s[13] = CK_XOR(s[13], SIDE);                                                      \
    s[14] = CK_XOR(s[14], K(16)); s[15] = CK_XOR(s[15], K(17));                       \
    s[16] = CK_XOR(s[16], K(18));                                                     \
    PERM(s);                                                                          \
    /* block 4: lane 51 and the padding */                                            \
    s[0] = CK_XOR(s[0], K(19));                                                       \
    s[1] = CK_XOR(s[1], SET1(0x01));                                                  \
    s[16] = CK_XOR(s[16], SET1(0x8000000000000000ULL));                               \
    PERM(s);                                                                          \
    CK_ORDER_FINAL(s)

/* The V2/V3 struct encoding is 384 bytes = 48 lanes: blocks hold lanes 0..16,
 * 17..33 and 34..47, the last followed by the padding (0x01 in lane 14, 0x80
 * in the top byte of lane 16). Words in order: typehash, salt, maker, signer,
 * tokenId, makerAmount, takerAmount, side, signatureType, timestamp, metadata,
 * builder. The constant words keep their K(i) numbers (typehash 0-3, maker
 * 4-7, signer 8-11, signatureType 16-19; no taker). Same needs as above. */
#define CK_ORDER2_DIGEST_BODY(s)                                                      \
    T s[25];                                                                          \
    T f0, f1, f2, f3, t1, t2, t3, h0, h1, h2, h3;                                     \
    for (int i = 0; i < 25; i++) s[i] = ZERO;                                         \
    /* block 1: lanes 0..16 (tokenId's first lane last) */                            \
    s[0] = K(0); s[1] = K(1); s[2] = K(2); s[3] = K(3);                               \
    FIELD(salt, s[4], s[5], s[6], s[7]);                                              \
    s[8] = K(4); s[9] = K(5); s[10] = K(6); s[11] = K(7);                             \
    s[12] = K(8); s[13] = K(9); s[14] = K(10); s[15] = K(11);                         \
    FIELD(token_id, s[16], t1, t2, t3);                                               \
    PERM(s);                                                                          \
    /* block 2: lanes 17..33; the side word's first three lanes are zero */           \
    s[0] = CK_XOR(s[0], t1); s[1] = CK_XOR(s[1], t2); s[2] = CK_XOR(s[2], t3);        \
    FIELD(maker_amount, f0, f1, f2, f3);                                              \
    s[3] = CK_XOR(s[3], f0); s[4] = CK_XOR(s[4], f1);                                 \
    s[5] = CK_XOR(s[5], f2); s[6] = CK_XOR(s[6], f3);                                 \
    FIELD(taker_amount, f0, f1, f2, f3);                                              \
    s[7] = CK_XOR(s[7], f0); s[8] = CK_XOR(s[8], f1);                                 \
    s[9] = CK_XOR(s[9], f2); s[10] = CK_XOR(s[10], f3);                               \
    s[14] = CK_XOR(s[14], SIDE);                                                      \
    s[15] = CK_XOR(s[15], K(16)); s[16] = CK_XOR(s[16], K(17));                       \
    PERM(s);                                                                          \
    /* block 3: lanes 34..47 and the padding */                                       \
    s[0] = CK_XOR(s[0], K(18)); s[1] = CK_XOR(s[1], K(19));                           \
    FIELD(timestamp, f0, f1, f2, f3);                                                 \
    s[2] = CK_XOR(s[2], f0); s[3] = CK_XOR(s[3], f1);                                 \
    s[4] = CK_XOR(s[4], f2); s[5] = CK_XOR(s[5], f3);                                 \
    FIELD(metadata, f0, f1, f2, f3);                                                  \
    s[6] = CK_XOR(s[6], f0); s[7] = CK_XOR(s[7], f1);                                 \
    s[8] = CK_XOR(s[8], f2); s[9] = CK_XOR(s[9], f3);                                 \
    FIELD(builder, f0, f1, f2, f3);                                                   \
    s[10] = CK_XOR(s[10], f0); s[11] = CK_XOR(s[11], f1);                             \
    s[12] = CK_XOR(s[12], f2); s[13] = CK_XOR(s[13], f3);                             \
    s[14] = CK_XOR(s[14], SET1(0x01));                                                \
    s[16] = CK_XOR(s[16], SET1(0x8000000000000000ULL));                               \
    PERM(s);                                                                          \
    CK_ORDER_FINAL(s)

/* The final message, shared by both structs: 0x1901 || domain || structHash,
 * one block; the struct hash is in s[0..3] on entry, the digest on exit. */
#define CK_ORDER_FINAL(s)                                                             \
    h0 = s[0]; h1 = s[1]; h2 = s[2]; h3 = s[3];                                       \
    for (int i = 0; i < 25; i++) s[i] = ZERO;                                         \
    s[0] = DOM(0); s[1] = DOM(1); s[2] = DOM(2); s[3] = DOM(3);                       \
    s[4] = CK_OR(DOM(4), CK_SHL(h0, 16));                                             \
    s[5] = CK_OR(CK_SHR(h0, 48), CK_SHL(h1, 16));                                     \
    s[6] = CK_OR(CK_SHR(h1, 48), CK_SHL(h2, 16));                                     \
    s[7] = CK_OR(CK_SHR(h2, 48), CK_SHL(h3, 16));                                     \
    s[8] = CK_OR(CK_SHR(h3, 48), SET1(0x01ULL << 16));                                \
    s[16] = SET1(0x8000000000000000ULL);                                              \
    PERM(s)

/* Per-call constants, shared by every path: the constant words as lanes and
 * the domain part of the final block for both exchanges. */
typedef struct {
    uint64_t k[20];
    uint64_t dom[2][5];
    int v2; /* the V2/V3 struct (CK_ORDER2_DIGEST_BODY) */
} ck_consts;

static void ck_make_consts(const ck_order_ctx *ctx, ck_consts *c) {
    const uint8_t *words[5] = {ctx->typehash, ctx->maker, ctx->signer, ctx->taker,
                               ctx->signature_type};
    for (int w = 0; w < 5; w++)
        for (int j = 0; j < 4; j++) c->k[4 * w + j] = ck_load_le64(words[w] + 8 * j);
    for (int d = 0; d < 2; d++) {
        uint8_t b[34];
        b[0] = 0x19;
        b[1] = 0x01;
        memcpy(b + 2, ctx->domain[d], 32);
        for (int j = 0; j < 4; j++) c->dom[d][j] = ck_load_le64(b + 8 * j);
        c->dom[d][4] = (uint64_t)b[32] | (uint64_t)b[33] << 8;
    }
    c->v2 = ctx->layout == CK_LAYOUT_V2;
}

/* ======================= portable path ======================= */

/* Lane complementing: x86-64 without BMI has no and-not, so ~a & b costs a
 * copy, a not and an and. Keeping lanes be, bi, go, ki, mi, sa complemented
 * between rounds lets every plane's chi be written with plain and/or plus a
 * single shared not (identities such as ~a & b = ~(a | ~b) absorb the
 * rest); the chosen set is the one for which the complement pattern of
 * chi's outputs reproduces itself every round. 25 nots per round become 5. */
#define CK_XOR(a, b) ((a) ^ (b))
#define CK_ROL(a, n) (((a) << (n)) | ((a) >> ((64 - (n)) & 63)))
#define CK_ROL1(a) CK_ROL(a, 1)
#define CK_XOR5 CK_XOR5_PLAIN
#define CK_SCALAR_RC(i) ck_rc[i]
#define T uint64_t
#define CK_CHI(E, y) CK_CHI_LC_##y(E)
#define CK_CHI_LC_b(E)                                    \
    E##ba = B0 ^ (B1 | B2);                               \
    E##be = B1 ^ (~B2 | B3);                              \
    E##bi = B2 ^ (B3 & B4);                               \
    E##bo = B3 ^ (B4 | B0);                               \
    E##bu = B4 ^ (B0 & B1)
#define CK_CHI_LC_g(E)                                    \
    E##ga = B0 ^ (B1 | B2);                               \
    E##ge = B1 ^ (B2 & B3);                               \
    E##gi = B2 ^ (B3 | ~B4);                              \
    E##go = B3 ^ (B4 | B0);                               \
    E##gu = B4 ^ (B0 & B1)
#define CK_CHI_LC_k(E)                                    \
    E##ka = B0 ^ (B1 | B2);                               \
    E##ke = B1 ^ (B2 & B3);                               \
    B3 = ~B3;                                             \
    E##ki = B2 ^ (B3 & B4);                               \
    E##ko = B3 ^ (B4 | B0);                               \
    E##ku = B4 ^ (B0 & B1)
#define CK_CHI_LC_m(E)                                    \
    E##ma = B0 ^ (B1 & B2);                               \
    E##me = B1 ^ (B2 | B3);                               \
    B3 = ~B3;                                             \
    E##mi = B2 ^ (B3 | B4);                               \
    E##mo = B3 ^ (B4 & B0);                               \
    E##mu = B4 ^ (B0 | B1)
#define CK_CHI_LC_s(E)                                    \
    E##su = B4 ^ (B0 & B1);                               \
    B1 = ~B1;                                             \
    E##sa = B0 ^ (B1 & B2);                               \
    E##se = B1 ^ (B2 | B3);                               \
    E##si = B2 ^ (B3 & B4);                               \
    E##so = B3 ^ (B4 | B0)

/* Entering and leaving complemented form costs six nots each way. */
#define CK_COMPLEMENT(s) \
    (s[1] = ~s[1], s[2] = ~s[2], s[8] = ~s[8], s[12] = ~s[12], s[17] = ~s[17], s[20] = ~s[20])

static CK_NOINLINE void ck_permute_scalar(uint64_t *s) {
    CK_COMPLEMENT(s);
    {
        CK_PERMUTE_BODY(uint64_t, CK_SCALAR_RC);
    }
    CK_COMPLEMENT(s);
}

void ck_keccakf1600(uint64_t state[25]) { ck_permute_scalar(state); }

void ck_keccak256(const uint8_t *in, size_t len, uint8_t out[32]) {
    uint64_t s[25] = {0};
    for (; len >= 136; len -= 136, in += 136) {
        for (int i = 0; i < 17; i++) s[i] ^= ck_load_le64(in + 8 * i);
        ck_permute_scalar(s);
    }
    /* The tail is xored byte by byte into its lane: no staging buffer. */
    for (size_t i = 0; i < len; i++) s[i / 8] ^= (uint64_t)in[i] << (8 * (i % 8));
    s[len / 8] ^= (uint64_t)0x01 << (8 * (len % 8));
    s[16] ^= 0x8000000000000000ULL;
    ck_permute_scalar(s);
    for (int i = 0; i < 4; i++) ck_store_le64(out + 8 * i, s[i]);
}

#define ZERO 0
#define SET1(c) ((uint64_t)(c))
#define CK_OR(a, b) ((a) | (b))
#define CK_SHL(a, n) ((a) << (n))
#define CK_SHR(a, n) ((a) >> (n))
#define PERM(s) ck_permute_scalar(s)
#define FIELD(name, v0, v1, v2, v3)       \
    do {                                  \
        const uint64_t *w_ = o->name.w;   \
        v0 = ck_bswap64(w_[3]);           \
        v1 = ck_bswap64(w_[2]);           \
        v2 = ck_bswap64(w_[1]);           \
        v3 = ck_bswap64(w_[0]);           \
    } while (0)
#define K(i) c->k[i]
#define SIDE ((uint64_t)o->side << 56)
#define DOM(i) dom[i]

static void ck_order1_ids_scalar(const ck_consts *c, const ck_order *orders, size_t n,
                                 uint8_t (*out)[32]) {
    for (size_t idx = 0; idx < n; idx++) {
        const ck_order *o = &orders[idx];
        const uint64_t *dom = c->dom[o->neg_risk != 0];
        CK_ORDER_DIGEST_BODY(s);
        for (int i = 0; i < 4; i++) ck_store_le64(out[idx] + 8 * i, s[i]);
    }
}

static void ck_order2_ids_scalar(const ck_consts *c, const ck_order *orders, size_t n,
                                 uint8_t (*out)[32]) {
    for (size_t idx = 0; idx < n; idx++) {
        const ck_order *o = &orders[idx];
        const uint64_t *dom = c->dom[o->neg_risk != 0];
        CK_ORDER2_DIGEST_BODY(s);
        for (int i = 0; i < 4; i++) ck_store_le64(out[idx] + 8 * i, s[i]);
    }
}

static void ck_order_ids_scalar(const ck_consts *c, const ck_order *orders, size_t n,
                                uint8_t (*out)[32]) {
    if (c->v2)
        ck_order2_ids_scalar(c, orders, n, out);
    else
        ck_order1_ids_scalar(c, orders, n, out);
}

#undef T
#undef ZERO
#undef SET1
#undef CK_OR
#undef CK_SHL
#undef CK_SHR
#undef PERM
#undef FIELD
#undef K
#undef SIDE
#undef DOM
#undef CK_XOR
#undef CK_ROL
#undef CK_ROL1
#undef CK_CHI
#undef CK_XOR5

/* ======================= AVX2 path: four orders per vector ======================= */

#if CK_HAVE_X86_SIMD
#define CK_AVX2 __attribute__((target("avx2")))

/* Rotations by 8 and 56 are byte shuffles: one shuffle-port uop instead of two
 * shifts and an or. Rotation by 1 uses an add for the left shift, which runs
 * on any vector ALU port rather than competing for the two shift ports. */
#define CK_XOR(a, b) _mm256_xor_si256(a, b)
#define CK_ANDN(a, b) _mm256_andnot_si256(a, b)
#define CK_ROL(a, n)                                                                      \
    ((n) == 0    ? (a)                                                                    \
     : (n) == 8  ? _mm256_shuffle_epi8(a, rot8)                                           \
     : (n) == 56 ? _mm256_shuffle_epi8(a, rot56)                                          \
                 : _mm256_or_si256(_mm256_slli_epi64(a, (n) & 63), _mm256_srli_epi64(a, (64 - (n)) & 63)))
#define CK_ROL1(a) _mm256_or_si256(_mm256_add_epi64(a, a), _mm256_srli_epi64(a, 63))
#define CK_AVX2_RC(i) _mm256_set1_epi64x((long long)ck_rc[i])
#define CK_CHI CK_CHI_PLAIN
#define CK_XOR5 CK_XOR5_PLAIN
#define T __m256i

static CK_NOINLINE CK_AVX2 void ck_permute_avx2(__m256i *s) {
    const __m256i rot8 = _mm256_setr_epi8(7, 0, 1, 2, 3, 4, 5, 6, 15, 8, 9, 10, 11, 12, 13, 14,
                                          7, 0, 1, 2, 3, 4, 5, 6, 15, 8, 9, 10, 11, 12, 13, 14);
    const __m256i rot56 = _mm256_setr_epi8(1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8,
                                           1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8);
    CK_PERMUTE_BODY(__m256i, CK_AVX2_RC);
}

/* Transpose four rows of four 64-bit values: row r of the result holds
 * element r of each input, so four orders' limbs become four lanes. */
#define CK_TRANSPOSE4(r0, r1, r2, r3)                          \
    do {                                                       \
        __m256i t0_ = _mm256_unpacklo_epi64(r0, r1);           \
        __m256i t1_ = _mm256_unpackhi_epi64(r0, r1);           \
        __m256i t2_ = _mm256_unpacklo_epi64(r2, r3);           \
        __m256i t3_ = _mm256_unpackhi_epi64(r2, r3);           \
        r0 = _mm256_permute2x128_si256(t0_, t2_, 0x20);        \
        r1 = _mm256_permute2x128_si256(t1_, t3_, 0x20);        \
        r2 = _mm256_permute2x128_si256(t0_, t2_, 0x31);        \
        r3 = _mm256_permute2x128_si256(t1_, t3_, 0x31);        \
    } while (0)

#define ZERO _mm256_setzero_si256()
#define SET1(c) _mm256_set1_epi64x((long long)(c))
#define CK_OR(a, b) _mm256_or_si256(a, b)
#define CK_SHL(a, n) _mm256_slli_epi64(a, n)
#define CK_SHR(a, n) _mm256_srli_epi64(a, n)
#define PERM(s) ck_permute_avx2(s)
/* Limb j of order k ends up in vector j, slot k; the stream wants the most
 * significant limb first, each byte-reversed. */
#define FIELD(name, v0, v1, v2, v3)                                           \
    do {                                                                      \
        __m256i q0_ = _mm256_loadu_si256((const __m256i *)o[0]->name.w);      \
        __m256i q1_ = _mm256_loadu_si256((const __m256i *)o[1]->name.w);      \
        __m256i q2_ = _mm256_loadu_si256((const __m256i *)o[2]->name.w);      \
        __m256i q3_ = _mm256_loadu_si256((const __m256i *)o[3]->name.w);      \
        CK_TRANSPOSE4(q0_, q1_, q2_, q3_);                                    \
        v0 = _mm256_shuffle_epi8(q3_, bswap);                                 \
        v1 = _mm256_shuffle_epi8(q2_, bswap);                                 \
        v2 = _mm256_shuffle_epi8(q1_, bswap);                                 \
        v3 = _mm256_shuffle_epi8(q0_, bswap);                                 \
    } while (0)
#define K(i) _mm256_set1_epi64x((long long)c->k[i])
#define SIDE                                                                               \
    _mm256_slli_epi64(_mm256_setr_epi64x(o[0]->side, o[1]->side, o[2]->side, o[3]->side), \
                      56)
#define DOM(i) dom[i]

/* Select the domain per order without branches: mask is all-ones where
 * neg_risk is set. */
#define CK_AVX2_DOMAINS(dom)                                                                \
    __m256i sel = _mm256_setr_epi64x(-(long long)(o[0]->neg_risk != 0),                     \
                                     -(long long)(o[1]->neg_risk != 0),                     \
                                     -(long long)(o[2]->neg_risk != 0),                     \
                                     -(long long)(o[3]->neg_risk != 0));                    \
    __m256i dom[5];                                                                         \
    for (int i = 0; i < 5; i++) {                                                           \
        __m256i d0 = _mm256_set1_epi64x((long long)c->dom[0][i]);                           \
        __m256i d1 = _mm256_set1_epi64x((long long)c->dom[1][i]);                           \
        dom[i] = _mm256_xor_si256(d0, _mm256_and_si256(sel, _mm256_xor_si256(d0, d1)));     \
    }

#define CK_AVX2_STORE(s)                                                                    \
    __m256i r0 = s[0], r1 = s[1], r2 = s[2], r3 = s[3];                                     \
    CK_TRANSPOSE4(r0, r1, r2, r3);                                                          \
    _mm256_storeu_si256((__m256i *)out[0], r0);                                             \
    _mm256_storeu_si256((__m256i *)out[1], r1);                                             \
    _mm256_storeu_si256((__m256i *)out[2], r2);                                             \
    _mm256_storeu_si256((__m256i *)out[3], r3)

#define CK_AVX2_BSWAP                                                                       \
    const __m256i bswap = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, \
                                           9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12,   \
                                           11, 10, 9, 8)

/* Four orders through one interleaved sponge. Pointers rather than an array
 * so a short tail can repeat an order and send its digest to scratch. */
static CK_AVX2 void ck_order1_ids_avx2_x4(const ck_consts *c, const ck_order *const o[4],
                                          uint8_t *const out[4]) {
    CK_AVX2_BSWAP;
    CK_AVX2_DOMAINS(dom);
    CK_ORDER_DIGEST_BODY(s);
    CK_AVX2_STORE(s);
}

static CK_AVX2 void ck_order2_ids_avx2_x4(const ck_consts *c, const ck_order *const o[4],
                                          uint8_t *const out[4]) {
    CK_AVX2_BSWAP;
    CK_AVX2_DOMAINS(dom);
    CK_ORDER2_DIGEST_BODY(s);
    CK_AVX2_STORE(s);
}

static CK_AVX2 void ck_order_ids_avx2_x4(const ck_consts *c, const ck_order *const o[4],
                                         uint8_t *const out[4]) {
    if (c->v2)
        ck_order2_ids_avx2_x4(c, o, out);
    else
        ck_order1_ids_avx2_x4(c, o, out);
}

static CK_AVX2 void ck_order_ids_avx2(const ck_consts *c, const ck_order *orders, size_t n,
                                      uint8_t (*out)[32]) {
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const ck_order *const o[4] = {&orders[i], &orders[i + 1], &orders[i + 2], &orders[i + 3]};
        uint8_t *const d[4] = {out[i], out[i + 1], out[i + 2], out[i + 3]};
        ck_order_ids_avx2_x4(c, o, d);
    }
    size_t rest = n - i;
    if (rest >= 2) {
        /* A padded four-wide pass beats two or three scalar ones. */
        uint8_t scratch[32];
        const ck_order *o[4];
        uint8_t *d[4];
        for (size_t k = 0; k < 4; k++) {
            o[k] = &orders[k < rest ? i + k : i];
            d[k] = k < rest ? out[i + k] : scratch;
        }
        ck_order_ids_avx2_x4(c, o, d);
    } else if (rest == 1) {
        ck_order_ids_scalar(c, orders + i, 1, out + i);
    }
}

#undef T
#undef ZERO
#undef SET1
#undef CK_OR
#undef CK_SHL
#undef CK_SHR
#undef PERM
#undef FIELD
#undef K
#undef SIDE
#undef DOM
#undef CK_AVX2_DOMAINS
#undef CK_AVX2_STORE
#undef CK_AVX2_BSWAP
#undef CK_XOR
#undef CK_ANDN
#undef CK_ROL
#undef CK_ROL1
#undef CK_CHI
#undef CK_XOR5
#endif /* CK_HAVE_X86_SIMD */

/* ======================= AVX-512 path: eight orders per vector ======================= */

#if CK_HAVE_AVX512
/* vprolq rotates in one uop; vpternlogq does a three-input xor (0x96) and
 * all of chi's a ^ (~b & c) (0xd2) in one. */
#define T ck_m512i
#define CK_XOR(a, b) CK_MM512(xor_si512)(a, b)
#define CK_XOR5(a, b, c, d, e) \
    CK_MM512(ternarylogic_epi64)(CK_MM512(ternarylogic_epi64)(a, b, c, 0x96), d, e, 0x96)
#define CK_ROL(a, n) CK_MM512(rol_epi64)(a, n)
#define CK_ROL1(a) CK_MM512(rol_epi64)(a, 1)
#define CK_CHI(E, y)                                            \
    E##y##a = CK_MM512(ternarylogic_epi64)(B0, B1, B2, 0xd2);   \
    E##y##e = CK_MM512(ternarylogic_epi64)(B1, B2, B3, 0xd2);   \
    E##y##i = CK_MM512(ternarylogic_epi64)(B2, B3, B4, 0xd2);   \
    E##y##o = CK_MM512(ternarylogic_epi64)(B3, B4, B0, 0xd2);   \
    E##y##u = CK_MM512(ternarylogic_epi64)(B4, B0, B1, 0xd2)
#define CK_AVX512_RC(i) CK_MM512(set1_epi64)((long long)ck_rc[i])

static CK_NOINLINE CK_AVX512 void ck_permute_avx512(ck_m512i *s) {
    CK_PERMUTE_BODY(ck_m512i, CK_AVX512_RC);
}

#define ZERO CK_MM512(setzero_si512)()
#define SET1(c) CK_MM512(set1_epi64)((long long)(c))
#define CK_OR(a, b) CK_MM512(or_si512)(a, b)
#define CK_SHL(a, n) CK_MM512(slli_epi64)(a, n)
#define CK_SHR(a, n) CK_MM512(srli_epi64)(a, n)
#define PERM(s) ck_permute_avx512(s)
/* Scalar loads into a set: AVX-512F alone has no byte shuffle for the
 * byte swap, and the gather is a few percent of the permutations anyway. */
#define CK_GATHER8(name, j)                                                        \
    CK_MM512(set_epi64)((long long)ck_bswap64(o[7].name.w[j]),                    \
                        (long long)ck_bswap64(o[6].name.w[j]),                    \
                        (long long)ck_bswap64(o[5].name.w[j]),                    \
                        (long long)ck_bswap64(o[4].name.w[j]),                    \
                        (long long)ck_bswap64(o[3].name.w[j]),                    \
                        (long long)ck_bswap64(o[2].name.w[j]),                    \
                        (long long)ck_bswap64(o[1].name.w[j]),                    \
                        (long long)ck_bswap64(o[0].name.w[j]))
#define FIELD(name, v0, v1, v2, v3) \
    (v0 = CK_GATHER8(name, 3), v1 = CK_GATHER8(name, 2), v2 = CK_GATHER8(name, 1), v3 = CK_GATHER8(name, 0))
#define K(i) CK_MM512(set1_epi64)((long long)c->k[i])
#define SIDE                                                                      \
    CK_MM512(slli_epi64)(CK_MM512(set_epi64)(o[7].side, o[6].side, o[5].side, o[4].side, \
                                             o[3].side, o[2].side, o[1].side, o[0].side), \
                         56)
#define DOM(i) dom[i]

#define CK_AVX512_DOMAINS(dom)                                                              \
    unsigned sel = 0;                                                                       \
    ck_m512i dom[5];                                                                        \
    for (int k = 0; k < 8; k++) sel |= (unsigned)(o[k].neg_risk != 0) << k;                 \
    for (int i = 0; i < 5; i++)                                                             \
        dom[i] = CK_MM512(mask_blend_epi64)((__mmask8)sel, SET1(c->dom[0][i]), SET1(c->dom[1][i]))

#define CK_AVX512_STORE(s)                                                                  \
    uint64_t lanes[4][8];                                                                   \
    for (int j = 0; j < 4; j++) CK_MM512(storeu_si512)(lanes[j], s[j]);                     \
    for (int k = 0; k < 8; k++)                                                             \
        for (int j = 0; j < 4; j++) ck_store_le64(out[k] + 8 * j, lanes[j][k])

static CK_AVX512 void ck_order1_ids_avx512_x8(const ck_consts *c, const ck_order *o,
                                              uint8_t (*out)[32]) {
    CK_AVX512_DOMAINS(dom);
    CK_ORDER_DIGEST_BODY(s);
    CK_AVX512_STORE(s);
}

static CK_AVX512 void ck_order2_ids_avx512_x8(const ck_consts *c, const ck_order *o,
                                              uint8_t (*out)[32]) {
    CK_AVX512_DOMAINS(dom);
    CK_ORDER2_DIGEST_BODY(s);
    CK_AVX512_STORE(s);
}

static CK_AVX512 void ck_order_ids_avx512(const ck_consts *c, const ck_order *orders, size_t n,
                                          uint8_t (*out)[32]) {
    size_t i = 0;
    if (c->v2)
        for (; i + 8 <= n; i += 8) ck_order2_ids_avx512_x8(c, orders + i, out + i);
    else
        for (; i + 8 <= n; i += 8) ck_order1_ids_avx512_x8(c, orders + i, out + i);
    /* Every AVX-512 CPU has AVX2, whose four-wide pass and tail handling fit
     * the last zero to seven orders. */
    if (i < n) ck_order_ids_avx2(c, orders + i, n - i, out + i);
}

#undef T
#undef ZERO
#undef SET1
#undef CK_OR
#undef CK_SHL
#undef CK_SHR
#undef PERM
#undef FIELD
#undef K
#undef SIDE
#undef DOM
#undef CK_AVX512_DOMAINS
#undef CK_AVX512_STORE
#undef CK_XOR
#undef CK_XOR5
#undef CK_ROL
#undef CK_ROL1
#undef CK_CHI
#endif /* CK_HAVE_AVX512 */

/* ======================= dispatch ======================= */

/* 0 until first resolved; afterwards one of the CK_IMPL_* paths. Racing
 * first calls all compute the same value, so relaxed access suffices. */
static int ck_impl_choice;

#if defined(__GNUC__)
#define CK_LOAD_IMPL() __atomic_load_n(&ck_impl_choice, __ATOMIC_RELAXED)
#define CK_STORE_IMPL(v) __atomic_store_n(&ck_impl_choice, (v), __ATOMIC_RELAXED)
#else
#define CK_LOAD_IMPL() (ck_impl_choice)
#define CK_STORE_IMPL(v) (ck_impl_choice = (v))
#endif

static int ck_supported(int impl) {
    switch (impl) {
    case CK_IMPL_PORTABLE:
        return 1;
#if CK_HAVE_X86_SIMD
    case CK_IMPL_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2");
#endif
#if CK_HAVE_AVX512 && defined(CK_TEST_SIMDE_AVX512)
    case CK_IMPL_AVX512: /* emulated, so runnable anywhere the AVX2 tail is */
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2");
#elif CK_HAVE_AVX512
    case CK_IMPL_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2");
#endif
    default:
        return 0;
    }
}

static int ck_best_impl(void) {
#if !defined(CK_TEST_SIMDE_AVX512) /* never pick the slow emulation on its own */
    if (ck_supported(CK_IMPL_AVX512)) return CK_IMPL_AVX512;
#endif
    return ck_supported(CK_IMPL_AVX2) ? CK_IMPL_AVX2 : CK_IMPL_PORTABLE;
}

int ck_keccak_set_impl(int impl) {
    if (impl == CK_IMPL_AUTO) impl = ck_best_impl();
    if (!ck_supported(impl)) return -1;
    CK_STORE_IMPL(impl);
    return 0;
}

int ck_keccak_impl(void) {
    int impl = CK_LOAD_IMPL();
    if (impl == CK_IMPL_AUTO) {
        impl = ck_best_impl();
        CK_STORE_IMPL(impl);
    }
    return impl;
}

void ck_order_ids(const ck_order_ctx *ctx, const ck_order *orders, size_t n, uint8_t (*out)[32]) {
    ck_consts c;
    if (n == 0) return;
    ck_make_consts(ctx, &c);
    switch (ck_keccak_impl()) {
#if CK_HAVE_X86_SIMD
    case CK_IMPL_AVX2:
        ck_order_ids_avx2(&c, orders, n, out);
        return;
#endif
#if CK_HAVE_AVX512
    case CK_IMPL_AVX512:
        ck_order_ids_avx512(&c, orders, n, out);
        return;
#endif
    default:
        ck_order_ids_scalar(&c, orders, n, out);
        return;
    }
}

/* ======================= the struct hash alone ======================= */

static void ck_put_word(uint8_t *p, const ck_u256 *v) {
    for (int i = 0; i < 32; i++) p[i] = (uint8_t)(v->w[3 - i / 8] >> (56 - 8 * (i % 8)));
}

void ck_order_struct_hash(const ck_order_ctx *ctx, const ck_order *o, uint8_t out[32]) {
    uint8_t m[13 * 32];
    uint8_t *p = m;
    memcpy(p, ctx->typehash, 32), p += 32;
    ck_put_word(p, &o->salt), p += 32;
    memcpy(p, ctx->maker, 32), p += 32;
    memcpy(p, ctx->signer, 32), p += 32;
    if (ctx->layout != CK_LAYOUT_V2) memcpy(p, ctx->taker, 32), p += 32;
    ck_put_word(p, &o->token_id), p += 32;
    ck_put_word(p, &o->maker_amount), p += 32;
    ck_put_word(p, &o->taker_amount), p += 32;
    if (ctx->layout != CK_LAYOUT_V2) {
        ck_put_word(p, &o->expiration), p += 32;
        ck_put_word(p, &o->nonce), p += 32;
        ck_put_word(p, &o->fee_rate_bps), p += 32;
    }
    memset(p, 0, 32), p[31] = o->side, p += 32;
    memcpy(p, ctx->signature_type, 32), p += 32;
    if (ctx->layout == CK_LAYOUT_V2) {
        ck_put_word(p, &o->timestamp), p += 32;
        ck_put_word(p, &o->metadata), p += 32;
        ck_put_word(p, &o->builder), p += 32;
    }
    ck_keccak256(m, (size_t)(p - m), out);
}
