# Order ids: uint256 fields, one order's words, OrderHasher (one order; a batch's set-up).

cdef inline object _name(object field, Py_ssize_t i):
    """The field named in an error: ``salt``, or ``salts[12]`` inside a batch."""
    return field if i < 0 else f"{field}[{i}]"


cdef inline int _u256(object value, ck_u256 *out, object field, Py_ssize_t i) except -1:
    """A uint256 field from an int or a decimal string; the pure twin words every error."""
    cdef int overflow = 0
    cdef long long v
    cdef const char *data
    cdef Py_ssize_t n
    cdef bytes raw
    if type(value) is int:
        v = PyLong_AsLongLongAndOverflow(value, &overflow)
        if overflow == 0 and v >= 0:
            out.w[0] = <uint64_t>v
            out.w[1] = out.w[2] = out.w[3] = 0
            return 0
    elif _ascii_view(value, &data, &n) and ck_u256_digits(data, n, out):
        return 0
    # big ints, int subclasses and every error
    raw = _p.parse_uint256(value, _name(field, i)).to_bytes(32, "little")
    memcpy(out.w, PyBytes_AS_STRING(raw), 32)
    _le_limbs(out)
    return 0


cdef inline void _le_limbs(ck_u256 *x) noexcept nogil:
    """Little-endian bytes in x.w -> native limbs (a no-op on little-endian hosts)."""
    cdef const uint8_t *b = <const uint8_t *>x.w
    cdef uint64_t w[4]
    cdef int i, j
    for i in range(4):
        w[i] = 0
        for j in range(8):
            w[i] |= (<uint64_t>b[8 * i + j]) << (8 * j)
    for i in range(4):
        x.w[i] = w[i]


cdef inline int _side(object value, object field, Py_ssize_t i) except -1:
    if type(value) is str:
        if value == "BUY":
            return 0
        if value == "SELL":
            return 1
    elif type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        # an int subclass (Side, an IntEnum) reads as its int; enum is not imported here
        if value == 0:
            return 0
        if value == 1:
            return 1
    return _p.parse_side(value, _name(field, i))


cdef inline int _flag(object value, object field, Py_ssize_t i) except -1:
    if value is False:
        return 0
    if value is True:
        return 1
    return 1 if _p.parse_flag(value, _name(field, i)) else 0


# ---------------------------------------------------------------------------
# Order ids

cdef object UNSET = _p.UNSET  # "not given": a field of the other order version


cdef inline int _word(object value, ck_u256 *out, object field, Py_ssize_t i) except -1:
    """A bytes32 (None, 32 bytes or 0x + 64 hex) as the uint256 of its big-endian bytes."""
    cdef const char *s
    cdef Py_ssize_t n
    cdef const uint8_t *b
    cdef int k, j
    cdef uint64_t w
    cdef bytes raw
    if value is None:
        out.w[0] = out.w[1] = out.w[2] = out.w[3] = 0
        return 0
    if type(value) is bytes and PyBytes_GET_SIZE(value) == 32:
        b = <const uint8_t *>PyBytes_AS_STRING(value)
        for k in range(4):
            w = 0
            for j in range(8):
                w = (w << 8) | b[8 * k + j]
            out.w[3 - k] = w
        return 0
    if _ascii_view(value, &s, &n) and n == 66 and s[0] == 48 and (s[1] == 120 or s[1] == 88) \
            and ck_hex_limbs(s + 2, out):
        return 0
    # every other spelling and every error
    raw = _p.parse_word(value, _name(field, i)).to_bytes(32, "little")
    memcpy(out.w, PyBytes_AS_STRING(raw), 32)
    _le_limbs(out)
    return 0


cdef inline int _set(ck_order *o, int c, object value, object name, Py_ssize_t i) except -1:
    """Parse one field (column kind c) of an order; ``i`` >= 0 inside a batch."""
    if c == C_TOKEN:
        return _u256(value, &o.token_id, name, i)
    if c == C_MAKER:
        return _u256(value, &o.maker_amount, name, i)
    if c == C_TAKER:
        return _u256(value, &o.taker_amount, name, i)
    if c == C_SIDE:
        o.side = <uint8_t>_side(value, name, i)
        return 0
    if c == C_SALT:
        return _u256(value, &o.salt, name, i)
    if c == C_FEE:
        return _u256(value, &o.fee_rate_bps, name, i)
    if c == C_NONCE:
        return _u256(value, &o.nonce, name, i)
    if c == C_EXPIRATION:
        return _u256(value, &o.expiration, name, i)
    if c == C_TIMESTAMP:
        return _u256(value, &o.timestamp, name, i)
    if c == C_METADATA:
        return _word(value, &o.metadata, name, i)
    if c == C_BUILDER:
        return _word(value, &o.builder, name, i)
    o.neg_risk = <uint8_t>_flag(value, name, i)
    return 0


cdef inline void _zero(ck_u256 *x) noexcept nogil:
    x.w[0] = x.w[1] = x.w[2] = x.w[3] = 0


cdef inline int _fill(int version, ck_order *o, object token_id, object maker_amount,
                      object taker_amount, object side, object salt, object fee_rate_bps,
                      object nonce, object expiration, object timestamp, object metadata,
                      object builder) except -1:
    """One order's fields, checked against the version first (the pure twin's order)."""
    if version == 1:
        if timestamp is not UNSET or metadata is not UNSET or builder is not UNSET:
            _p.check_version_fields(
                version, (fee_rate_bps, nonce, expiration, timestamp, metadata, builder)
            )
    elif fee_rate_bps is not UNSET or nonce is not UNSET or expiration is not UNSET \
            or timestamp is UNSET:
        _p.check_version_fields(
            version, (fee_rate_bps, nonce, expiration, timestamp, metadata, builder)
        )
    _u256(token_id, &o.token_id, "token_id", -1)
    _u256(maker_amount, &o.maker_amount, "maker_amount", -1)
    _u256(taker_amount, &o.taker_amount, "taker_amount", -1)
    o.side = <uint8_t>_side(side, "side", -1)
    _u256(salt, &o.salt, "salt", -1)
    if version == 1:
        if fee_rate_bps is UNSET:
            _zero(&o.fee_rate_bps)
        else:
            _u256(fee_rate_bps, &o.fee_rate_bps, "fee_rate_bps", -1)
        if nonce is UNSET:
            _zero(&o.nonce)
        else:
            _u256(nonce, &o.nonce, "nonce", -1)
        if expiration is UNSET:
            _zero(&o.expiration)
        else:
            _u256(expiration, &o.expiration, "expiration", -1)
    else:
        _u256(timestamp, &o.timestamp, "timestamp", -1)
        _word(None if metadata is UNSET else metadata, &o.metadata, "metadata", -1)
        _word(None if builder is UNSET else builder, &o.builder, "builder", -1)
    return 0


cdef class OrderHasher:
    """The exchange's ``clob_order_id`` (EIP-712 order digest) for one wallet, offline.

    ``wallet`` is a ``WalletInfo`` or the ``data`` mapping of ``GET /wallet``.
    ``version`` (1, 2 or 3) is the exchange's order format; None takes it from
    the wallet's exchange addresses (docs/exchange-versions.md). Domain
    separators and the wallet's constant words are computed once here.
    """

    cdef ck_order_ctx ctx
    cdef object _prepared
    cdef readonly int version
    cdef readonly int signature_type
    cdef readonly object chain_id
    cdef readonly str maker
    cdef readonly str signer

    def __init__(self, wallet, *, version=None):
        p = prepare_wallet(wallet, keccak256, version)
        self._prepared = p
        memcpy(self.ctx.typehash, <char *>p.typehash, 32)
        memcpy(self.ctx.maker, <char *>p.maker, 32)
        memcpy(self.ctx.signer, <char *>p.signer, 32)
        memcpy(self.ctx.taker, <char *>p.taker, 32)
        memcpy(self.ctx.signature_type, <char *>p.signature_type, 32)
        memcpy(self.ctx.domain[0], <char *>p.domain_ctf, 32)
        memcpy(self.ctx.domain[1], <char *>p.domain_neg_risk, 32)
        self.ctx.layout = CK_LAYOUT_V1 if p.version == 1 else CK_LAYOUT_V2
        self.version = p.version
        self.signature_type = p.signature_type_value
        self.chain_id = p.chain_id
        self.maker = p.maker_address
        self.signer = p.signer_address

    def __repr__(self):
        p = self._prepared
        return (
            f"OrderHasher(maker=0x{p.maker[12:].hex()}, chain_id={p.chain_id}, version={p.version})"
        )

    def domain_separator(self, neg_risk=False):
        """The 32-byte EIP-712 domain separator of the CTF (or NegRisk) exchange."""
        return PyBytes_FromStringAndSize(<char *>self.ctx.domain[_flag(neg_risk, "neg_risk", -1)], 32)

    def order_id(
        self,
        *,
        token_id,
        maker_amount,
        taker_amount,
        side,
        salt,
        fee_rate_bps=UNSET,
        nonce=UNSET,
        expiration=UNSET,
        timestamp=UNSET,
        metadata=UNSET,
        builder=UNSET,
        neg_risk=False,
    ):
        """The ``clob_order_id`` of one order: ``"0x"`` + 64 lowercase hex digits.

        V1 orders take ``fee_rate_bps``, ``nonce``, ``expiration`` (0 when
        left out); V2/V3 orders take ``timestamp`` (ms, required) and the
        bytes32 ``metadata`` and ``builder`` (zero when left out). A field of
        the other version is an ``OrderFieldError``.
        """
        cdef ck_order o
        cdef uint8_t out[32]
        _fill(self.version, &o, token_id, maker_amount, taker_amount, side, salt,
              fee_rate_bps, nonce, expiration, timestamp, metadata, builder)
        o.neg_risk = <uint8_t>_flag(neg_risk, "neg_risk", -1)
        ck_order_ids_flat(&self.ctx, &o, 1, out)
        return _hex_str(out, 32, True)

    def struct_hash(
        self,
        *,
        token_id,
        maker_amount,
        taker_amount,
        side,
        salt,
        fee_rate_bps=UNSET,
        nonce=UNSET,
        expiration=UNSET,
        timestamp=UNSET,
        metadata=UNSET,
        builder=UNSET,
        neg_risk=False,
    ):
        """The 32-byte EIP-712 ``hashStruct`` of the order (same keywords as ``order_id``)."""
        cdef ck_order o
        cdef uint8_t out[32]
        _fill(self.version, &o, token_id, maker_amount, taker_amount, side, salt,
              fee_rate_bps, nonce, expiration, timestamp, metadata, builder)
        o.neg_risk = <uint8_t>_flag(neg_risk, "neg_risk", -1)
        ck_order_struct_hash(&self.ctx, &o, out)
        return PyBytes_FromStringAndSize(<char *>out, 32)

    def sign(self, signer, **order):
        """Hash and sign one order: ``SignedOrder(order_id, signature)`` (see clobkit.signing)."""
        from clobkit.signing.hasher import sign_order
        return sign_order(self, signer, order)

    def sign_many(self, signer, *, threads=None, **columns):
        """Hash and sign a batch (``order_ids``' keywords): a list of ``SignedOrder``."""
        from clobkit.signing.hasher import sign_orders
        return sign_orders(self, signer, columns, threads)

    def order_ids(
        self,
        *,
        token_ids,
        maker_amounts,
        taker_amounts,
        sides,
        salts,
        fee_rate_bps=UNSET,
        nonces=UNSET,
        expirations=UNSET,
        timestamps=UNSET,
        metadatas=UNSET,
        builders=UNSET,
        neg_risk=False,
        threads=None,
        out="list",
    ):
        """``clob_order_id`` of each order of a batch; each argument a sequence or a scalar.

        Every order is read, hashed and written as ``"0x…"`` text by native
        worker threads without the GIL (``threads`` of them, default 1):
        Arrow and numpy columns straight from their buffers, Python sequences
        from the text or int each object holds (taken in one pass under the
        GIL). Returns a list of str, or with ``out="arrow"`` one pyarrow
        string array whose data buffer the workers fill (no Python object per
        id; see ``clobkit.core.arrow_ids``), with ``out="bytes"`` one ``bytes`` the
        workers fill, the ids back to back.
        """
        return self._batch(token_ids, maker_amounts, taker_amounts, sides, salts, fee_rate_bps,
                           nonces, expirations, timestamps, metadatas, builders, neg_risk,
                           threads, out, None)

    def _sign_many(self, handle, key, threads, kwargs, wrap=None):
        """``sign_many``'s native path (see clobkit.signing): ``SignedOrder`` of each order,
        hashed and signed in the worker threads. ``handle``: ``_secp_handle``'s tuple;
        ``key``: the address of the 32 key bytes, alive for the call; ``wrap``: None, or
        POLY_1271's (head, tail, Order type text) words (clobkit.signing._Wrapper)."""
        cdef _Signer signer = _Signer(handle, key, wrap)
        get = kwargs.get
        if "out" in kwargs:  # order_ids' choice of result: the signed orders have one shape
            raise OrderFieldError("out", kwargs["out"], "is not an argument of sign_many")
        return self._batch(kwargs["token_ids"], kwargs["maker_amounts"], kwargs["taker_amounts"],
                           kwargs["sides"], kwargs["salts"], get("fee_rate_bps", UNSET),
                           get("nonces", UNSET), get("expirations", UNSET), get("timestamps", UNSET),
                           get("metadatas", UNSET), get("builders", UNSET), get("neg_risk", False),
                           threads, "list", signer)

    cdef object _batch(self, token_ids, maker_amounts, taker_amounts, sides, salts, fee_rate_bps,
                       nonces, expirations, timestamps, metadatas, builders, neg_risk, threads,
                       out, _Signer signer):
        """A batch in four steps: the call's choices, its nine arguments by name, the
        plan (template order, sequences, columnar runs), the plan run."""
        cdef long long t0 = _clock()
        cdef int workers = _p.parse_threads(threads)
        kind = _ids.parse_out(out)
        pa = _ids.pyarrow() if kind == "arrow" else None
        columns = _arguments(self.version, token_ids, maker_amounts, taker_amounts, sides, salts,
                             fee_rate_bps, nonces, expirations, timestamps, metadatas, builders,
                             neg_risk)
        cdef Py_ssize_t n = _length(columns)
        cdef _Plan plan = _Plan.__new__(_Plan)
        fast = plan.take(columns, &_KINDS[0] if self.version == 1 else &_KINDS2[0], n)
        plan._workers = workers
        result = plan.run(self, n, fast, pa, signer, kind == "bytes")
        global _held_ns, _alone_ns
        t0 = _clock() - t0
        _held_ns = t0 - plan.free_ns
        _alone_ns = t0 - plan.window_ns
        return result


cdef dict _arguments(int version, token_ids, maker_amounts, taker_amounts, sides, salts,
                     fee_rate_bps, nonces, expirations, timestamps, metadatas, builders, neg_risk):
    """The batch's nine arguments by name, in _KINDS (V1) or _KINDS2 (V2/V3) order: the
    other version's fields refused, defaults filled, pyarrow / numpy columns wrapped to be
    read from their buffers (see _columns)."""
    given = (fee_rate_bps, nonces, expirations, timestamps, metadatas, builders)
    if version == 1:
        if timestamps is not UNSET or metadatas is not UNSET or builders is not UNSET:
            _p.check_version_fields(1, given, True)
        columns = {
            "token_ids": token_ids,
            "maker_amounts": maker_amounts,
            "taker_amounts": taker_amounts,
            "sides": sides,
            "salts": salts,
            "fee_rate_bps": 0 if fee_rate_bps is UNSET else fee_rate_bps,
            "nonces": 0 if nonces is UNSET else nonces,
            "expirations": 0 if expirations is UNSET else expirations,
            "neg_risk": neg_risk,
        }
    else:
        if fee_rate_bps is not UNSET or nonces is not UNSET or expirations is not UNSET \
                or timestamps is UNSET:
            _p.check_version_fields(version, given, True)
        columns = {
            "token_ids": token_ids,
            "maker_amounts": maker_amounts,
            "taker_amounts": taker_amounts,
            "sides": sides,
            "salts": salts,
            "timestamps": timestamps,
            "metadatas": None if metadatas is UNSET else metadatas,
            "builders": None if builders is UNSET else builders,
            "neg_risk": neg_risk,
        }
    for name, value in columns.items():
        if type(value) not in _PLAIN and _col.is_columnar(value):
            columns[name] = _col.Column(value, name, _p.COLUMN_KINDS[name])
    return columns


# Types whose answers _parse.is_scalar and _columns.is_columnar are known to give,
# so a batch of a few orders makes no Python call per argument to ask them: lists and
# tuples are sequences, the others scalars, and none is columnar.
cdef frozenset _PLAIN = frozenset((list, tuple, int, str, bool, float, bytes, type(None)))


cdef inline bint _scalar(object value) except -1:
    """``_parse.is_scalar(value)``: its rule, asked only for a type not in _PLAIN."""
    cdef type t = type(value)
    if t is list or t is tuple:
        return False
    if t in _PLAIN:
        return True
    return _p.is_scalar(value)


cdef Py_ssize_t _length(dict columns) except -1:
    """``_parse.batch_length(columns)``, which raises for sequences of other lengths."""
    cdef Py_ssize_t n = -1, size
    for value in columns.values():
        if _scalar(value):
            continue
        size = len(value)
        if n < 0:
            n = size
        elif size != n:
            return _p.batch_length(columns)  # its error, naming both arguments
    return 1 if n < 0 else n
