# Request signing: signature, verify_signature, RequestSigner.

cdef enum:
    K_METHOD = 0
    K_PATH = 1
    K_TS = 2
    K_NONCE = 3


cdef inline bint _text_ok(const char *s, Py_ssize_t n, int kind) noexcept:
    """The fast path's acceptance: never wider than the pure twin's parsers."""
    cdef Py_ssize_t i
    cdef char lo = 0x21, hi = 0x7e
    if n == 0:
        return False
    if kind == K_METHOD:
        lo, hi = 65, 90  # upper-case only; the pure twin upper-cases the rest
    elif kind == K_TS:
        lo, hi = 48, 57
    elif kind == K_PATH and s[0] != 47:  # '/'
        return False
    for i in range(n):
        if s[i] < lo or s[i] > hi:
            return False
    return True


cdef inline object _text(object value, int kind):
    """``value`` when it passes the fast check, else the pure twin's verdict."""
    cdef const char *s = NULL
    cdef Py_ssize_t n = 0
    if _ascii_view(value, &s, &n) and _text_ok(s, n, kind):
        return value
    if kind == K_METHOD:
        return _p.parse_method(value)
    if kind == K_PATH:
        return _p.parse_path(value)
    if kind == K_TS:
        if type(value) is int and 0 <= value <= 0xFFFFFFFFFFFFFFFF:
            return str(value)
        return _p.parse_timestamp(value)  # and an int too long to write
    return _p.parse_token(value, "nonce")


cdef int _sign(const ck_hmac_key *key, object method, object path, bint sign_query,
               object ts, object nonce, object body, char *sig_hex) except -1:
    """Validate (the pure twin words any error), then sign."""
    method = _text(method, K_METHOD)
    path = _text(path, K_PATH)
    ts = _text(ts, K_TS)
    nonce = _text(nonce, K_NONCE)
    if type(body) is not bytes:
        body = _p.parse_body(body)
    return _sign_valid(key, method, path, sign_query, ts, nonce, body, sig_hex)


cdef inline void _request(ck_request *r, str method, str path, bint sign_query, str nonce,
                          bytes body, char *sig) noexcept:
    """Point ``r`` at validated ASCII fields, all but the timestamp (see _stamp).

    The pointers are borrowed: the caller keeps the objects alive until signed.
    """
    cdef Py_ssize_t i, n = 0
    cdef const char *t = NULL
    _ascii_view(method, &t, &n)
    r.method, r.method_len = t, n
    _ascii_view(path, &t, &n)
    if not sign_query:
        for i in range(n):
            if t[i] == 63:  # '?': the bare path is signed
                n = i
                break
    r.path, r.path_len = t, n
    _ascii_view(nonce, &t, &n)
    r.nonce, r.nonce_len = t, n
    r.body = <const uint8_t *>PyBytes_AS_STRING(body)
    r.body_len = PyBytes_GET_SIZE(body)
    r.sig = sig


cdef inline void _stamp(ck_request *r, Py_ssize_t k, str ts) noexcept:
    """Point the timestamp of ``k`` requests at ``ts`` (validated digits)."""
    cdef const char *t = NULL
    cdef Py_ssize_t n = 0, j
    _ascii_view(ts, &t, &n)
    for j in range(k):
        r[j].ts, r[j].ts_len = t, n


cdef int _sign_valid(const ck_hmac_key *key, str method, str path, bint sign_query,
                     str ts, str nonce, bytes body, char *sig_hex) except -1:
    """HMAC of METHOD\\nPATH\\nTS\\nNONCE\\nhex(sha256(body)) into 64 hex chars."""
    cdef ck_request r
    _request(&r, method, path, sign_query, nonce, body, sig_hex)
    _stamp(&r, 1, ts)
    if ck_sign_requests(key, &r, 1) != 0:
        raise MemoryError()
    return 0


cdef int _key(ck_hmac_key *key, object secret) except -1:
    cdef bytes raw = _p.parse_secret(secret)
    ck_hmac_sha256_init(key, <const uint8_t *>PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw))
    return 0


cdef inline str _hex_text(const char *sig):
    cdef str s = PyUnicode_New(64, 127)
    memcpy(PyUnicode_DATA(s), sig, 64)
    return s


def signature(secret, method, path, timestamp, nonce, body=b""):
    """Lowercase hex HMAC-SHA256 of METHOD\\nPATH\\nTIMESTAMP\\nNONCE\\nhex(SHA-256(body))."""
    cdef ck_hmac_key key
    cdef char sig[64]
    # validate in the pure twin's order so the first bad input is the one named
    method = _text(method, K_METHOD)
    path = _text(path, K_PATH)
    timestamp = _text(timestamp, K_TS)
    nonce = _text(nonce, K_NONCE)
    if type(body) is not bytes:
        body = _p.parse_body(body)
    _key(&key, secret)
    _sign_valid(&key, method, path, True, timestamp, nonce, body, sig)
    return _hex_text(sig)


def verify_signature(secret, method, path, timestamp, nonce, body, sig):
    """True when ``sig`` is the signature of the request; compared in constant time.

    Inputs that cannot have been signed (a malformed path, nonce, signature)
    verify as False; only a bad secret raises.
    """
    cdef ck_hmac_key key
    cdef char expected[64]
    cdef const char *s
    cdef Py_ssize_t n, i
    cdef unsigned char diff = 0
    _key(&key, secret)
    if type(sig) is not str and isinstance(sig, str):
        sig = str.__str__(sig)  # a str subclass verifies as its text (as in the pure twin)
    if not _ascii_view(sig, &s, &n):
        return False
    try:
        _sign(&key, method, path, True, timestamp, nonce, body, expected)
    except SignatureInputError:
        return False
    if n != 64:
        return False
    for i in range(64):
        diff |= <unsigned char>(s[i] ^ expected[i])
    return diff == 0


# Requests signed within one millisecond share the timestamp string.
cdef long long _ts_ms = -1
cdef str _ts_str = ""


cdef str _now_text():
    global _ts_ms, _ts_str
    cdef long long now = ck_now_ms()
    if now < 0:
        return _p.parse_timestamp(_p._now_ms())
    if now != _ts_ms:
        _ts_str = str(now)
        _ts_ms = now
    return _ts_str


cdef str H_KEY = "X-API-KEY"
cdef str H_TS = "X-API-TIMESTAMP"
cdef str H_NONCE = "X-API-NONCE"
cdef str H_SIG = "X-API-SIGNATURE"


cdef enum:
    SIGN_CHUNK = 32  # requests signed per pass of headers_many
    HELD = 4  # references held per pending request: method, path, body, nonce


cdef inline void _release(PyObject **held, Py_ssize_t n) noexcept:
    cdef Py_ssize_t j
    for j in range(n):
        _decref(held[j])


cdef object _UNSEEN = object()


cdef class RequestSigner:
    """Signs requests with one API key: the four ``X-API-*`` headers.

    With ``sign_query=True`` (the default, as in the API's cURL examples) the
    signed PATH includes the query string exactly as sent; ``False`` signs the
    bare path. The secret never appears in ``repr`` or errors.
    """

    cdef ck_hmac_key _hk
    cdef dict _template
    cdef readonly str api_key
    cdef readonly bint sign_query

    def __init__(self, api_key, api_secret, *, sign_query=True):
        self.api_key = _p.parse_token(api_key, "api_key")
        _key(&self._hk, api_secret)
        self.sign_query = _p.parse_flag(sign_query, "sign_query")
        self._template = {H_KEY: self.api_key, H_TS: "", H_NONCE: "", H_SIG: ""}

    def __repr__(self):
        return f"RequestSigner(api_key={self.api_key!r}, sign_query={bool(self.sign_query)})"

    def __reduce__(self):
        raise TypeError("RequestSigner cannot be pickled (it holds a secret)")

    def __dealloc__(self):
        # the padded-key states are as good as the secret: wipe them
        ck_wipe(&self._hk, sizeof(ck_hmac_key))

    cdef dict _headers(self, object method, object path, object body, object timestamp_ms, object nonce):
        cdef char sig[64]
        method = _text(method, K_METHOD)
        path = _text(path, K_PATH)
        ts = _now_text() if timestamp_ms is None else _text(timestamp_ms, K_TS)
        n = _hex_str(_random16(), 16, False) if nonce is None else _text(nonce, K_NONCE)
        if type(body) is not bytes:
            body = _p.parse_body(body)
        _sign_valid(&self._hk, method, path, self.sign_query, ts, n, body, sig)
        cdef dict h = PyDict_Copy(self._template)
        PyDict_SetItem(h, H_TS, ts)
        PyDict_SetItem(h, H_NONCE, n)
        PyDict_SetItem(h, H_SIG, _hex_text(sig))
        return h

    def headers(self, method, path, body=b"", *, timestamp_ms=None, nonce=None):
        """``X-API-KEY``, ``X-API-TIMESTAMP`` (ms), ``X-API-NONCE`` (32 hex) and ``X-API-SIGNATURE``."""
        return self._headers(method, path, body, timestamp_ms, nonce)

    def headers_many(self, requests):
        """Headers for each ``(method, path)`` or ``(method, path, body)`` of a batch.

        Requests are signed 32 at a time, two by two, so that their SHA-256
        work interleaves (see ext/sign.c). The 32 share one reading of the
        clock, taken when they are signed.
        """
        cdef list out = []
        cdef ck_request reqs[SIGN_CHUNK]
        cdef char sigs[SIGN_CHUNK * 64]
        cdef PyObject *held[SIGN_CHUNK * HELD]  # owned references the pending requests point into
        cdef Py_ssize_t i = 0, k = 0
        # the last method and path objects and what they validated to: local to
        # this call, so threads sharing the signer never see each other's
        # (None is a request's possible bad input, hence _UNSEEN)
        cdef list seen = [_UNSEEN, None, _UNSEEN, None]
        try:
            for request in _p.iter_requests(requests):
                self._prepare(request, i, &reqs[k], &sigs[64 * k], &held[HELD * k], seen)
                k += 1
                i += 1
                if k == SIGN_CHUNK:
                    self._emit(reqs, sigs, held, k, out)
                    _release(held, HELD * k)
                    k = 0
            if k:
                self._emit(reqs, sigs, held, k, out)
        finally:
            _release(held, HELD * k)
        return out

    cdef int _prepare(self, object request, Py_ssize_t i, ck_request *r, char *sig,
                      PyObject **held, list seen) except -1:
        """Validate request ``i`` and point ``r`` at it; on success hold its objects."""
        cdef Py_ssize_t j
        if type(request) is tuple and len(<tuple>request) == 3:
            method, path, body = (<tuple>request)[0], (<tuple>request)[1], (<tuple>request)[2]
        elif isinstance(request, (tuple, list)) and len(request) in (2, 3):
            method, path = request[0], request[1]
            body = request[2] if len(request) == 3 else b""
        else:
            raise SignatureInputError(
                f"requests[{i}]", request, "must be (method, path) or (method, path, body)"
            )
        # a batch mostly repeats a few method and path objects: check each once
        if method is not seen[0]:
            seen[1] = _text(method, K_METHOD)
            seen[0] = method
        if path is not seen[2]:
            seen[3] = _text(path, K_PATH)
            seen[2] = path
        method, path = seen[1], seen[3]
        if type(body) is not bytes:
            body = _p.parse_body(body)
        nonce = _hex_str(_random16(), 16, False)
        _request(r, method, path, self.sign_query, nonce, body, sig)
        # the request may be a list the caller could change under us: hold
        # what r points into until the chunk is signed
        held[0] = <PyObject *>method
        held[1] = <PyObject *>path
        held[2] = <PyObject *>body
        held[3] = <PyObject *>nonce
        for j in range(HELD):
            _incref(held[j])
        return 0

    cdef int _emit(self, ck_request *reqs, const char *sigs, PyObject **held, Py_ssize_t k,
                   list out) except -1:
        """Stamp and sign ``k`` prepared requests; append their header dicts to ``out``."""
        cdef Py_ssize_t j
        cdef dict h
        cdef str ts = _now_text()
        cdef dict stamped = PyDict_Copy(self._template)  # the timestamp set once per chunk
        PyDict_SetItem(stamped, H_TS, ts)
        _stamp(reqs, k, ts)
        if ck_sign_requests(&self._hk, reqs, k) != 0:
            raise MemoryError()
        for j in range(k):
            h = PyDict_Copy(stamped)
            PyDict_SetItem(h, H_NONCE, <object>held[HELD * j + 3])
            PyDict_SetItem(h, H_SIG, _hex_text(sigs + 64 * j))
            out.append(h)
        return 0
