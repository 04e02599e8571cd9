# Bytes in, hex text out: keccak256, sha256_hex, append_column (CSV rows + ids).

cdef inline str _hex_str(const uint8_t *data, Py_ssize_t n, bint prefix):
    cdef Py_ssize_t off = 2 if prefix else 0
    cdef str s = PyUnicode_New(2 * n + off, 127)
    cdef char *out = <char *>PyUnicode_DATA(s)
    cdef Py_ssize_t i
    if prefix:
        out[0] = 48  # '0'
        out[1] = 120  # 'x'
    ck_hex(data, n, out + off)
    return s


cdef inline bint _ascii_view(object s, const char **data, Py_ssize_t *n):
    """Borrow the bytes of an ASCII str without copying."""
    if type(s) is not str or not PyUnicode_IS_COMPACT_ASCII(s):
        return False
    data[0] = <const char *>PyUnicode_DATA(s)
    n[0] = PyUnicode_GET_LENGTH(s)
    return True


cdef class _Bytes:
    """A read-only view of any bytes-like object (bytes without a buffer request)."""
    cdef Py_buffer buf
    cdef bint held
    cdef object obj  # the bytes ``data`` points into: alive as long as this view
    cdef const uint8_t *data
    cdef Py_ssize_t n

    def __dealloc__(self):
        if self.held:
            PyBuffer_Release(&self.buf)


cdef _Bytes _bytes(object data):
    cdef _Bytes v = _Bytes.__new__(_Bytes)
    if type(data) is bytes:
        v.obj = data  # a converted copy (see _data) has no other owner
        v.data = <const uint8_t *>PyBytes_AS_STRING(data)
        v.n = PyBytes_GET_SIZE(data)
        return v
    PyObject_GetBuffer(data, &v.buf, PyBUF_SIMPLE)  # raises TypeError for non-buffers
    v.held = True
    v.data = <const uint8_t *>v.buf.buf
    v.n = v.buf.len
    return v


cdef inline _Bytes _data(object data, str field="data"):
    """``data``'s bytes; anything but a simple buffer goes through the pure twin's rule."""
    try:
        return _bytes(data)
    except (TypeError, BufferError):  # not bytes-like, or not contiguous
        return _bytes(_p.as_bytes(data, field))


def keccak256(data):
    """Keccak-256 (Ethereum's, not SHA3-256) of ``data`` (any bytes-like object)."""
    cdef _Bytes v = _data(data)
    cdef uint8_t out[32]
    ck_keccak256(v.data, v.n, out)
    return PyBytes_FromStringAndSize(<char *>out, 32)


def sha256_hex(data):
    """Lowercase hex SHA-256 of ``data`` (any bytes-like object)."""
    cdef _Bytes v = _data(data)
    cdef uint8_t out[32]
    ck_sha256(v.data, v.n, out)
    return _hex_str(out, 32, False)


def append_column(lines, values, width):
    """Each line of ``lines`` + ``,`` + its ``width``-byte value from ``values``, LF-ended.

    ``lines``: bytes-like, lines ending in LF or CRLF (the last may lack one);
    ``values``: bytes-like, ``width`` bytes per line, back to back (ids from
    ``order_ids(out="arrow")``). Returns bytes. One pass of copies: CSV rows
    with a new last column, as ``clobkit order-ids`` writes them.
    """
    cdef _Bytes src, vals
    src = _data(lines, "lines")
    vals = _data(values, "values")
    cdef Py_ssize_t w = _p.parse_width(width)
    cdef const uint8_t *p = src.data
    cdef const uint8_t *end = src.data + src.n
    cdef const uint8_t *nl
    cdef Py_ssize_t count = 0, crs = 0, size, k
    count = _count_lines(src.data, src.n, &crs)
    if vals.n != count * w:
        raise _p.column_size_error(vals.n, count, w)
    # each line loses its CR and gains "," + value (+ an LF if it had none)
    size = src.n - crs + count * (w + 1) + (1 if src.n and src.data[src.n - 1] != 10 else 0)
    out = PyBytes_FromStringAndSize(NULL, size)
    cdef char *at = PyBytes_AS_STRING(out)
    with nogil:
        for k in range(count):
            nl = <const uint8_t *>memchr(p, 10, end - p)
            size = (nl if nl != NULL else end) - p
            if size and p[size - 1] == 13:
                size -= 1  # CRLF: the row ends in LF alone
            memcpy(at, p, size)
            at += size
            at[0] = 44  # ','
            memcpy(at + 1, vals.data + k * w, w)
            at[w + 1] = 10
            at += w + 2
            p = nl + 1 if nl != NULL else end
    return out


cdef Py_ssize_t _count_lines(const uint8_t *data, Py_ssize_t n, Py_ssize_t *crs) noexcept nogil:
    """Lines in ``data`` (its LFs, plus one if the last line has none); ``crs``: lines
    ending in CR (before their LF, or at the very end)."""
    cdef const uint8_t *p = data
    cdef const uint8_t *end = data + n
    cdef const uint8_t *nl
    cdef const uint8_t *stop
    cdef Py_ssize_t count = 0
    while p < end:
        nl = <const uint8_t *>memchr(p, 10, end - p)
        stop = nl if nl != NULL else end
        count += 1
        if stop > p and (stop - 1)[0] == 13:
            crs[0] += 1
        if nl == NULL:
            break
        p = nl + 1
    return count
