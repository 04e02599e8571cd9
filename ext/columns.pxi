# Columnar arguments: Arrow arrays and numpy arrays read from their buffers.

cdef object _Column = _col.Column
cdef object COL_NULL = _col.NULL
cdef uint32_t _ONE = 1
cdef bint LITTLE = (<uint8_t *>&_ONE)[0] == 1  # Arrow data is little-endian; so must we be
cdef int F_INT = _col.F_INT, F_BOOL = _col.F_BOOL, F_BOOL8 = _col.F_BOOL8, F_DEC = _col.F_DEC
cdef int F_STR = _col.F_STR, F_FSB32 = _col.F_FSB32, F_DICT = _col.F_DICT


cdef class _Src:
    """One contiguous run of a column (``src``: raw pointers into buffers held by ``views``)."""
    cdef ck_src src
    cdef list views


cdef const uint8_t *_view(_Src s, object buf) except? NULL:
    if buf is None:
        return NULL
    cdef _Bytes v = _bytes(buf)
    s.views.append(v)
    return v.data


cdef _Src _chunk_src(object chunk, int fmt, Py_ssize_t width, bint signed, Py_ssize_t start):
    """The run of one Arrow array of a plain (not dictionary) storage format."""
    cdef _Src s = _Src.__new__(_Src)
    memset(&s.src, 0, sizeof(ck_src))
    s.views = []
    s.src.fmt, s.src.width, s.src.n, s.src.start, s.src.offset = fmt, width, len(chunk), start, chunk.offset
    s.src.is_signed = signed
    bufs = chunk.buffers()
    s.src.valid = _view(s, bufs[0]) if chunk.null_count else NULL
    if fmt == F_STR:
        s.src.offs = _view(s, bufs[1])
        s.src.data = _view(s, bufs[2])
    else:
        s.src.data = _view(s, bufs[1])
    return s


cdef _Src _dict_src(object col, object chunk, Py_ssize_t start, int kind, Py_ssize_t off):
    """The run of a dictionary array: its indices, and its dictionary parsed once."""
    cdef _Src s = _Src.__new__(_Src)
    cdef _Src d = _chunk_src(chunk.dictionary, col.format, col.width, col.signed, 0)
    cdef Py_ssize_t nd = d.src.n, i = 0, j, m, got
    cdef bint flag = kind == C_SIDE or kind == C_NEG_RISK
    cdef bytearray table = bytearray(32 * nd if nd else 1)
    cdef bytearray ok = bytearray(nd if nd else 1)
    cdef uint8_t *t = <uint8_t *>PyByteArray_AS_STRING(table)
    cdef uint8_t *k = <uint8_t *>PyByteArray_AS_STRING(ok)
    cdef ck_order *tmp = <ck_order *>malloc(FILL_BLOCK * sizeof(ck_order))
    if tmp == NULL:
        raise MemoryError()
    try:
        while i < nd:
            m = FILL_BLOCK if nd - i > FILL_BLOCK else nd - i
            got = ck_fill_run(&d.src, i, m, tmp, kind, off)
            for j in range(got):
                memcpy(t + 32 * (i + j), <char *>&tmp[j] + off, 1 if flag else 32)
                k[i + j] = 1
            i += got + (got < m)  # a value not taken stays 0 in ``ok``: its rows go slow
    finally:
        free(tmp)
    memset(&s.src, 0, sizeof(ck_src))
    s.views = [table, ok, d]
    s.src.fmt, s.src.width, s.src.n, s.src.start, s.src.offset = \
        F_DICT, col.index_width, len(chunk), start, chunk.offset
    s.src.is_signed = col.index_signed
    bufs = chunk.buffers()
    s.src.valid = _view(s, bufs[0]) if chunk.null_count else NULL
    s.src.data = _view(s, bufs[1])
    s.src.table, s.src.ok, s.src.ndict = t, k, nd
    return s


cdef list _sources(object col, int kind, Py_ssize_t off):
    """The runs of a ``_columns.Column`` (None on a big-endian host)."""
    cdef _Src s
    cdef list out = []
    if not LITTLE:
        return None
    if col.array is not None:
        s = _Src.__new__(_Src)
        memset(&s.src, 0, sizeof(ck_src))
        s.views = []
        s.src.fmt, s.src.width, s.src.n, s.src.start, s.src.offset = col.format, col.width, col.n, 0, 0
        s.src.is_signed = col.signed
        s.src.valid = NULL
        s.src.data = _view(s, col.array) if col.n else NULL
        out.append(s)
        return out
    for chunk, start in zip(col.chunks, col.starts):
        if getattr(chunk, "dictionary", None) is not None:
            out.append(_dict_src(col, chunk, start, kind, off))
        else:
            out.append(_chunk_src(chunk, col.format, col.width, col.signed, start))
    return out


cdef Py_ssize_t _offset(ck_order *o, int kind):
    """Byte offset in ck_order of the field a column kind fills."""
    cdef char *base = <char *>o
    if kind == C_TOKEN:
        return <char *>&o.token_id - base
    if kind == C_MAKER:
        return <char *>&o.maker_amount - base
    if kind == C_TAKER:
        return <char *>&o.taker_amount - base
    if kind == C_SIDE:
        return <char *>&o.side - base
    if kind == C_SALT:
        return <char *>&o.salt - base
    if kind == C_FEE:
        return <char *>&o.fee_rate_bps - base
    if kind == C_NONCE:
        return <char *>&o.nonce - base
    if kind == C_EXPIRATION:
        return <char *>&o.expiration - base
    if kind == C_TIMESTAMP:
        return <char *>&o.timestamp - base
    if kind == C_METADATA:
        return <char *>&o.metadata - base
    if kind == C_BUILDER:
        return <char *>&o.builder - base
    return <char *>&o.neg_risk - base


cdef Py_ssize_t FILL_BLOCK = 128  # dictionary values parsed at a time


cdef class _Out:
    """A writable view of a buffer (an Arrow buffer being filled), released once filled."""
    cdef Py_buffer buf
    cdef bint held

    def __cinit__(self, object target):
        PyObject_GetBuffer(target, &self.buf, PyBUF_WRITABLE)
        self.held = True

    cdef void release(self):
        if self.held:
            PyBuffer_Release(&self.buf)
            self.held = False

    def __dealloc__(self):
        self.release()
