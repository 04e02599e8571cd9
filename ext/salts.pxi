# Salts: 8-byte draws, the biased tail rejected (see _parse.salts_from_bytes).

cdef uint64_t SALT_SPAN = SALT_MAX + 1  # draws reduced onto [0, SALT_MAX] (_spec, its one home)
cdef uint64_t SALT_REJECT_FROM = _p.SALT_REJECT_FROM


def salts_from_bytes(data, n):
    """Up to ``n`` salts from 8-byte little-endian draws, rejecting the biased tail."""
    if type(data) is not bytes:
        data = _p.as_bytes(data, "data")
    if type(n) is not int or n < 0 or n > _p.MAX_COUNT:
        n = _p.parse_count(n)  # raises the canonical error, or is n as a plain int
    cdef const uint8_t[::1] view = data
    cdef Py_ssize_t i, j, got = 0, want = n
    cdef uint64_t draw
    out = []
    for i in range(0, view.shape[0] - 7, 8):
        if got == want:
            break
        draw = 0
        for j in range(8):
            draw |= (<uint64_t>view[i + j]) << (8 * j)
        if draw < SALT_REJECT_FROM:
            out.append(draw % SALT_SPAN)
            got += 1
    return out


def new_salts(n):
    """``n`` salts, each uniform on [0, 10**12], from the OS CSPRNG."""
    if type(n) is not int or n < 0 or n > _p.MAX_COUNT:
        _p.parse_count(n)  # raises the canonical error
    out = []
    while len(out) < n:
        need = n - len(out)
        out += salts_from_bytes(_os.urandom(8 * need + 8), need)
    return out


def new_salt():
    """One salt, uniform on [0, 10**12], from the OS CSPRNG."""
    cdef uint64_t draw
    cdef bytes b
    cdef const uint8_t *p
    cdef int j
    while True:
        b = _os.urandom(8)
        p = <const uint8_t *>PyBytes_AS_STRING(b)
        draw = 0
        for j in range(8):
            draw |= (<uint64_t>p[j]) << (8 * j)
        if draw < SALT_REJECT_FROM:
            return draw % SALT_SPAN
