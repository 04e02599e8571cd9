# A list's or tuple's objects taken for the native workers, a round of rows at a time,
# under the GIL (ext/batch.pxi's _Plan._prepare): an int's value, a str's or bytes' text.

# bytes of text a sequence's str / bytes element may have to be copied for the workers
# (a decimal uint256 has at most 78 digits, a hex word 66 chars); longer: the Python path
cdef Py_ssize_t TEXT_MAX = 80


cdef int _same_length(object seq, str name, Py_ssize_t n) except -1:
    """A sequence argument still has the batch's ``n`` items (another thread may change a list)."""
    if len(seq) != n:
        raise _p.changed_length_error(name, len(seq))
    return 0


cdef int _refs(object seq, Py_ssize_t lo, Py_ssize_t m, int kind, ck_ref *out,
               ck_u256 **big, char **text) except -1:
    """Rows lo .. lo + m - 1 of a list or tuple as the workers read them (see ck_ref): the
    least CPython allows under the GIL, one type check and one value per object.

    Nothing the workers read points into an object: an int's value is taken here,
    and a str's or bytes' text copied into ``text[0]`` (at most TEXT_MAX bytes each,
    one round's worth), so another thread may change the list while they run.
    Whatever is not plainly taken here is CK_REF_MISS: its block goes through the
    Python path, which parses it or words its error as the list path does.
    """
    cdef PyObject **items = PySequence_Fast_ITEMS(seq) + lo
    cdef PyObject *o
    cdef PyObject *last = NULL
    cdef Py_ssize_t i, size, used = 0
    cdef long long v
    cdef int overflow
    cdef bint flag = kind == C_SIDE or kind == C_NEG_RISK
    cdef bint word = kind == C_METADATA or kind == C_BUILDER
    cdef const char *at
    cdef bint raw
    cdef ck_ref r
    for i in range(m):
        ck_prefetch_item(items, i, m)
        o = items[i]
        if o == last:
            out[i] = out[i - 1]
            continue
        last = o
        r.p = CK_REF_MISS
        r.v = 0
        at = NULL
        raw = False
        if ck_is_ascii_str(o):
            at = <const char *>PyUnicode_DATA(<object>o)
            size = PyUnicode_GET_LENGTH(<object>o)
        elif ck_is_int(o):
            if not word:  # a flag (side, neg_risk) is checked to be 0 or 1 by the workers
                overflow = 0
                v = PyLong_AsLongLongAndOverflow(<object>o, &overflow)
                if overflow == 0 and v >= 0:
                    r.p = NULL
                    r.v = <uint64_t>v
                elif overflow > 0 and not flag:
                    if big[0] == NULL:
                        big[0] = <ck_u256 *>malloc(CHUNK * sizeof(ck_u256))
                        if big[0] == NULL:
                            raise MemoryError()
                    if ck_int_limbs(o, &big[0][i]) == 0:
                        r.p = <const char *>&big[0][i]
                        r.v = CK_REF_LIMBS
        elif kind == C_NEG_RISK:
            # the objects themselves: Cython reads <PyObject *>True as the C int 1
            if o == Py_True:
                r.p, r.v = NULL, 1
            elif o == Py_False:
                r.p, r.v = NULL, 0
        elif word:
            if o == <PyObject *>None:
                r.p, r.v = NULL, 0
            elif ck_is_bytes(o):
                at = PyBytes_AS_STRING(<object>o)
                size = PyBytes_GET_SIZE(<object>o)
                raw = True
        if at != NULL and size <= TEXT_MAX:
            if text[0] == NULL:
                text[0] = <char *>malloc(CHUNK * TEXT_MAX)
                if text[0] == NULL:
                    raise MemoryError()
            memcpy(text[0] + used, at, size)
            r.p = text[0] + used
            r.v = <uint64_t>size | CK_REF_RAW if raw else <uint64_t>size
            used += size
        out[i] = r
    return 0
