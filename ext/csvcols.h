/* Plain CSV blocks read into columns, without the GIL: the fast CSV path of
 * ``clobkit order-ids`` (see clobkit.cli.orderids.csv_fast).
 *
 * A block is plain when every line has exactly ``width`` fields, each either
 * unquoted (tab, space and printable ASCII but the quote and the comma) or
 * quoted RFC 4180 style (tab, space and printable ASCII, commas too, a quote
 * only doubled), and ends in LF or CRLF (the last line may end the block
 * instead). On such lines Python's csv module (strict) reads the same fields.
 *
 * Wanted fields are read into columns in two steps: ck_csv_scan checks the
 * shape, finds each wanted field of each line and counts each text column's
 * bytes and nulls (the caller then allocates the outputs), ck_csv_fill
 * writes them from what the scan found, a column at a time. A column is
 * one of:
 * - CK_CSV_TEXT: the field's text (quotes taken off, doubled quotes single)
 *   as an Arrow string column (int32 offsets from 0, data, a validity bitmap
 *   when it has nulls);
 * - CK_CSV_U64: decimal digits (leading zeros allowed) as a uint64;
 * - CK_CSV_MAP: a short word looked up, ASCII case ignored, in a table of
 *   lowercase keys, as its int8 value.
 * An empty field is, by the column's ``empty``: a null (text), the column's
 * default (text or value), or a refusal of the block. Interface owned by
 * ext/csvcols.pxi; implementation in csvcols.c.
 */
#ifndef CLOBKIT_CSVCOLS_H
#define CLOBKIT_CSVCOLS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { CK_CSV_TEXT = 0, CK_CSV_U64 = 1, CK_CSV_MAP = 2 };
enum { CK_CSV_NULL = 0, CK_CSV_REFUSE = 1, CK_CSV_DEFAULT = 2 };
enum { CK_CSV_KEY_MAX = 15 };  /* bytes of a map key */

typedef struct {
    int field;  /* the field of each line, from 0 */
    int kind;   /* CK_CSV_TEXT, CK_CSV_U64, CK_CSV_MAP */
    int empty;  /* CK_CSV_NULL (text only), CK_CSV_REFUSE, CK_CSV_DEFAULT */
    const char *default_text;  /* text: an empty field's text with CK_CSV_DEFAULT */
    int64_t default_len;
    int64_t default_value;     /* u64, map: an empty field's value with CK_CSV_DEFAULT */
    int nkeys;                 /* map: the table, lowercase keys of at most 15 bytes */
    const char *keys;          /* CK_CSV_KEY_MAX + 1 bytes a key */
    const uint8_t *key_lens;
    const int8_t *key_values;
    int next;                  /* the next column of the same field, or -1 (the caller's) */
    /* counted by ck_csv_scan (text; ck_csv_fill leaves ``bytes`` as it found it) */
    int64_t bytes, nulls;
    /* written by ck_csv_fill: text's valid (NULL when no nulls: left as it is),
     * offs (rows + 1) and data; u64's u64; map's i8 */
    uint8_t *valid;
    int32_t *offs;
    char *data;
    uint64_t *u64;
    int8_t *i8;
} ck_csv_col;

/* Where a wanted field's text is in the block: its offset and length (the top
 * bit of ``len`` set when it holds doubled quotes). */
typedef struct {
    uint32_t at, len;
} ck_csv_span;

/* The most rows buf[0 .. n) can hold: its LFs, plus one. */
int64_t ck_csv_most_rows(const uint8_t *buf, size_t n);

/* 1 when buf[0 .. n) is plain CSV of ``width`` fields a line: *rows set, each
 * column's field found (spans[r * ncols + c]: row r, column c; room for ``most``
 * rows) and each text column's ``bytes`` and ``nulls`` counted. 0 if not: a line
 * of another shape, a block of 2**31 bytes or more, more than 2**31 - 1 bytes of
 * text in a column. ``first[f]``: the first column of field f, or -1 (columns
 * chained through ``next``). */
int ck_csv_scan(const uint8_t *buf, size_t n, int width, ck_csv_col *cols, int ncols,
                const int *first, ck_csv_span *spans, int64_t most, int64_t *rows);

/* Fill the columns' outputs from ck_csv_scan's spans; 0 when a value is not of
 * its column's kind (not digits, past 2**64 - 1, not in the table, empty where
 * refused): the caller then reads the block another way. */
int ck_csv_fill(const uint8_t *buf, ck_csv_col *cols, int ncols, const ck_csv_span *spans,
                int64_t rows);

#ifdef __cplusplus
}
#endif

#endif
