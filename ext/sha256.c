/* SHA-256 / HMAC-SHA256 for clobkit request signing (see sha256.h).
 *
 * Two compression back ends with one signature, blocks(h, data, nblocks):
 *   - portable C99: fully unrolled rounds, schedule kept in a 16-word ring;
 *   - x86 SHA-NI: compiled with a per-function target attribute, so this file
 *     needs no global -m flags and the binary still runs on CPUs without SHA.
 * The only global mutable state is the chosen back end (g_blocks). It starts
 * at a resolver that detects the CPU on first use, so plain callers never have
 * to initialise anything; set_impl overrides it for tests and benchmarks.
 */
#include "sha256.h"

#include <string.h>

/* SHA-NI needs GCC >= 5 or clang (target attributes + intrinsics in one TU).
 * MSVC and non-x86 builds get the portable path only. Define
 * CK_SHA256_NO_SHANI to force a portable-only build (used by the tests). */
#if !defined(CK_SHA256_NO_SHANI) && (defined(__x86_64__) || defined(__i386__)) && \
    (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 5))
#define CK_HAVE_SHANI 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define CK_HAVE_SHANI 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define CK_ALIGN16 __attribute__((aligned(16))) /* lets SHA-NI load K aligned */
/* Relaxed atomics: free on x86/ARM, and keep set_impl racing with hashing in
 * another thread well defined (the pointer is always a valid back end). */
#define CK_LOAD(p) __atomic_load_n(&(p), __ATOMIC_RELAXED)
#define CK_STORE(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELAXED)
#else
#define CK_ALIGN16
#define CK_LOAD(p) (p)
#define CK_STORE(p, v) ((p) = (v))
#endif

static const uint32_t K[64] CK_ALIGN16 = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static const uint32_t IV[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

/* Big-endian access. With GCC/clang use memcpy + bswap explicitly: left to
 * itself GCC's SLP vectoriser turns a byte-wise store loop into a long
 * shuffle sequence (seen with gcc 12 -O3 on put_digest). */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline uint32_t load_be32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return __builtin_bswap32(v);
}
static inline void store_be32(uint8_t *p, uint32_t v) {
    v = __builtin_bswap32(v);
    memcpy(p, &v, 4);
}
#else
static inline uint32_t load_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void store_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
#endif

/* ---------------------------------------------------------------- portable */

#define ROR(x, n) ((x) >> (n) | (x) << (32 - (n)))
/* Nested forms of the sigma functions: same rotations, but each feeds the
 * next, so x86 (two-operand ror) needs one register copy instead of three.
 * The portable path is throughput-bound, so fewer uops beat a shorter chain. */
#define BS0(x) ROR((x) ^ ROR((x) ^ ROR(x, 9), 11), 2)   /* ror 2 ^ ror 13 ^ ror 22 */
#define BS1(x) ROR((x) ^ ROR((x) ^ ROR(x, 14), 5), 6)  /* ror 6 ^ ror 11 ^ ror 25 */
#define SS0(x) (ROR((x) ^ ROR(x, 11), 7) ^ ((x) >> 3))  /* ror 7 ^ ror 18 ^ shr 3 */
#define SS1(x) (ROR((x) ^ ROR(x, 2), 17) ^ ((x) >> 10)) /* ror 17 ^ ror 19 ^ shr 10 */
#define CH(e, f, g) ((g) ^ ((e) & ((f) ^ (g))))  /* 3 ops instead of 4 */

/* One round. Variables rotate through the argument order instead of being
 * moved, so the unrolled code has no register shuffling at all.
 * Maj(a,b,c) = b ^ ((a^b) & (b^c)), and this round's a^b is the next round's
 * b^c, carried in `bc`: 3 ops per round instead of 4. */
#define RND(a, b, c, d, e, f, g, h, i, w)                     \
    do {                                                      \
        uint32_t t1_ = h + BS1(e) + CH(e, f, g) + K[i] + (w); \
        uint32_t ab_ = a ^ b;                                 \
        d += t1_;                                             \
        h = t1_ + BS0(a) + (b ^ (ab_ & bc));                  \
        bc = ab_;                                             \
    } while (0)

/* Rounds 0..15 read the block; later rounds extend the schedule in place in
 * the 16-word ring (W[i&15] is W[i-16] until overwritten). */
#define WLOAD(i) (W[i] = load_be32(p + 4 * (i)))
#define WNEXT(i)                                                              \
    (W[(i) & 15] += SS1(W[((i) - 2) & 15]) + W[((i) - 7) & 15] + SS0(W[((i) - 15) & 15]))

#define RND8(i, WX)                                   \
    RND(a, b, c, d, e, f, g, h, (i) + 0, WX((i) + 0)); \
    RND(h, a, b, c, d, e, f, g, (i) + 1, WX((i) + 1)); \
    RND(g, h, a, b, c, d, e, f, (i) + 2, WX((i) + 2)); \
    RND(f, g, h, a, b, c, d, e, (i) + 3, WX((i) + 3)); \
    RND(e, f, g, h, a, b, c, d, (i) + 4, WX((i) + 4)); \
    RND(d, e, f, g, h, a, b, c, (i) + 5, WX((i) + 5)); \
    RND(c, d, e, f, g, h, a, b, (i) + 6, WX((i) + 6)); \
    RND(b, c, d, e, f, g, h, a, (i) + 7, WX((i) + 7))

static void blocks_portable(uint32_t st[8], const uint8_t *p, size_t n) {
    uint32_t W[16];
    uint32_t a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
    for (; n; n--, p += 64) {
        uint32_t bc = b ^ c;
        RND8(0, WLOAD);  RND8(8, WLOAD);
        RND8(16, WNEXT); RND8(24, WNEXT); RND8(32, WNEXT);
        RND8(40, WNEXT); RND8(48, WNEXT); RND8(56, WNEXT);
        a = st[0] += a; b = st[1] += b; c = st[2] += c; d = st[3] += d;
        e = st[4] += e; f = st[5] += f; g = st[6] += g; h = st[7] += h;
    }
}

/* ------------------------------------------------------------------ SHA-NI */
#if CK_HAVE_SHANI

/* sha256rnds2 works on the state split as ABEF / CDGH and does two rounds per
 * instruction, taking W+K for those rounds in the low 64 bits of its third
 * operand; four rounds are therefore two rnds2 with the halves swapped. */
#define NI_R4(m, i)                                                            \
    do {                                                                       \
        __m128i wk_ = _mm_add_epi32(m, _mm_load_si128((const __m128i *)(K + (i)))); \
        s1 = _mm_sha256rnds2_epu32(s1, s0, wk_);                               \
        s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(wk_, 0x0E));      \
    } while (0)

/* W[i..i+3] from the four previous words-quads m0..m3 (oldest first), written
 * over m0: msg1 adds sigma0 terms, alignr supplies W[i-7..i-4], msg2 adds the
 * sigma1 terms (which depend on the new words themselves, hence its own op). */
#define NI_SCHED(m0, m1, m2, m3) \
    (m0 = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(m0, m1), _mm_alignr_epi8(m3, m2, 4)), m3))

/* The 64 rounds of a block, for one lane or two: R4(j, i) runs rounds
 * i..i+3 on message quad j (0..3); SCHED(j0, j1, j2, j3) computes the next
 * quad over j0 from the four before it, oldest first. */
#define NI_BLOCK(R4, SCHED)                                     \
    do {                                                        \
        R4(0, 0); R4(1, 4); R4(2, 8); R4(3, 12);                \
        SCHED(0, 1, 2, 3); R4(0, 16); SCHED(1, 2, 3, 0); R4(1, 20); \
        SCHED(2, 3, 0, 1); R4(2, 24); SCHED(3, 0, 1, 2); R4(3, 28); \
        SCHED(0, 1, 2, 3); R4(0, 32); SCHED(1, 2, 3, 0); R4(1, 36); \
        SCHED(2, 3, 0, 1); R4(2, 40); SCHED(3, 0, 1, 2); R4(3, 44); \
        SCHED(0, 1, 2, 3); R4(0, 48); SCHED(1, 2, 3, 0); R4(1, 52); \
        SCHED(2, 3, 0, 1); R4(2, 56); SCHED(3, 0, 1, 2); R4(3, 60); \
    } while (0)
#define NI1_R4(j, i) NI_R4(m##j, i)
#define NI1_SCHED(j0, j1, j2, j3) NI_SCHED(m##j0, m##j1, m##j2, m##j3)

#define NI_TARGET __attribute__((target("sha,sse4.1")))

/* Message words i*4 .. i*4+3 of the block at p, in the CPU's word order. */
#define NI_WORDS(p, i)                                                    \
    _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)((p) + 16 * (i))), \
                     _mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3))

/* A..H to the ABEF / CDGH register pair sha256rnds2 works on, and back. */
NI_TARGET static inline void ni_load(const uint32_t st[8], __m128i *s0, __m128i *s1) {
    __m128i abcd = _mm_loadu_si128((const __m128i *)st);        /* lanes A B C D */
    __m128i efgh = _mm_loadu_si128((const __m128i *)(st + 4));  /* lanes E F G H */
    __m128i t = _mm_shuffle_epi32(abcd, 0xB1);                  /* B A D C */
    efgh = _mm_shuffle_epi32(efgh, 0x1B);                       /* H G F E */
    *s0 = _mm_alignr_epi8(t, efgh, 8);                          /* F E B A = "ABEF" */
    *s1 = _mm_blend_epi16(efgh, t, 0xF0);                       /* H G D C = "CDGH" */
}

NI_TARGET static inline void ni_store(uint32_t st[8], __m128i s0, __m128i s1) {
    __m128i t = _mm_shuffle_epi32(s0, 0x1B);                    /* A B E F */
    s1 = _mm_shuffle_epi32(s1, 0xB1);                           /* G H C D */
    _mm_storeu_si128((__m128i *)st, _mm_blend_epi16(t, s1, 0xF0));         /* A B C D */
    _mm_storeu_si128((__m128i *)(st + 4), _mm_alignr_epi8(s1, t, 8));      /* E F G H */
}

NI_TARGET
static void blocks_shani(uint32_t st[8], const uint8_t *p, size_t n) {
    __m128i s0, s1;
    ni_load(st, &s0, &s1);
    for (; n; n--, p += 64) {
        const __m128i save0 = s0, save1 = s1;
        __m128i m0 = NI_WORDS(p, 0), m1 = NI_WORDS(p, 1), m2 = NI_WORDS(p, 2), m3 = NI_WORDS(p, 3);
        /* Straight-line: the rnds2 chain (latency-bound) sets the pace, and
         * the out-of-order core overlaps the schedule ops with it. */
        NI_BLOCK(NI1_R4, NI1_SCHED);
        s0 = _mm_add_epi32(s0, save0);
        s1 = _mm_add_epi32(s1, save1);
    }
    ni_store(st, s0, s1);
}

static int cpu_has_shani(void) {
    unsigned a, b, c, d;
    /* __get_cpuid_max/__cpuid_count are in every GCC/clang <cpuid.h>, while
     * __get_cpuid_count and __builtin_cpu_supports("sha") are missing from
     * older compilers (gcc 12 has both; we need neither). */
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid(1, a, b, c, d);
    if (!(c & (1u << 19)) || !(c & (1u << 9))) return 0;  /* SSE4.1, SSSE3 */
    __cpuid_count(7, 0, a, b, c, d);
    return (b >> 29) & 1;                                   /* SHA */
}
#endif /* CK_HAVE_SHANI */

/* ---------------------------------------------------------------- dispatch */

typedef void (*blocks_fn)(uint32_t st[8], const uint8_t *p, size_t n);

static blocks_fn best_impl(void) {
#if CK_HAVE_SHANI
    if (cpu_has_shani()) return blocks_shani;
#endif
    return blocks_portable;
}

static void blocks_resolve(uint32_t st[8], const uint8_t *p, size_t n);
static blocks_fn g_blocks = blocks_resolve;

/* First call detects and installs the best back end; racing first calls all
 * store the same value. */
static void blocks_resolve(uint32_t st[8], const uint8_t *p, size_t n) {
    blocks_fn fn = best_impl();
    CK_STORE(g_blocks, fn);
    fn(st, p, n);
}

static inline void blocks(uint32_t st[8], const uint8_t *p, size_t n) {
    CK_LOAD(g_blocks)(st, p, n);
}

#if CK_HAVE_SHANI
/* The back end in use, resolved now if nothing has hashed yet. */
static blocks_fn current_blocks(void) {
    blocks_fn fn = CK_LOAD(g_blocks);
    if (fn == blocks_resolve) CK_STORE(g_blocks, fn = best_impl());
    return fn;
}
#endif

int ck_sha256_set_impl(int impl) {
    blocks_fn fn;
    switch (impl) {
    case CK_SHA_AUTO: fn = best_impl(); break;
    case CK_SHA_PORTABLE: fn = blocks_portable; break;
#if CK_HAVE_SHANI
    case CK_SHA_NI:
        if (!cpu_has_shani()) return -1;
        fn = blocks_shani;
        break;
#endif
    default: return -1;
    }
    CK_STORE(g_blocks, fn);
    return 0;
}

int ck_sha256_impl(void) {
#if CK_HAVE_SHANI
    if (current_blocks() == blocks_shani) return CK_SHA_NI;
#endif
    return CK_SHA_PORTABLE;
}

/* ----------------------------------------------------------------- hashing */

/* Copy n <= 64 bytes with a few fixed-size (overlapping) moves: for the short
 * pieces of a signing string this beats a call into libc memcpy, whose call
 * and size dispatch cost more than the copy itself. */
static inline void copy_small(uint8_t *d, const uint8_t *s, size_t n) {
    if (n >= 16) {
        if (n >= 32) memcpy(d + 16, s + 16, 16), memcpy(d + n - 32, s + n - 32, 16);
        memcpy(d, s, 16);
        memcpy(d + n - 16, s + n - 16, 16);
    } else if (n >= 8) {
        memcpy(d, s, 8);
        memcpy(d + n - 8, s + n - 8, 8);
    } else if (n >= 4) {
        memcpy(d, s, 4);
        memcpy(d + n - 4, s + n - 4, 4);
    } else if (n) {
        d[0] = s[0];  /* n = 1..3: first, middle and last cover it */
        d[n >> 1] = s[n >> 1];
        d[n - 1] = s[n - 1];
    }
}

/* The last rem (< 64) bytes at p of a message of `total` bytes, padded into
 * blk: returns the number of final blocks, 1 or 2. */
static size_t pad(uint8_t blk[128], const uint8_t *p, size_t rem, uint64_t total) {
    size_t nb = rem < 56 ? 1 : 2;
    /* zero whole blocks first: fixed-size stores instead of a libc memset call */
    memset(blk, 0, 64);
    if (nb == 2) memset(blk + 64, 0, 64);
    copy_small(blk, p, rem);
    blk[rem] = 0x80;
    total <<= 3;  /* bit length, big-endian in the last 8 bytes */
    store_be32(blk + nb * 64 - 8, (uint32_t)(total >> 32));
    store_be32(blk + nb * 64 - 4, (uint32_t)total);
    return nb;
}

/* Pad and compress the final 1 or 2 blocks in one blocks() call. */
static void finish(uint32_t st[8], const uint8_t *p, size_t rem, uint64_t total) {
    uint8_t blk[128];
    blocks(st, blk, pad(blk, p, rem, total));
}

static void put_digest(const uint32_t st[8], uint8_t out[32]) {
    int i;
    for (i = 0; i < 8; i++) store_be32(out + 4 * i, st[i]);
}

void ck_sha256_init(ck_sha256_ctx *ctx) {
    memcpy(ctx->h, IV, sizeof IV);
    ctx->total = 0;
    ctx->buflen = 0;
}

void ck_sha256_update(ck_sha256_ctx *ctx, const uint8_t *data, size_t len) {
    size_t used = ctx->buflen, n;
    ctx->total += len;
    /* Short piece that still leaves the block incomplete: just buffer it. */
    if (len < 64 - used) {
        copy_small(ctx->buf + used, data, len);
        ctx->buflen = used + len;
        return;
    }
    if (used) {
        size_t fill = 64 - used;
        copy_small(ctx->buf + used, data, fill);
        blocks(ctx->h, ctx->buf, 1);
        data += fill;
        len -= fill;
    }
    /* Whole blocks straight from the caller's memory, in one call. */
    n = len >> 6;
    if (n) {
        blocks(ctx->h, data, n);
        data += n << 6;
        len &= 63;
    }
    copy_small(ctx->buf, data, len);
    ctx->buflen = len;
}

void ck_sha256_final(ck_sha256_ctx *ctx, uint8_t out[32]) {
    finish(ctx->h, ctx->buf, ctx->buflen, ctx->total);
    put_digest(ctx->h, out);
}

void ck_sha256(const uint8_t *in, size_t len, uint8_t out[32]) {
    uint32_t st[8];
    size_t n = len >> 6;
    memcpy(st, IV, sizeof IV);
    if (n) blocks(st, in, n), in += n << 6;  /* (in may be NULL when len == 0) */
    finish(st, in, len & 63, len);
    put_digest(st, out);
}

/* ------------------------------------------------------ two messages at once */

/* One SHA-NI message is a single dependency chain of sha256rnds2, each waiting
 * for the one before, so the unit idles most cycles. Two independent messages
 * interleaved fill those cycles: on Zen 3 a block then costs 21.7 ns instead
 * of 42 (three or four messages gain nothing more: the SHA unit is then busy).
 * A lane is one message in flight: its whole blocks read in place, then its
 * padded tail. */
typedef struct {
    uint32_t h[8];
    const uint8_t *p;   /* whole blocks, read in place */
    size_t n;           /* how many */
    size_t ntail;       /* padded final blocks in tail: 1 or 2 */
    uint8_t tail[128];
} lane;

/* A lane for len bytes at m, continuing from state h after `prefix` bytes. */
static void lane_start(lane *l, const uint32_t h[8], const uint8_t *m, size_t len, uint64_t prefix) {
    size_t whole = len & ~(size_t)63;
    memcpy(l->h, h, sizeof l->h);
    l->p = m;
    l->n = len >> 6;
    /* (m may be NULL when len == 0, and NULL + 0 is undefined in C) */
    l->ntail = pad(l->tail, whole ? m + whole : m, len & 63, prefix + len);
}

static inline const uint8_t *lane_block(const lane *l, size_t i) {
    return i < l->n ? l->p + 64 * i : l->tail + 64 * (i - l->n);
}

/* Compress a lane's blocks from the i-th on, one message at a time. */
static void lane_from(lane *l, size_t i) {
    if (i < l->n) blocks(l->h, l->p + 64 * i, l->n - i), i = l->n;
    if (i < l->n + l->ntail) blocks(l->h, l->tail + 64 * (i - l->n), l->n + l->ntail - i);
}

#if CK_HAVE_SHANI
/* NI_R4 and NI_SCHED for both lanes, their message words in ma0..3 / mb0..3. */
#define NI2_R4(j, i)                                                                   \
    do {                                                                               \
        const __m128i k_ = _mm_load_si128((const __m128i *)(K + (i)));                 \
        const __m128i wa_ = _mm_add_epi32(ma##j, k_), wb_ = _mm_add_epi32(mb##j, k_);  \
        a1 = _mm_sha256rnds2_epu32(a1, a0, wa_);                                       \
        b1 = _mm_sha256rnds2_epu32(b1, b0, wb_);                                       \
        a0 = _mm_sha256rnds2_epu32(a0, a1, _mm_shuffle_epi32(wa_, 0x0E));              \
        b0 = _mm_sha256rnds2_epu32(b0, b1, _mm_shuffle_epi32(wb_, 0x0E));              \
    } while (0)
#define NI2_SCHED(j0, j1, j2, j3) \
    (NI_SCHED(ma##j0, ma##j1, ma##j2, ma##j3), NI_SCHED(mb##j0, mb##j1, mb##j2, mb##j3))

NI_TARGET static void lanes2_shani(lane *a, lane *b) {
    const size_t na = a->n + a->ntail, nb = b->n + b->ntail, both = na < nb ? na : nb;
    size_t i;
    __m128i a0, a1, b0, b1;
    ni_load(a->h, &a0, &a1);
    ni_load(b->h, &b0, &b1);
    for (i = 0; i < both; i++) {
        const uint8_t *pa = lane_block(a, i), *pb = lane_block(b, i);
        const __m128i sa0 = a0, sa1 = a1, sb0 = b0, sb1 = b1;
        __m128i ma0 = NI_WORDS(pa, 0), ma1 = NI_WORDS(pa, 1), ma2 = NI_WORDS(pa, 2), ma3 = NI_WORDS(pa, 3);
        __m128i mb0 = NI_WORDS(pb, 0), mb1 = NI_WORDS(pb, 1), mb2 = NI_WORDS(pb, 2), mb3 = NI_WORDS(pb, 3);
        NI_BLOCK(NI2_R4, NI2_SCHED);
        a0 = _mm_add_epi32(a0, sa0); a1 = _mm_add_epi32(a1, sa1);
        b0 = _mm_add_epi32(b0, sb0); b1 = _mm_add_epi32(b1, sb1);
    }
    ni_store(a->h, a0, a1);
    ni_store(b->h, b0, b1);
    lane_from(a, both);  /* the longer message's remaining blocks */
    lane_from(b, both);
}
#endif

/* Compress both lanes whole: interleaved on SHA-NI, one after the other on
 * the portable path (already throughput-bound, nothing to gain). */
static void lanes2(lane *a, lane *b) {
#if CK_HAVE_SHANI
    if (current_blocks() == blocks_shani) {
        lanes2_shani(a, b);
        return;
    }
#endif
    lane_from(a, 0);
    lane_from(b, 0);
}

/* a and b from state h after `prefix` bytes, two at a time, to digests. */
static void hash2(const uint32_t h[8], uint64_t prefix, const uint8_t *a, size_t alen, const uint8_t *b,
                  size_t blen, uint8_t outa[32], uint8_t outb[32]) {
    lane la, lb;
    lane_start(&la, h, a, alen, prefix);
    lane_start(&lb, h, b, blen, prefix);
    lanes2(&la, &lb);
    put_digest(la.h, outa);
    put_digest(lb.h, outb);
}

void ck_sha256_x2(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, uint8_t outa[32],
                  uint8_t outb[32]) {
    hash2(IV, 0, a, alen, b, blen, outa, outb);
}

/* ------------------------------------------------------------------- HMAC */

/* Clear key-derived stack bytes; volatile so the stores are not elided. */
static void wipe(void *p, size_t n) {
    volatile uint8_t *v = (volatile uint8_t *)p;
    while (n--) *v++ = 0;
}

void ck_hmac_sha256_init(ck_hmac_key *key, const uint8_t *secret, size_t len) {
    uint8_t k[64];
    size_t i;
    memset(k, 0, sizeof k);
    if (len > 64) ck_sha256(secret, len, k);  /* RFC 2104: long keys are hashed */
    else if (len) memcpy(k, secret, len);
    for (i = 0; i < 64; i++) k[i] ^= 0x36;
    memcpy(key->inner, IV, sizeof IV);
    blocks(key->inner, k, 1);
    for (i = 0; i < 64; i++) k[i] ^= 0x36 ^ 0x5c;
    memcpy(key->outer, IV, sizeof IV);
    blocks(key->outer, k, 1);
    wipe(k, sizeof k);
}

void ck_hmac_sha256_begin(const ck_hmac_key *key, ck_sha256_ctx *ctx) {
    memcpy(ctx->h, key->inner, sizeof ctx->h);
    ctx->total = 64;  /* the ipad block counts towards the padded length */
    ctx->buflen = 0;
}

/* Outer hash: H((K^opad) || inner digest), the opad block already absorbed.
 * The one remaining block is the digest words plus fixed padding for a
 * 96-byte message (bit length 768 = 0x300). */
static void hmac_outer(const ck_hmac_key *key, const uint32_t inner[8], uint8_t out[32]) {
    static const uint8_t tail[32] = {0x80, [30] = 0x03};
    uint8_t blk[64];
    uint32_t st[8];
    memcpy(st, key->outer, sizeof st);
    put_digest(inner, blk);
    memcpy(blk + 32, tail, 32);
    blocks(st, blk, 1);
    put_digest(st, out);
}

void ck_hmac_sha256_end(const ck_hmac_key *key, ck_sha256_ctx *ctx, uint8_t out[32]) {
    finish(ctx->h, ctx->buf, ctx->buflen, ctx->total);
    hmac_outer(key, ctx->h, out);
}

void ck_hmac_sha256_x2(const ck_hmac_key *key, const uint8_t *a, size_t alen, const uint8_t *b,
                       size_t blen, uint8_t outa[32], uint8_t outb[32]) {
    uint8_t da[32], db[32];
    hash2(key->inner, 64, a, alen, b, blen, da, db);
    hash2(key->outer, 64, da, 32, db, 32, outa, outb);  /* the outer hash: one block each */
}

void ck_hmac_sha256(const ck_hmac_key *key, const uint8_t *msg, size_t len, uint8_t out[32]) {
    uint32_t st[8];
    size_t n = len >> 6;
    memcpy(st, key->inner, sizeof st);
    if (n) blocks(st, msg, n), msg += n << 6;
    finish(st, msg, len & 63, 64 + (uint64_t)len);
    hmac_outer(key, st, out);
}
