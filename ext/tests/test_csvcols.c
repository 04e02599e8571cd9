/* The plain-CSV block reader (csvcols.c) against a byte-at-a-time reference.
 *
 * Random blocks drawn from the bytes that matter (quotes, commas, CR, LF,
 * tabs, digits, letters, a control byte, a byte past ASCII) of every length
 * up to 300, each in a heap buffer of exactly its size (so ASan sees a read
 * past the end), are read by ck_csv_scan / ck_csv_fill and by the reference
 * below: the same verdict, rows and text of every field. Then digits, maps
 * and empty cells on known blocks. Run plain and under ASan + UBSan (make).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csvcols.h"
#include "check.h"

/* The reference: one byte at a time, the rule as csvcols.h words it. Returns the
 * rows, or -1 if the block is not plain; fields[r * width + f] its unquoted text. */
static int64_t reference(const char *b, size_t n, int width, char fields[][320]) {
    size_t i = 0;
    int64_t r = 0;
    while (i < n) {
        for (int f = 0; f < width; f++) {
            char *out = fields[r * width + f];
            size_t k = 0;
            if (i < n && b[i] == '"') {
                i++;
                for (;;) {
                    if (i >= n) return -1;
                    unsigned char c = (unsigned char)b[i];
                    if (c == '"') {
                        if (i + 1 < n && b[i + 1] == '"') {
                            out[k++] = '"';
                            i += 2;
                            continue;
                        }
                        i++;
                        break;
                    }
                    if (!(c == 9 || (c >= 0x20 && c <= 0x7e))) return -1;
                    out[k++] = (char)c;
                    i++;
                }
            } else {
                while (i < n) {
                    unsigned char c = (unsigned char)b[i];
                    if (!(c == 9 || (c >= 0x20 && c <= 0x7e && c != '"' && c != ','))) break;
                    out[k++] = (char)c;
                    i++;
                }
                if (i < n && b[i] == '"') return -1;
            }
            out[k] = 0;
            if (f + 1 < width) {
                if (i >= n || b[i] != ',') return -1;
                i++;
            } else if (i < n) {
                if (b[i] == '\n')
                    i++;
                else if (b[i] == '\r' && i + 1 < n && b[i + 1] == '\n')
                    i += 2;
                else
                    return -1;
            }
        }
        r++;
    }
    return r;
}

static const char *PIECES[] = {"a", "12", "\"", "\"\"", ",", "\r", "\n", "\r\n", "\t", " ",
                               "BUY", "\"x,y\"", "\x01", "\xe9", "0000000000000000007", ""};

static uint64_t state = 0x2545F4914F6CDD1DULL;
static unsigned next_rand(unsigned bound) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return (unsigned)(state % bound);
}

static void random_blocks(void) {
    static char fields[1300][320], text[300];
    for (int round = 0; round < 200000; round++) {
        int width = 1 + (int)next_rand(4);
        size_t n = 0;
        unsigned parts = next_rand(40);
        for (unsigned p = 0; p < parts; p++) {
            const char *piece = PIECES[next_rand(sizeof PIECES / sizeof *PIECES)];
            size_t len = strlen(piece);
            if (n + len > sizeof text) break;
            memcpy(text + n, piece, len);
            n += len;
        }
        char *buf = malloc(n ? n : 1); /* exactly the block: ASan sees any read past it */
        memcpy(buf, text, n);
        int64_t want = reference(buf, n, width, fields);
        ck_csv_col cols[4];
        int first[4];
        memset(cols, 0, sizeof cols);
        for (int f = 0; f < width; f++) {
            first[f] = f;
            cols[f].field = f, cols[f].kind = CK_CSV_TEXT, cols[f].empty = CK_CSV_NULL;
            cols[f].next = -1;
        }
        int64_t most = ck_csv_most_rows((const uint8_t *)buf, n), rows = -1;
        ck_csv_span *spans = malloc(sizeof(ck_csv_span) * (size_t)(most * width));
        int ok = ck_csv_scan((const uint8_t *)buf, n, width, cols, width, first, spans, most, &rows);
        CHECK(ok == (want >= 0), "round %d: scan says %d, the reference %lld", round, ok,
              (long long)want);
        if (ok && want >= 0) {
            CHECK(rows == want, "round %d: %lld rows, the reference %lld", round, (long long)rows,
                  (long long)want);
            char *data[4];
            for (int f = 0; f < width; f++) {
                cols[f].valid = malloc((size_t)(rows + 7) / 8 + 1);
                memset(cols[f].valid, 0xff, (size_t)(rows + 7) / 8 + 1);
                cols[f].offs = malloc(sizeof(int32_t) * (size_t)(rows + 1));
                cols[f].data = data[f] = malloc((size_t)cols[f].bytes + 1);
            }
            CHECK(ck_csv_fill((const uint8_t *)buf, cols, width, spans, rows), "round %d", round);
            for (int64_t r = 0; r < rows; r++) {
                for (int f = 0; f < width; f++) {
                    const char *got = data[f] + cols[f].offs[r];
                    size_t len = (size_t)(cols[f].offs[r + 1] - cols[f].offs[r]);
                    const char *exp = fields[r * width + f];
                    CHECK(len == strlen(exp) && memcmp(got, exp, len) == 0, "round %d row %lld",
                          round, (long long)r);
                    int null = !(cols[f].valid[r >> 3] >> (r & 7) & 1);
                    CHECK(null == (exp[0] == 0), "round %d row %lld: null", round, (long long)r);
                }
            }
            for (int f = 0; f < width; f++) free(cols[f].valid), free(cols[f].offs), free(data[f]);
        }
        free(spans);
        free(buf);
    }
}

static void kinds(void) {
    static const char block[] = "\"0042\",BUY,,x\r\n7,\"sell\",1,\n18446744073709551615,1,true,\"a\"\"b\"";
    size_t n = sizeof block - 1;
    static const char keys[3][CK_CSV_KEY_MAX + 1] = {"buy", "sell", "1"};
    static const uint8_t lens[3] = {3, 4, 1};
    static const int8_t values[3] = {0, 1, 1};
    ck_csv_col cols[4];
    memset(cols, 0, sizeof cols);
    int first[4] = {0, 1, 2, 3};
    cols[0] = (ck_csv_col){.field = 0, .kind = CK_CSV_U64, .empty = CK_CSV_REFUSE, .next = -1};
    cols[1] = (ck_csv_col){.field = 1, .kind = CK_CSV_MAP, .empty = CK_CSV_REFUSE, .nkeys = 3,
                           .keys = keys[0], .key_lens = lens, .key_values = values, .next = -1};
    cols[2] = (ck_csv_col){.field = 2, .kind = CK_CSV_U64, .empty = CK_CSV_DEFAULT,
                           .default_value = 9, .next = -1};
    cols[3] = (ck_csv_col){.field = 3, .kind = CK_CSV_TEXT, .empty = CK_CSV_DEFAULT,
                           .default_text = "dflt", .default_len = 4, .next = -1};
    ck_csv_span spans[3 * 4];
    int64_t rows = 0;
    CHECK(ck_csv_scan((const uint8_t *)block, n, 4, cols, 4, first, spans, 3, &rows), "scan");
    CHECK(rows == 3, "%lld rows", (long long)rows);
    uint64_t u[3], d[3];
    int8_t sides[3];
    int32_t offs[4];
    char data[16];
    cols[0].u64 = u, cols[1].i8 = sides, cols[2].u64 = d, cols[3].offs = offs, cols[3].data = data;
    /* "true" is not digits: the block is refused, after what it wrote */
    CHECK(!ck_csv_fill((const uint8_t *)block, cols, 4, spans, rows), "true as digits");
    CHECK(u[0] == 42 && u[1] == 7 && u[2] == UINT64_MAX, "digits %llu %llu %llu",
          (unsigned long long)u[0], (unsigned long long)u[1], (unsigned long long)u[2]);
    CHECK(sides[0] == 0 && sides[1] == 1 && sides[2] == 1, "sides");
    CHECK(d[0] == 9 && d[1] == 1, "an empty cell's default, then digits");
    /* as text, the field reads: its empty cell the default text */
    cols[2] = (ck_csv_col){.field = 2, .kind = CK_CSV_TEXT, .empty = CK_CSV_DEFAULT,
                           .default_text = "0", .default_len = 1, .next = -1};
    int32_t offs2[4];
    char data2[16];
    CHECK(ck_csv_scan((const uint8_t *)block, n, 4, cols, 4, first, spans, 3, &rows), "scan");
    cols[2].offs = offs2, cols[2].data = data2, cols[3].offs = offs, cols[3].data = data;
    CHECK(ck_csv_fill((const uint8_t *)block, cols, 4, spans, rows), "fill");
    CHECK(offs2[3] == 6 && memcmp(data2, "01true", 6) == 0, "texts of field 2");
    CHECK(offs[3] == 8 && memcmp(data, "xdflta\"b", 8) == 0, "texts of field 3");
}

int main(void) {
    random_blocks();
    kinds();
    printf("csvcols: %d checks, %d failures\n", checks, failures);
    return failures != 0;
}
