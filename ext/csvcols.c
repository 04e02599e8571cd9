/* See csvcols.h. */
#include "csvcols.h"

#include <string.h>

#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <emmintrin.h>
#define CK_CSV_SSE2 1
#endif

#if defined(_MSC_VER)
#include <intrin.h>
static inline int lowest_bit(uint64_t x) {
    unsigned long i;
    _BitScanForward64(&i, x);
    return (int)i;
}
#else
static inline int lowest_bit(uint64_t x) { return __builtin_ctzll(x); }
#endif

#if (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) || \
    defined(_M_X64) || defined(_M_ARM64) || defined(_M_IX86)
#define CK_CSV_LITTLE 1
#endif

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* The high bit of each byte of the 8 in x that is b; exact up to the first
 * such byte (a borrow may mark bytes after it): its lowest set bit is exact. */
static inline uint64_t bytes_of(uint64_t x, uint8_t b) {
    uint64_t v = x ^ (ONES * b);
    return (v - ONES) & ~v & HIGHS;
}

static inline uint64_t load8(const uint8_t *p) {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

/* The first byte at or after p (before end) that is one of a, b, c, d (d may
 * repeat one of the others), or end: 16 bytes at a time with SSE2, 8 with
 * words on other little-endian hosts, else a byte at a time. */
static inline const uint8_t *find4(const uint8_t *p, const uint8_t *end, uint8_t a, uint8_t b,
                                   uint8_t c, uint8_t d) {
#if defined(CK_CSV_SSE2)
    const __m128i va = _mm_set1_epi8((char)a), vb = _mm_set1_epi8((char)b),
                  vc = _mm_set1_epi8((char)c), vd = _mm_set1_epi8((char)d);
    while (end - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)p);
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, va), _mm_cmpeq_epi8(x, vb)),
                                   _mm_or_si128(_mm_cmpeq_epi8(x, vc), _mm_cmpeq_epi8(x, vd)));
        unsigned mask = (unsigned)_mm_movemask_epi8(hit);
        if (mask) return p + lowest_bit(mask);
        p += 16;
    }
#elif defined(CK_CSV_LITTLE)
    while (end - p >= 8) {
        uint64_t x = load8(p);
        uint64_t hit = bytes_of(x, a) | bytes_of(x, b) | bytes_of(x, c) | bytes_of(x, d);
        if (hit) return p + lowest_bit(hit) / 8;
        p += 8;
    }
#endif
    while (p < end && *p != a && *p != b && *p != c && *p != d) p++;
    return p;
}

/* Whether every byte of buf[0 .. n) may be in a plain block: tab, LF, CR or
 * printable ASCII (a loop compilers turn into vector code). */
static int plain_bytes(const uint8_t *buf, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t stop = n - i > 4096 ? i + 4096 : n;
        unsigned bad = 0;
        for (; i < stop; i++) {
            uint8_t c = buf[i];
            bad |= ((uint8_t)(c - 0x20) > 0x5e) & (c != 9) & (c != 10) & (c != 13);
        }
        if (bad) return 0;
    }
    return 1;
}

/* The first of ``,`` ``"`` LF CR at or after p (or end): an unquoted field's end. */
static inline const uint8_t *field_end(const uint8_t *p, const uint8_t *end) {
    return find4(p, end, 0x2c, 0x22, 0x0a, 0x0d);
}

/* The first ``"`` LF CR at or after p (or end): inside a quoted field. */
static inline const uint8_t *quoted_end(const uint8_t *p, const uint8_t *end) {
    return find4(p, end, 0x22, 0x0a, 0x0d, 0x0d);
}

/* Where a span's text starts (offset into the block) and its length, with
 * QUOTES set when it holds doubled quotes. */
#define QUOTES 0x80000000u

/* The field at *pp (the block's bytes known plain_bytes): its span, *pp moved
 * past it. 0 when no field shape fits. */
static inline int next_field(const uint8_t **pp, const uint8_t *end, const uint8_t *buf,
                             ck_csv_span *s, int64_t *doubled) {
    const uint8_t *p = *pp, *q;
    *doubled = 0;
    if (p < end && *p == 0x22) {
        q = p + 1;
        for (;;) {
            q = quoted_end(q, end);
            if (q >= end || *q != 0x22) return 0; /* a line end inside, or no closing quote */
            if (q + 1 < end && q[1] == 0x22) {
                ++*doubled;
                q += 2;
                continue;
            }
            break;
        }
        s->at = (uint32_t)(p + 1 - buf);
        s->len = (uint32_t)(q - p - 1) | (*doubled ? QUOTES : 0);
        *pp = q + 1;
        return 1;
    }
    q = field_end(p, end);
    if (q < end && *q == 0x22) return 0; /* a quote inside an unquoted field */
    s->at = (uint32_t)(p - buf);
    s->len = (uint32_t)(q - p);
    *pp = q;
    return 1;
}

/* After a field: the comma before the next one, or the line's end. 0 if neither. */
static inline int after_field(const uint8_t **pp, const uint8_t *end, int last) {
    const uint8_t *p = *pp;
    if (!last) {
        if (p >= end || *p != 0x2c) return 0;
        *pp = p + 1;
        return 1;
    }
    if (p == end) return 1; /* the block's last line, without a line end */
    if (*p == 0x0a) {
        *pp = p + 1;
        return 1;
    }
    if (*p == 0x0d && p + 1 < end && p[1] == 0x0a) {
        *pp = p + 2;
        return 1;
    }
    return 0;
}

int64_t ck_csv_most_rows(const uint8_t *buf, size_t n) {
    const uint8_t *p = buf, *end = buf + n;
    int64_t lines = 1;
    while ((p = memchr(p, 0x0a, (size_t)(end - p))) != NULL) {
        lines++;
        p++;
    }
    return lines;
}

int ck_csv_scan(const uint8_t *buf, size_t n, int width, ck_csv_col *cols, int ncols,
                const int *first, ck_csv_span *spans, int64_t most, int64_t *rows) {
    const uint8_t *p = buf, *end = buf + n;
    int64_t r = 0, doubled;
    int f, c;
    ck_csv_span s;
    if (n > 0x7fffffffu || !plain_bytes(buf, n)) return 0; /* spans hold 31 bits */
    for (c = 0; c < ncols; c++) cols[c].bytes = cols[c].nulls = 0;
    while (p < end) {
        if (r >= most) return 0; /* never: ``most`` counts the lines */
        for (f = 0; f < width; f++) {
            if (!next_field(&p, end, buf, &s, &doubled)) return 0;
            for (c = first[f]; c >= 0; c = cols[c].next) {
                ck_csv_col *col = &cols[c];
                spans[r * ncols + c] = s;
                if (col->kind != CK_CSV_TEXT) continue;
                if (s.len)
                    col->bytes += (int64_t)(s.len & ~QUOTES) - doubled;
                else if (col->empty == CK_CSV_DEFAULT)
                    col->bytes += col->default_len;
                else
                    col->nulls++;
                if (col->bytes > INT32_MAX) return 0; /* int32 offsets */
            }
            if (!after_field(&p, end, f + 1 == width)) return 0;
        }
        r++;
    }
    *rows = r;
    return 1;
}

/* Decimal digits (leading zeros allowed) into *v; 0 past 2**64 - 1 or on another byte. */
static inline int digits(const uint8_t *p, int64_t len, uint64_t *v) {
    uint64_t x = 0;
    int64_t i = 0;
    while (i < len && p[i] == 0x30) i++;
    if (len - i > 20) return 0;
    for (; i < len; i++) {
        unsigned d = (unsigned)p[i] - 0x30u;
        if (d > 9) return 0;
        if (x > (UINT64_MAX - d) / 10) return 0;
        x = x * 10 + d;
    }
    *v = x;
    return 1;
}

/* A map column's value for the text p[0 .. len) (ASCII case ignored); 0 when not a key. */
static inline int lookup(const ck_csv_col *col, const uint8_t *p, int64_t len, int8_t *v) {
    char low[CK_CSV_KEY_MAX];
    int64_t i;
    int k;
    if (len > CK_CSV_KEY_MAX) return 0;
    for (i = 0; i < len; i++) {
        uint8_t ch = p[i];
        low[i] = (char)(ch >= 0x41 && ch <= 0x5a ? ch + 0x20 : ch);
    }
    for (k = 0; k < col->nkeys; k++) {
        if (col->key_lens[k] == len &&
            memcmp(col->keys + (CK_CSV_KEY_MAX + 1) * k, low, (size_t)len) == 0) {
            *v = col->key_values[k];
            return 1;
        }
    }
    return 0;
}

/* The text p[0 .. len), doubled quotes made single when ``quotes``, at dst; its length. */
static inline int64_t unquote(char *dst, const uint8_t *p, int64_t len, int quotes) {
    int64_t i = 0, k = 0;
    if (!quotes) {
        memcpy(dst, p, (size_t)len);
        return len;
    }
    while (i < len) {
        dst[k++] = (char)p[i];
        i += p[i] == 0x22 ? 2 : 1; /* a quote inside is always doubled */
    }
    return k;
}

/* Column col's rows from its spans; 0 when a value is refused. */
static int fill_column(const uint8_t *buf, ck_csv_col *col, int c, int ncols,
                       const ck_csv_span *spans, int64_t rows) {
    int64_t r, at = 0;
    if (col->kind == CK_CSV_TEXT) col->offs[0] = 0;
    for (r = 0; r < rows; r++) {
        const ck_csv_span *s = &spans[r * ncols + c];
        int64_t len = (int64_t)(s->len & ~QUOTES);
        const uint8_t *p = buf + s->at;
        if (col->kind == CK_CSV_TEXT) {
            if (len) {
                at += unquote(col->data + at, p, len, (s->len & QUOTES) != 0);
            } else if (col->empty == CK_CSV_DEFAULT) {
                memcpy(col->data + at, col->default_text, (size_t)col->default_len);
                at += col->default_len;
            } else {
                col->valid[r >> 3] &= (uint8_t) ~(1u << (r & 7));
            }
            col->offs[r + 1] = (int32_t)at;
        } else if (!len) {
            if (col->empty != CK_CSV_DEFAULT) return 0;
            if (col->kind == CK_CSV_U64)
                col->u64[r] = (uint64_t)col->default_value;
            else
                col->i8[r] = (int8_t)col->default_value;
        } else if (col->kind == CK_CSV_U64) {
            if (!digits(p, len, &col->u64[r])) return 0;
        } else if (!lookup(col, p, len, &col->i8[r])) {
            return 0;
        }
    }
    return 1;
}

int ck_csv_fill(const uint8_t *buf, ck_csv_col *cols, int ncols, const ck_csv_span *spans,
                int64_t rows) {
    int c;
    for (c = 0; c < ncols; c++)
        if (!fill_column(buf, &cols[c], c, ncols, spans, rows)) return 0;
    return 1;
}
