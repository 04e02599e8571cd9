"""Pure-Python twin of the core: the reference the compiled twin is held to.

Same names, signatures and exceptions as ``clobkit.core._core_c``. Everything here
is exact: amounts are integer arithmetic on parsed decimal digits (no binary
floating point), hashes come from pycryptodome (Keccak) and hashlib/hmac.

Its validators (``clobkit.core.parse``) and exact amounts (``clobkit.core.amounts_pure``)
are shared: the compiled twin calls them on its slow path, so both twins reject
bad input with the same class and the same message, and never imports this
module (nor pycryptodome).
"""

from __future__ import annotations

import hashlib
import hmac
import os

from ..errors import SignatureInputError
from .amounts_pure import from_units as from_units
from .amounts_pure import limit_amounts as limit_amounts
from .amounts_pure import market_amounts as market_amounts
from .amounts_pure import market_price as market_price
from .amounts_pure import to_units as to_units
from .arrow_ids import id_array, offsets, parse_out, pyarrow
from .columns import Column, is_columnar, nullable
from .keccak_pure import keccak256 as keccak256
from .parse import (
    _SALT_SPAN,
    COLUMN_KINDS,
    SALT_REJECT_FROM,
    UNSET,
    V1_COLUMNS,
    V2_COLUMNS,
    _now_ms,
    as_bytes,
    batch_length,
    changed_length_error,
    check_version_fields,
    column_size_error,
    is_scalar,
    iter_requests,
    parse_body,
    parse_count,
    parse_flag,
    parse_method,
    parse_path,
    parse_secret,
    parse_side,
    parse_threads,
    parse_timestamp,
    parse_token,
    parse_uint256,
    parse_width,
    parse_word,
)
from .parse import (
    salts_from_bytes as salts_from_bytes,
)
from .types import CORE_API
from .wallet import prepare_wallet

TYPE_CHECKING = False  # typing stays off ``import clobkit``'s path
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any, overload

__all__ = list(CORE_API)  # the twins' one list of names


def new_salts(n: int) -> list[int]:
    """``n`` salts, each uniform on [0, 10**12], from the OS CSPRNG."""
    parse_count(n)
    out: list[int] = []
    while len(out) < n:
        need = n - len(out)
        out += salts_from_bytes(os.urandom(8 * need + 8), need)
    return out


def new_salt() -> int:
    """One salt, uniform on [0, 10**12], from the OS CSPRNG."""
    while True:
        draw = int.from_bytes(os.urandom(8), "little")
        if draw < SALT_REJECT_FROM:
            return draw % _SALT_SPAN


# ---------------------------------------------------------------------------
# Order ids


class OrderHasher:
    """The exchange's ``clob_order_id`` (EIP-712 order digest) for one wallet, offline.

    ``wallet`` is a ``WalletInfo`` or the ``data`` mapping of ``GET /wallet``.
    ``version`` (1, 2 or 3) is the exchange's order format; None takes it from
    the wallet's exchange addresses (docs/exchange-versions.md). Domain
    separators and the wallet's constant words are computed once here.
    """

    __slots__ = ("_domains", "_prepared", "_tail")

    def __init__(self, wallet: object, *, version: int | None = None) -> None:
        p = prepare_wallet(wallet, keccak256, version)
        self._prepared = p
        self._tail = p.maker + p.signer + (p.taker if p.version == 1 else b"")
        self._domains = (b"\x19\x01" + p.domain_ctf, b"\x19\x01" + p.domain_neg_risk)

    def __repr__(self) -> str:
        p = self._prepared
        return (
            f"OrderHasher(maker=0x{p.maker[12:].hex()}, chain_id={p.chain_id}, version={p.version})"
        )

    @property
    def version(self) -> int:
        """The exchange's order format: 1, 2 or 3."""
        return self._prepared.version

    @property
    def signature_type(self) -> int:
        """The wallet's signature type: 0 EOA, 1 POLY_PROXY, 2 POLY_GNOSIS_SAFE, 3 POLY_1271."""
        return self._prepared.signature_type_value

    @property
    def chain_id(self) -> int:
        """The EIP-712 domain's chain id (137 Polygon, 80002 Amoy)."""
        return self._prepared.chain_id

    @property
    def maker(self) -> str:
        """The order's maker address, EIP-55."""
        return self._prepared.maker_address

    @property
    def signer(self) -> str:
        """The order's signer address, EIP-55."""
        return self._prepared.signer_address

    def domain_separator(self, neg_risk: bool = False) -> bytes:
        """The 32-byte EIP-712 domain separator of the CTF (or NegRisk) exchange."""
        return self._domains[parse_flag(neg_risk, "neg_risk")][2:]

    def _message(
        self,
        token_id: int,
        maker_amount: int,
        taker_amount: int,
        side: int,
        salt: int,
        a: int,
        b: int,
        c: int,
    ) -> bytes:
        """The struct encoding; ``a, b, c`` are fee, nonce, expiration (V1) or
        timestamp, metadata, builder (V2/V3)."""
        p = self._prepared
        if p.version == 1:
            words = (salt, token_id, maker_amount, taker_amount, c, b, a, side)
            return b"".join(
                (
                    p.typehash,
                    words[0].to_bytes(32, "big"),
                    self._tail,
                    b"".join(w.to_bytes(32, "big") for w in words[1:]),
                    p.signature_type,
                )
            )
        return b"".join(
            (
                p.typehash,
                salt.to_bytes(32, "big"),
                self._tail,
                b"".join(
                    w.to_bytes(32, "big") for w in (token_id, maker_amount, taker_amount, side)
                ),
                p.signature_type,
                b"".join(w.to_bytes(32, "big") for w in (a, b, c)),
            )
        )

    def _digest(self, fields: tuple[int, int, int, int, int, int, int, int], neg_risk: bool) -> str:
        return "0x" + keccak256(self._domains[neg_risk] + keccak256(self._message(*fields))).hex()

    def _fields(
        self,
        token_id: object,
        maker_amount: object,
        taker_amount: object,
        side: object,
        salt: object,
        given: tuple[object, object, object, object, object, object],
    ) -> tuple[int, int, int, int, int, int, int, int]:
        """Check the version's fields, then parse them in signature order."""
        version = self._prepared.version
        check_version_fields(version, given)
        head = (
            parse_uint256(token_id, "token_id"),
            parse_uint256(maker_amount, "maker_amount"),
            parse_uint256(taker_amount, "taker_amount"),
            parse_side(side),
            parse_uint256(salt, "salt"),
        )
        if version == 1:
            fee, nonce, expiration = (0 if v is UNSET else v for v in given[:3])
            return (
                *head,
                parse_uint256(fee, "fee_rate_bps"),
                parse_uint256(nonce, "nonce"),
                parse_uint256(expiration, "expiration"),
            )
        timestamp, metadata, builder = given[3:]
        return (
            *head,
            parse_uint256(timestamp, "timestamp"),
            parse_word(None if metadata is UNSET else metadata, "metadata"),
            parse_word(None if builder is UNSET else builder, "builder"),
        )

    def order_id(
        self,
        *,
        token_id: object,
        maker_amount: object,
        taker_amount: object,
        side: object,
        salt: object,
        fee_rate_bps: object = UNSET,
        nonce: object = UNSET,
        expiration: object = UNSET,
        timestamp: object = UNSET,
        metadata: object = UNSET,
        builder: object = UNSET,
        neg_risk: object = False,
    ) -> str:
        """The ``clob_order_id`` of one order: ``"0x"`` + 64 lowercase hex digits.

        V1 orders take ``fee_rate_bps``, ``nonce``, ``expiration`` (0 when
        left out); V2/V3 orders take ``timestamp`` (ms, required) and the
        bytes32 ``metadata`` and ``builder`` (zero when left out). A field of
        the other version is an ``OrderFieldError``.
        """
        given = (fee_rate_bps, nonce, expiration, timestamp, metadata, builder)
        fields = self._fields(token_id, maker_amount, taker_amount, side, salt, given)
        return self._digest(fields, parse_flag(neg_risk, "neg_risk"))

    def struct_hash(
        self,
        *,
        token_id: object,
        maker_amount: object,
        taker_amount: object,
        side: object,
        salt: object,
        fee_rate_bps: object = UNSET,
        nonce: object = UNSET,
        expiration: object = UNSET,
        timestamp: object = UNSET,
        metadata: object = UNSET,
        builder: object = UNSET,
        neg_risk: object = False,
    ) -> bytes:
        """The 32-byte EIP-712 ``hashStruct`` of the order (same keywords as ``order_id``)."""
        given = (fee_rate_bps, nonce, expiration, timestamp, metadata, builder)
        fields = self._fields(token_id, maker_amount, taker_amount, side, salt, given)
        parse_flag(neg_risk, "neg_risk")
        return keccak256(self._message(*fields))

    if TYPE_CHECKING:  # the overloads are for type checkers only

        @overload
        def order_ids(
            self,
            *,
            token_ids: object,
            maker_amounts: object,
            taker_amounts: object,
            sides: object,
            salts: object,
            fee_rate_bps: object = UNSET,
            nonces: object = UNSET,
            expirations: object = UNSET,
            timestamps: object = UNSET,
            metadatas: object = UNSET,
            builders: object = UNSET,
            neg_risk: object = False,
            threads: int | None = None,
        ) -> list[str]: ...
        @overload
        def order_ids(
            self,
            *,
            token_ids: object,
            maker_amounts: object,
            taker_amounts: object,
            sides: object,
            salts: object,
            fee_rate_bps: object = UNSET,
            nonces: object = UNSET,
            expirations: object = UNSET,
            timestamps: object = UNSET,
            metadatas: object = UNSET,
            builders: object = UNSET,
            neg_risk: object = False,
            threads: int | None = None,
            out: str,
        ) -> Any: ...

    def order_ids(
        self,
        *,
        token_ids: object,
        maker_amounts: object,
        taker_amounts: object,
        sides: object,
        salts: object,
        fee_rate_bps: object = UNSET,
        nonces: object = UNSET,
        expirations: object = UNSET,
        timestamps: object = UNSET,
        metadatas: object = UNSET,
        builders: object = UNSET,
        neg_risk: object = False,
        threads: int | None = None,
        out: str = "list",
    ) -> Any:
        """``clob_order_id`` of each order of a batch; each argument a sequence or a scalar.

        A list of ``"0x…"`` strings, or with ``out="arrow"`` one pyarrow string
        array of them (needs pyarrow), with ``out="bytes"`` one ``bytes`` of them
        back to back (see ``clobkit.core.arrow_ids``).
        """
        parse_threads(threads)
        kind = parse_out(out)
        pa = pyarrow() if kind == "arrow" else None
        version = self._prepared.version
        given = (fee_rate_bps, nonces, expirations, timestamps, metadatas, builders)
        check_version_fields(version, given, batch=True)
        columns: dict[str, Any] = {
            "token_ids": token_ids,
            "maker_amounts": maker_amounts,
            "taker_amounts": taker_amounts,
            "sides": sides,
            "salts": salts,
        }
        if version == 1:
            for name, value in zip(V1_COLUMNS, given[:3], strict=True):
                columns[name] = 0 if value is UNSET else value
        else:
            for name, value in zip(V2_COLUMNS, given[3:], strict=True):
                columns[name] = None if value is UNSET else value
        columns["neg_risk"] = neg_risk
        tok, mak, tak, sid, sal, a, b, c, neg = parsed = _parse_columns(columns)
        n = len(parsed[0])
        ids = [
            self._digest((tok[i], mak[i], tak[i], sid[i], sal[i], a[i], b[i], c[i]), neg[i])
            for i in range(n)
        ]
        if kind == "bytes":
            return "".join(ids).encode("ascii")
        if pa is None:
            return ids
        return id_array(pa, "".join(ids).encode("ascii"), offsets(n), n)

    def sign(self, signer: Any, **order: Any) -> Any:
        """Hash and sign one order: ``SignedOrder(order_id, signature)`` (see clobkit.signing)."""
        from ..signing.hasher import sign_order

        return sign_order(self, signer, order)

    def sign_many(self, signer: Any, *, threads: int | None = None, **columns: Any) -> Any:
        """Hash and sign a batch (``order_ids``' keywords): a list of ``SignedOrder``."""
        from ..signing.hasher import sign_orders

        return sign_orders(self, signer, columns, threads)


def _parse_columns(columns: dict[str, Any]) -> list[list[Any]]:
    """Each column of ``order_ids`` as a list of parsed values, one per order.

    Scalars first, then the sequences row by row: the first bad value in that
    order is the one named, as in the compiled twin.
    """
    # pyarrow / numpy columns as the list path takes them (nulls refused per row)
    columnar = [name for name, value in columns.items() if is_columnar(value)]
    for name in columnar:
        columns[name] = Column(columns[name], name, COLUMN_KINDS[name]).values()
    n = batch_length(columns)
    parsed: list[list[Any]] = []
    sequences: list[tuple[list[Any], Sequence[Any], str, Any]] = []
    for name, value in columns.items():
        parse = _COLUMN_PARSERS.get(name, parse_uint256)
        if name in columnar:
            parse = nullable(parse)
        if is_scalar(value):
            parsed.append([parse(value, name)] * n)
        else:
            column: list[Any] = [None] * n
            parsed.append(column)
            sequences.append((column, value, name, parse))
    try:
        for i in range(n):
            for column, value, name, parse in sequences:
                column[i] = parse(value[i], f"{name}[{i}]")
    except IndexError:  # a list shortened meanwhile (by another thread, or a value's code)
        for _, value, name, _ in sequences:
            if len(value) != n:
                raise changed_length_error(name, len(value)) from None
        raise
    return parsed


#: the parser of each ``order_ids`` column that is not a uint256
_COLUMN_PARSERS: dict[str, Any] = {
    "sides": parse_side,
    "neg_risk": parse_flag,
    "metadatas": parse_word,
    "builders": parse_word,
}


def append_column(lines: object, values: object, width: object) -> bytes:
    """Each line of ``lines`` + ``,`` + its ``width``-byte value from ``values``, LF-ended.

    ``lines``: bytes-like, lines ending in LF or CRLF (the last may lack one);
    ``values``: bytes-like, ``width`` bytes per line, back to back. Returns bytes.
    """
    src, vals = as_bytes(lines, "lines"), as_bytes(values, "values")
    w = parse_width(width)
    rows = src.split(b"\n")
    if rows[-1] == b"":  # after the last LF (or an empty input): no line
        rows.pop()
    if len(vals) != len(rows) * w:
        raise column_size_error(len(vals), len(rows), w)
    out = []
    for k, row in enumerate(rows):
        out.append(row[:-1] if row.endswith(b"\r") else row)
        out.append(b"," + vals[k * w : (k + 1) * w] + b"\n")
    return b"".join(out)


def csv_columns(block: object, width: object, columns: object) -> Any:
    """A block of plain CSV lines read into columns: ``(rows, [column, ...])`` or ``None``
    (``clobkit.core.csv_columns``, loaded on first use: its rule and this twin's body)."""
    from .csv_columns import csv_columns as read

    return read(block, width, columns)


def sha256_hex(data: bytes) -> str:
    """Lowercase hex SHA-256 of ``data`` (any bytes-like object)."""
    return hashlib.sha256(as_bytes(data, "data")).hexdigest()


def _signing_string(method: str, path: str, ts: str, nonce: str, body: bytes) -> bytes:
    return f"{method}\n{path}\n{ts}\n{nonce}\n{hashlib.sha256(body).hexdigest()}".encode("ascii")


def signature(
    secret: object,
    method: object,
    path: object,
    timestamp: object,
    nonce: object,
    body: object = b"",
) -> str:
    """Lowercase hex HMAC-SHA256 of METHOD\\nPATH\\nTIMESTAMP\\nNONCE\\nhex(SHA-256(body))."""
    message = _signing_string(
        parse_method(method),
        parse_path(path),
        parse_timestamp(timestamp),
        parse_token(nonce, "nonce"),
        parse_body(body),
    )
    return hmac.new(parse_secret(secret), message, hashlib.sha256).hexdigest()


def verify_signature(
    secret: object,
    method: object,
    path: object,
    timestamp: object,
    nonce: object,
    body: object,
    sig: object,
) -> bool:
    """True when ``sig`` is the signature of the request; compared in constant time.

    Inputs that cannot have been signed (a malformed path, nonce, signature)
    verify as False; only a bad secret raises.
    """
    key = parse_secret(secret)
    if not isinstance(sig, str) or not str.isascii(sig):
        return False
    sig = str.__str__(sig)
    try:
        expected = signature(key, method, path, timestamp, nonce, body)
    except SignatureInputError:
        return False
    return hmac.compare_digest(expected, sig)


class RequestSigner:
    """Signs requests with one API key: the four ``X-API-*`` headers.

    With ``sign_query=True`` (the default, as in the API's cURL examples) the
    signed PATH includes the query string exactly as sent; ``False`` signs the
    bare path. The secret never appears in ``repr`` or errors.
    """

    __slots__ = ("_key", "_mac", "api_key", "sign_query")

    def __init__(self, api_key: str, api_secret: str | bytes, *, sign_query: bool = True) -> None:
        self.api_key = parse_token(api_key, "api_key")
        self._key = parse_secret(api_secret)
        self._mac = hmac.new(self._key, digestmod=hashlib.sha256)
        self.sign_query = parse_flag(sign_query, "sign_query")

    def __repr__(self) -> str:
        return f"RequestSigner(api_key={self.api_key!r}, sign_query={self.sign_query})"

    def headers(
        self,
        method: str,
        path: str,
        body: bytes | str = b"",
        *,
        timestamp_ms: int | None = None,
        nonce: str | None = None,
    ) -> dict[str, str]:
        """``X-API-KEY``, ``-TIMESTAMP`` (ms), ``-NONCE`` (32 hex) and ``-SIGNATURE``."""
        m = parse_method(method)
        p = parse_path(path)
        if not self.sign_query:
            p = p.partition("?")[0]
        ts = parse_timestamp(_now_ms() if timestamp_ms is None else timestamp_ms)
        n = os.urandom(16).hex() if nonce is None else parse_token(nonce, "nonce")
        mac = self._mac.copy()
        mac.update(_signing_string(m, p, ts, n, parse_body(body)))
        return {
            "X-API-KEY": self.api_key,
            "X-API-TIMESTAMP": ts,
            "X-API-NONCE": n,
            "X-API-SIGNATURE": mac.hexdigest(),
        }

    def headers_many(self, requests: Iterable[Sequence[Any]]) -> list[dict[str, str]]:
        """Headers for each ``(method, path)`` or ``(method, path, body)`` of a batch."""
        out = []
        for i, request in enumerate(iter_requests(requests)):
            if not isinstance(request, (tuple, list)) or len(request) not in (2, 3):
                raise SignatureInputError(
                    f"requests[{i}]", request, "must be (method, path) or (method, path, body)"
                )
            out.append(self.headers(*request))
        return out
