# The batch: per-call setup under the GIL; every order in ext/batch.c.

cdef Py_ssize_t CHUNK = 16384  # rows a round when the GIL has per-row work (sequences, list out)
# rows a round when signing (about 55 ms of one thread's work): the first round's
# objects and the last round's results are made with no worker beside them, so
# on many cores a round of CHUNK signed orders left them idle for tens of ms
cdef Py_ssize_t SIGN_ROUND = 2048
cdef int64_t BLOCK = 256  # rows a thread takes at a time (whole SIMD groups)
cdef int64_t SIGN_BLOCK = 8  # rows a thread takes at a time when signing (~0.2 ms)


cdef class _Signer:
    """libsecp256k1's functions, its context and a key, for the workers (see ck_signer);
    with ``wrap``, POLY_1271's wrapper of each order (see ck_wrap)."""
    cdef ck_signer s
    cdef object handle  # keeps nothing alive by itself: clobkit.signing owns the context and key
    cdef ck_wrap w
    cdef bytes type_hex  # the text w.type_hex points into
    cdef const ck_wrap *wrap  # &w, or NULL: the id itself is signed
    cdef size_t sig_chars

    def __cinit__(self, handle, key, wrap=None):
        sign, serialize, ctx = handle
        self.s.sign = <ck_secp_sign_fn><uintptr_t>sign
        self.s.serialize = <ck_secp_serialize_fn><uintptr_t>serialize
        self.s.ctx = <const void *><uintptr_t>ctx
        self.s.key = <const unsigned char *><uintptr_t>key
        self.handle = handle
        self.sig_chars = CK_SIG_CHARS
        if wrap is None:
            return
        head, tail, type_text = wrap  # clobkit.signing._Wrapper's words, checked there
        if len(head) != 32 or len(tail) != 160:
            raise ValueError("a POLY_1271 wrapper is a 32-byte head and a 160-byte tail")
        memcpy(self.w.head, <const char *>head, 32)
        memcpy(self.w.tail, <const char *>tail, 160)
        self.type_hex = type_text.hex().encode()
        self.w.type_hex = <const char *>self.type_hex
        self.w.type_hex_len = len(self.type_hex)
        self.wrap = &self.w
        self.sig_chars = CK_SIG_CHARS + 128 + len(self.type_hex)


cdef class _Plan:
    """One call's columns, template order and buffers (freed when the call ends)."""
    cdef ck_order tmpl
    cdef list names
    cdef list seqs  # (index, kind, field offset, tuple) of the Python sequence arguments
    cdef list slow  # (index, sequence or Column) of every non-scalar argument, for the Python path
    cdef ck_src *fixed  # the runs of the columnar arguments
    cdef ck_column cols[2][9]  # per buffer: the columns, sequences last
    cdef ck_src seqsrc[2][9]
    cdef ck_ref *refs[2][9]
    cdef ck_u256 *big[2][9]  # ints past 63 bits of a sequence, read under the GIL
    cdef char *text[2][9]  # the str / bytes elements' text, copied under the GIL
    cdef char *ids[2]
    cdef void *offs  # an Arrow result's offsets, written by the workers (see ck_batch)
    cdef bint offs_wide
    cdef char *sigs[2]
    cdef uint8_t *missed[2]
    cdef ck_batch jobs[2]
    cdef int ncols
    cdef int _workers
    cdef Py_ssize_t n  # rows
    cdef long long free_ns  # the calling thread's CPU time with the GIL released
    cdef long long window_ns  # its CPU time from the first round's start to the last's join

    def __cinit__(self):
        self.names = []
        self.seqs = []
        self.slow = []

    def __dealloc__(self):
        cdef int b, k
        free(self.fixed)
        for b in range(2):
            free(self.ids[b])
            free(self.sigs[b])
            free(self.missed[b])
            for k in range(9):
                free(self.refs[b][k])
                free(self.big[b][k])
                free(self.text[b][k])

    cdef list take(self, dict columns, const int *kinds, Py_ssize_t n):
        """Each argument into the plan: scalars parsed once into the template order,
        lists and tuples as they are (each round copies what the workers read out of
        its objects under the GIL: no copy of the list, no reference per item), other
        sequences as tuples. Returns the (kind, its runs, field offset) of the
        columnar arguments."""
        cdef int c
        self.n = n
        self.names = list(columns)
        memset(&self.tmpl, 0, sizeof(ck_order))
        fast = []
        for c in range(9):
            value = columns[self.names[c]]
            if type(value) is _Column:
                if (<object>value).items is not None:  # numpy objects / strings: the list path
                    value = (<object>value).items
                else:
                    off = _offset(&self.tmpl, kinds[c])
                    srcs = _sources(value, kinds[c], off)
                    if srcs is not None:
                        fast.append((kinds[c], srcs, off))
                        self.slow.append((c, value))
                        continue
                    value = value.values()  # a big-endian host: through Python objects
            if _scalar(value):
                _set(&self.tmpl, kinds[c], value, self.names[c], -1)
            else:
                if type(value) is not tuple and type(value) is not list:
                    value = tuple(value)
                _same_length(value, self.names[c], n)
                self.seqs.append((c, kinds[c], _offset(&self.tmpl, kinds[c]), value))
                self.slow.append((c, value))
        self.slow.sort()
        return fast

    cdef object run(self, OrderHasher hasher, Py_ssize_t n, list fast, object pa, _Signer signer,
                    bint raw):
        """The batch's ids (a list, with ``pa`` an Arrow array, with ``raw`` one bytes): the
        columns laid out, each round's buffers taken, then the rounds."""
        cdef bint arrow = pa is not None
        cdef bint text_out = arrow or raw
        cdef int64_t block = BLOCK if signer is None else SIGN_BLOCK
        cdef object data = None, offsets = None
        cdef _Out view = None, ends = None
        cdef char *text = NULL
        cdef list result = None
        global _missed
        _missed = 0
        self._lay_out(fast)
        if raw:
            # a new bytes object, written by the workers before anyone else sees it
            data = PyBytes_FromStringAndSize(NULL, n * _ids.ID_CHARS)
            text = PyBytes_AS_STRING(data)
            if n == 0:
                return data
        elif arrow:
            # from Arrow's memory pool: reused between calls, where a fresh
            # bytearray would be zero-filled and page-faulted in every time
            data = pa.allocate_buffer(n * _ids.ID_CHARS)
            view = _Out(data)
            text = <char *>view.buf.buf
            if n == 0:
                view.release()
                return _ids.id_array(pa, data, _ids.offsets(0), 0)
            # the offsets too, filled by the workers beside the ids (a string array's
            # offsets are int32 up to _arrow_ids.INT32_IDS ids, int64 past it)
            self.offs_wide = n > _ids.INT32_IDS
            offsets = pa.allocate_buffer((n + 1) * (8 if self.offs_wide else 4))
            ends = _Out(offsets)
            self.offs = ends.buf.buf
            memset(self.offs, 0, 8 if self.offs_wide else 4)
        else:
            result = PyList_New(n)
            if n == 0:
                return result
        # One round for the whole batch when the GIL has nothing to do per row
        # (columnar input, Arrow or bytes output); else rounds of CHUNK rows (SIGN_ROUND when
        # signing), the GIL's share of round k + 1 and k - 1 done while the workers
        # run round k.
        cdef Py_ssize_t most = CHUNK if signer is None else SIGN_ROUND
        cdef Py_ssize_t chunk = n if text_out and not self.seqs else (most if n > most else n)
        cdef Py_ssize_t nchunks = (n + chunk - 1) // chunk
        self._allocate(2 if nchunks > 1 else 1, chunk, (chunk + block - 1) // block, text_out,
                       signer)
        self._rounds(hasher, n, chunk, nchunks, text, result, pa, signer, block)
        if raw:
            return data
        if arrow:
            view.release()
            ends.release()
            return _ids.id_array(pa, data, offsets, n)
        return result

    cdef int _lay_out(self, list fast) except -1:
        """Both round buffers' columns: the columnar runs (shared), then one source per
        sequence (refilled each round by _prepare)."""
        cdef Py_ssize_t total = 0, i, k
        cdef int b, c
        cdef _Src s
        for kind, srcs, off in fast:
            total += len(srcs)
        self.fixed = <ck_src *>malloc((total if total else 1) * sizeof(ck_src))
        if self.fixed == NULL:
            raise MemoryError()
        for b in range(2):
            i = 0
            c = 0
            for kind, srcs, off in fast:
                self.cols[b][c].srcs = self.fixed + i
                self.cols[b][c].nsrcs = len(srcs)
                self.cols[b][c].kind = kind
                self.cols[b][c].off = off
                for s in srcs:
                    self.fixed[i] = s.src
                    i += 1
                c += 1
            for k in range(len(self.seqs)):
                idx, kind, off, seq = self.seqs[k]
                self.cols[b][c].srcs = &self.seqsrc[b][k]
                self.cols[b][c].nsrcs = 1
                self.cols[b][c].kind = kind
                self.cols[b][c].off = off
                c += 1
        self.ncols = c
        return 0

    cdef int _allocate(self, int nbuf, Py_ssize_t chunk, Py_ssize_t nblocks, bint arrow,
                       _Signer signer) except -1:
        """``nbuf`` round buffers of ``chunk`` rows: missed-block flags, ids (unless Arrow
        takes them), signatures (when signing), each sequence's object references."""
        cdef int b
        cdef Py_ssize_t k
        for b in range(nbuf):
            self.missed[b] = <uint8_t *>malloc(nblocks)
            if self.missed[b] == NULL:
                raise MemoryError()
            if not arrow:
                self.ids[b] = <char *>malloc(chunk * CK_ID_CHARS)
                if self.ids[b] == NULL:
                    raise MemoryError()
            if signer is not None:
                self.sigs[b] = <char *>malloc(chunk * signer.sig_chars)
                if self.sigs[b] == NULL:
                    raise MemoryError()
            for k in range(len(self.seqs)):
                self.refs[b][k] = <ck_ref *>malloc(chunk * sizeof(ck_ref))
                if self.refs[b][k] == NULL:
                    raise MemoryError()
        return 0

    cdef int _rounds(self, OrderHasher hasher, Py_ssize_t n, Py_ssize_t chunk, Py_ssize_t nchunks,
                     char *text, list result, object pa, _Signer signer, int64_t block) except -1:
        """Round k on the workers (this thread one of them) while this thread finishes
        round k - 1 and prepares round k + 1 in the other buffer."""
        cdef Py_ssize_t k, lo, m
        cdef int b, helpers
        cdef int workers_ = self._workers
        cdef long long t
        self._prepare(0, 0, chunk if chunk < n else n, hasher, text, signer, block)
        self.window_ns = _clock()
        for k in range(nchunks):
            b = k & 1
            lo = k * chunk
            helpers = 0
            if workers_ > 1 and n - lo > block:
                self.jobs[b].task.run = ck_batch_run
                helpers = ck_pool_start(&self.jobs[b].task, workers_ - 1)
            try:
                # round k - 1 is done with buffer b ^ 1 before round k + 1 takes it
                if k > 0:
                    self._finish(b ^ 1, hasher, result, pa, signer)
                if k + 1 < nchunks:
                    m = chunk if n - lo - chunk > chunk else n - lo - chunk
                    self._prepare(b ^ 1, lo + chunk, m, hasher, text, signer, block)
            finally:
                # the helpers read this round's buffers: join them before anything else
                with nogil:
                    t = _clock()
                    ck_batch_run(&self.jobs[b].task)
                    if helpers:
                        ck_pool_wait()
                    self.free_ns += _clock() - t
        self.window_ns = _clock() - self.window_ns
        self._finish((nchunks - 1) & 1, hasher, result, pa, signer)
        return 0

    cdef int _prepare(self, int b, Py_ssize_t lo, Py_ssize_t m, OrderHasher hasher, char *text,
                      _Signer signer, int64_t block) except -1:
        """Round buffer ``b`` for rows lo .. lo + m - 1: each sequence's objects taken."""
        cdef int k
        cdef ck_batch *job = &self.jobs[b]
        for k in range(len(self.seqs)):
            idx, kind, off, seq = self.seqs[k]
            if type(seq) is list:  # another thread may change it between two rounds
                _same_length(seq, self.names[idx], self.n)
            _refs(seq, lo, m, kind, self.refs[b][k], &self.big[b][k], &self.text[b][k])
            self.seqsrc[b][k].fmt = CK_F_REFS
            self.seqsrc[b][k].data = <const uint8_t *>self.refs[b][k]
            self.seqsrc[b][k].start = lo
            self.seqsrc[b][k].n = m
            self.seqsrc[b][k].offset = 0
            self.seqsrc[b][k].valid = NULL
        memset(job, 0, sizeof(ck_batch))
        job.task.run = ck_batch_run
        job.ctx = &hasher.ctx
        job.tmpl = &self.tmpl
        job.cols = self.cols[b]
        job.ncols = self.ncols
        job.lo = lo
        job.hi = lo + m
        job.block = block
        if text != NULL:
            job.ids = text
            job.base = 0
        else:
            job.ids = self.ids[b]
            job.base = lo
        job.signer = &signer.s if signer is not None else NULL
        job.wrap = signer.wrap if signer is not None else NULL
        job.sig_chars = signer.sig_chars if signer is not None else CK_SIG_CHARS
        job.sigs = self.sigs[b]
        job.offs = self.offs
        job.offs_wide = self.offs_wide
        job.missed = self.missed[b]
        memset(self.missed[b], 0, (m + block - 1) // block)
        return 0

    cdef int _finish(self, int b, OrderHasher hasher, list result, object pa,
                     _Signer signer) except -1:
        """Round ``b`` done: its missed blocks through Python values, then its Python objects."""
        cdef ck_batch *job = &self.jobs[b]
        cdef Py_ssize_t nb = (job.hi - job.lo + job.block - 1) // job.block, blk, r, r1
        cdef ck_order o
        cdef uint8_t d[32]
        cdef char *at
        cdef int ok = 1
        global _missed
        for blk in range(nb):
            if not job.missed[blk]:
                continue
            r1 = job.lo + (blk + 1) * job.block
            r1 = r1 if r1 < job.hi else job.hi
            _missed += r1 - job.lo - blk * job.block
            for r in range(job.lo + blk * job.block, r1):
                o = self.tmpl
                for c, seq in self.slow:
                    if type(seq) is list:  # a value's own code may have changed it
                        _same_length(seq, self.names[c], self.n)
                    value = seq[r]
                    if value is COL_NULL:
                        raise _col.null_error(f"{self.names[c]}[{r}]")
                    _set(&o, _KINDS[c] if hasher.version == 1 else _KINDS2[c], value, self.names[c], r)
                ck_order_ids_flat(&hasher.ctx, &o, 1, d)
                at = job.ids + CK_ID_CHARS * (r - job.base)
                at[0] = 48
                at[1] = 120
                ck_hex(d, 32, at + 2)
                if signer is not None:
                    with nogil:
                        ok = ck_sign_order(job, &o, d, job.sigs + job.sig_chars * (r - job.base))
                    if not ok:
                        job.failed = 1
        if job.failed:
            raise OrderFieldError("private_key", _p.HIDDEN, "could not sign (libsecp256k1 refused)")
        if result is None:
            return 0
        cdef Py_ssize_t i
        cdef str s
        cdef object t
        if signer is None:
            for i in range(job.hi - job.lo):
                s = PyUnicode_New(CK_ID_CHARS, 127)
                memcpy(PyUnicode_DATA(s), job.ids + CK_ID_CHARS * i, CK_ID_CHARS)
                Py_INCREF(s)
                PyList_SET_ITEM(result, job.lo + i, s)
            return 0
        for i in range(job.hi - job.lo):
            t = _signed(job.ids + CK_ID_CHARS * i, job.sigs + job.sig_chars * i, job.sig_chars)
            Py_INCREF(t)
            PyList_SET_ITEM(result, job.lo + i, t)
        return 0


cdef int _KINDS[9]
cdef int _KINDS2[9]
_KINDS[0], _KINDS[1], _KINDS[2], _KINDS[3], _KINDS[4], _KINDS[5], _KINDS[6], _KINDS[7], _KINDS[8] = \
    C_TOKEN, C_MAKER, C_TAKER, C_SIDE, C_SALT, C_FEE, C_NONCE, C_EXPIRATION, C_NEG_RISK
_KINDS2[0], _KINDS2[1], _KINDS2[2], _KINDS2[3], _KINDS2[4], _KINDS2[5], _KINDS2[6], _KINDS2[7], _KINDS2[8] = \
    C_TOKEN, C_MAKER, C_TAKER, C_SIDE, C_SALT, C_TIMESTAMP, C_METADATA, C_BUILDER, C_NEG_RISK


cdef PyTypeObject *SIGNED = NULL


cdef inline object _signed(const char *order_id, const char *sig, Py_ssize_t sig_chars):
    """A ``SignedOrder`` (clobkit.signing) of two texts, allocated directly."""
    global SIGNED
    if SIGNED == NULL:
        from clobkit.signing.hasher import SignedOrder
        SIGNED = <PyTypeObject *>SignedOrder
    cdef object t = <object>SIGNED.tp_alloc(SIGNED, 2)
    Py_DECREF(t)  # tp_alloc's reference now belongs to t
    cdef str a = PyUnicode_New(CK_ID_CHARS, 127), b = PyUnicode_New(sig_chars, 127)
    memcpy(PyUnicode_DATA(a), order_id, CK_ID_CHARS)
    memcpy(PyUnicode_DATA(b), sig, sig_chars)
    Py_INCREF(a)
    Py_INCREF(b)
    PyTuple_SET_ITEM(t, 0, a)
    PyTuple_SET_ITEM(t, 1, b)
    return t


def _secp_check(handle, key, digest):
    """One signature through the native path (a test hook): ``"0x"`` + 130 hex."""
    cdef _Signer signer = _Signer(handle, key)
    cdef const uint8_t[::1] d = digest
    cdef char out[CK_SIG_CHARS]
    if d.shape[0] != 32 or not ck_sign_digest(&signer.s, &d[0], out):
        raise ValueError("could not sign")
    return (<bytes>out[:CK_SIG_CHARS]).decode()


def parse_ids(ids):
    """32 bytes per order id of ``ids`` (``"0x"`` + 64 hex str, or 32 bytes), back to back;
    None when any is not plainly one (clobkit.signing then words the error)."""
    if type(ids) is not list and type(ids) is not tuple:
        return None
    cdef Py_ssize_t n = len(ids), i, j
    cdef PyObject **items = PySequence_Fast_ITEMS(ids)
    cdef PyObject *o
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 32 * n)
    cdef uint8_t *d = <uint8_t *>PyBytes_AS_STRING(out)
    cdef const char *s
    cdef ck_u256 x
    for i in range(n):
        o = items[i]
        if ck_is_ascii_str(o) and PyUnicode_GET_LENGTH(<object>o) == 66:
            s = <const char *>PyUnicode_DATA(<object>o)
            if s[0] != 48 or s[1] != 120 or not ck_hex_limbs(s + 2, &x):
                return None
            for j in range(32):
                d[32 * i + j] = <uint8_t>(x.w[3 - j // 8] >> (56 - 8 * (j % 8)))
        elif ck_is_bytes(o) and PyBytes_GET_SIZE(<object>o) == 32:
            memcpy(d + 32 * i, PyBytes_AS_STRING(<object>o), 32)
        else:
            return None
    return out


def sign_digests(handle, key, digests, threads):
    """Signatures (``"0x"`` + 130 hex) of 32-byte digests back to back, over ``threads``
    native threads (see clobkit.signing); ``handle`` and ``key`` as ``_sign_many``'s."""
    global _held_ns, _alone_ns
    cdef long long t0 = _clock(), free_ns
    cdef _Signer signer = _Signer(handle, key)
    cdef _Bytes v = _bytes(digests)
    cdef int workers = _p.parse_threads(threads)
    cdef Py_ssize_t n = v.n // 32, i
    cdef ck_batch job
    cdef list result = PyList_New(n)
    cdef str s
    cdef char *sigs = <char *>malloc(n * CK_SIG_CHARS if n else 1)
    if sigs == NULL:
        raise MemoryError()
    try:
        memset(&job, 0, sizeof(ck_batch))
        job.ctx = NULL
        job.digests = v.data
        job.signer = &signer.s
        job.sigs = sigs
        job.sig_chars = CK_SIG_CHARS
        job.lo, job.hi, job.base, job.block = 0, n, 0, SIGN_BLOCK
        with nogil:
            free_ns = _clock()
            ck_batch_go(&job, workers - 1)
            free_ns = _clock() - free_ns
        if job.failed:
            raise OrderFieldError("private_key", _p.HIDDEN, "could not sign (libsecp256k1 refused)")
        for i in range(n):
            s = PyUnicode_New(CK_SIG_CHARS, 127)
            memcpy(PyUnicode_DATA(s), sigs + CK_SIG_CHARS * i, CK_SIG_CHARS)
            Py_INCREF(s)
            PyList_SET_ITEM(result, i, s)
    finally:
        free(sigs)
    _held_ns = _clock() - t0 - free_ns
    _alone_ns = _held_ns  # one round: the strs are made once every signature is
    return result
