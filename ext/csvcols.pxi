# csv_columns: a block of plain CSV lines read into columns without the GIL (ext/csvcols.c).

cdef extern from "csvcols.h":
    enum:
        CK_CSV_TEXT
        CK_CSV_U64
        CK_CSV_MAP
        CK_CSV_NULL
        CK_CSV_REFUSE
        CK_CSV_DEFAULT
        CK_CSV_KEY_MAX
    ctypedef struct ck_csv_col:
        int field
        int kind
        int empty
        const char *default_text
        int64_t default_len
        int64_t default_value
        int nkeys
        const char *keys
        const uint8_t *key_lens
        const int8_t *key_values
        int next
        int64_t bytes
        int64_t nulls
        uint8_t *valid
        int32_t *offs
        char *data
        uint64_t *u64
        int8_t *i8
    ctypedef struct ck_csv_span:
        uint32_t at
        uint32_t len
    int64_t ck_csv_most_rows(const uint8_t *buf, size_t n) nogil
    int ck_csv_scan(const uint8_t *buf, size_t n, int width, ck_csv_col *cols, int ncols,
                    const int *first, ck_csv_span *spans, int64_t most, int64_t *rows) nogil
    int ck_csv_fill(const uint8_t *buf, ck_csv_col *cols, int ncols, const ck_csv_span *spans,
                    int64_t rows) nogil



cdef class _CsvPlan:
    """The C columns of one call and the memory they point into (freed with it)."""
    cdef ck_csv_col *cols
    cdef int *first
    cdef char *keys
    cdef uint8_t *key_lens
    cdef int8_t *key_values
    cdef list keep  # the default texts the columns point into
    cdef ck_csv_span *spans  # each row's wanted fields, found by the scan

    def __dealloc__(self):
        free(self.spans)
        free(self.cols)
        free(self.first)
        free(self.keys)
        free(self.key_lens)
        free(self.key_values)


cdef _CsvPlan _csv_plan(list specs, Py_ssize_t width):
    """The C side of ``_csv_columns.parse_columns``' specs, fields chained by ``first``."""
    cdef _CsvPlan plan = _CsvPlan.__new__(_CsvPlan)
    cdef Py_ssize_t n = len(specs), nkeys = 0, k = 0, c, f
    cdef ck_csv_col *col
    for spec in specs:
        nkeys += len(spec[3])
    plan.keep = []
    plan.cols = <ck_csv_col *>calloc(n if n else 1, sizeof(ck_csv_col))
    plan.first = <int *>malloc(width * sizeof(int))
    plan.keys = <char *>calloc(nkeys if nkeys else 1, CK_CSV_KEY_MAX + 1)
    plan.key_lens = <uint8_t *>malloc(nkeys if nkeys else 1)
    plan.key_values = <int8_t *>malloc(nkeys if nkeys else 1)
    if not (plan.cols and plan.first and plan.keys and plan.key_lens and plan.key_values):
        raise MemoryError()
    for f in range(width):
        plan.first[f] = -1
    for c in range(n - 1, -1, -1):  # chained in the order asked
        field, kind, empty, table = specs[c]
        col = &plan.cols[c]
        col.field = field
        col.kind = (CK_CSV_TEXT, CK_CSV_U64, CK_CSV_MAP)[kind]
        col.next = plan.first[field]
        plan.first[field] = c
        if empty is None:
            col.empty = CK_CSV_NULL if kind == 0 else CK_CSV_REFUSE
        else:
            col.empty = CK_CSV_DEFAULT
            if kind == 0:
                plan.keep.append(empty)
                col.default_text = PyBytes_AS_STRING(empty)
                col.default_len = PyBytes_GET_SIZE(empty)
            elif kind == 1:
                col.default_value = <int64_t>(<uint64_t>empty)  # any uint64, its bits
            else:
                col.default_value = <int64_t>empty
        col.nkeys = len(table)
        col.keys = plan.keys + (CK_CSV_KEY_MAX + 1) * k
        col.key_lens = plan.key_lens + k
        col.key_values = plan.key_values + k
        for key, value in table:
            memcpy(plan.keys + (CK_CSV_KEY_MAX + 1) * k, PyBytes_AS_STRING(key),
                   PyBytes_GET_SIZE(key))
            plan.key_lens[k] = <uint8_t>PyBytes_GET_SIZE(key)
            plan.key_values[k] = <int8_t>value
            k += 1
    return plan


cdef bytes _fresh(Py_ssize_t size):
    """A new bytes object of ``size`` bytes to write into before anyone sees it."""
    return PyBytes_FromStringAndSize(NULL, size)


def csv_columns(block, width, columns):
    """A block of plain CSV lines read into columns: ``(rows, [column, ...])`` or
    ``None`` (see ``clobkit.core.csv_columns``, the rule and the pure twin)."""
    from clobkit.core import csv_columns as _csvc  # on first use: `import clobkit` stays light

    cdef _Bytes src = _data(block, "block")
    cdef Py_ssize_t w = _p.parse_width(width)
    specs = _csvc.parse_columns(columns, w)
    if w > _csvc.TEXT_MAX or src.n > _csvc.TEXT_MAX:
        return None  # (the pure twin's rule: read the exact way)
    cdef _CsvPlan plan = _csv_plan(specs, w)
    cdef int64_t rows = 0, most
    cdef int ok, n = len(specs)
    with nogil:
        most = ck_csv_most_rows(src.data, src.n)
    plan.spans = <ck_csv_span *>malloc((most * n if n else 1) * sizeof(ck_csv_span))
    if plan.spans == NULL:
        raise MemoryError()
    with nogil:
        ok = ck_csv_scan(src.data, src.n, <int>w, plan.cols, n, plan.first, plan.spans, most,
                         &rows)
    if not ok:
        return None
    out = [_csv_output(&plan.cols[c], rows) for c in range(n)]
    with nogil:
        ok = ck_csv_fill(src.data, plan.cols, n, plan.spans, rows)
    return (rows, out) if ok else None


cdef object _csv_output(ck_csv_col *col, int64_t rows):
    """A column's output buffers (new bytes objects), pointed to by ``col`` for the fill."""
    if col.kind == CK_CSV_TEXT:
        valid = None
        if col.nulls:
            valid = _fresh((rows + 7) // 8)
            col.valid = <uint8_t *>PyBytes_AS_STRING(valid)
            memset(col.valid, 0xFF, (rows + 7) // 8)
        offs, data = _fresh((rows + 1) * 4), _fresh(col.bytes)
        col.offs = <int32_t *>PyBytes_AS_STRING(offs)
        col.data = PyBytes_AS_STRING(data)
        return (valid, offs, data)
    values = _fresh(rows * (8 if col.kind == CK_CSV_U64 else 1))
    if col.kind == CK_CSV_U64:
        col.u64 = <uint64_t *>PyBytes_AS_STRING(values)
    else:
        col.i8 = <int8_t *>PyBytes_AS_STRING(values)
    return values
