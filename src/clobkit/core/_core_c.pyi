"""Signatures of the compiled twin ``clobkit.core._core_c`` (ext/_core_c.pyx and its parts).

The names of ``__all__`` are the twins' contract (``_types.CORE_API``): the same
names, parameters and defaults as ``clobkit.core.pure``, which
tests/core/test_core_stub.py checks against both modules. The rest are the
compiled twin's own: its hash paths and the native signing path's hooks.
"""

from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any, Final

from .types import Amounts

__all__: list[str]

class OrderHasher:
    """The exchange's ``clob_order_id`` (EIP-712 order digest) for one wallet, offline."""

    @property
    def version(self) -> int: ...
    @property
    def signature_type(self) -> int: ...
    @property
    def chain_id(self) -> int: ...
    @property
    def maker(self) -> str: ...
    @property
    def signer(self) -> str: ...
    def __init__(self, wallet: object, *, version: int | None = None) -> None: ...
    def domain_separator(self, neg_risk: bool = False) -> bytes: ...
    def order_id(
        self,
        *,
        token_id: object,
        maker_amount: object,
        taker_amount: object,
        side: object,
        salt: object,
        fee_rate_bps: object = ...,
        nonce: object = ...,
        expiration: object = ...,
        timestamp: object = ...,
        metadata: object = ...,
        builder: object = ...,
        neg_risk: object = False,
    ) -> str: ...
    def struct_hash(
        self,
        *,
        token_id: object,
        maker_amount: object,
        taker_amount: object,
        side: object,
        salt: object,
        fee_rate_bps: object = ...,
        nonce: object = ...,
        expiration: object = ...,
        timestamp: object = ...,
        metadata: object = ...,
        builder: object = ...,
        neg_risk: object = False,
    ) -> bytes: ...
    def order_ids(
        self,
        *,
        token_ids: object,
        maker_amounts: object,
        taker_amounts: object,
        sides: object,
        salts: object,
        fee_rate_bps: object = ...,
        nonces: object = ...,
        expirations: object = ...,
        timestamps: object = ...,
        metadatas: object = ...,
        builders: object = ...,
        neg_risk: object = False,
        threads: int | None = None,
        out: str = "list",
    ) -> Any: ...
    def sign(self, signer: Any, **order: Any) -> Any: ...
    def sign_many(self, signer: Any, *, threads: int | None = None, **columns: Any) -> Any: ...
    def _sign_many(
        self,
        handle: tuple[int, int, int],
        key: int,
        threads: object,
        kwargs: dict[str, Any],
        wrap: tuple[bytes, bytes, bytes] | None = None,
    ) -> list[Any]: ...

class RequestSigner:
    """Signs External Trading API requests (HMAC-SHA256 over method, path, time, nonce, body)."""

    @property
    def api_key(self) -> str: ...
    @property
    def sign_query(self) -> bool: ...
    def __init__(
        self, api_key: str, api_secret: str | bytes, *, sign_query: bool = True
    ) -> None: ...
    def headers(
        self,
        method: str,
        path: str,
        body: bytes | str = b"",
        *,
        timestamp_ms: int | None = None,
        nonce: str | None = None,
    ) -> dict[str, str]: ...
    def headers_many(self, requests: Iterable[Sequence[Any]]) -> list[dict[str, str]]: ...

def append_column(lines: object, values: object, width: object) -> bytes: ...
def csv_columns(block: object, width: object, columns: object) -> Any: ...
def from_units(units: object) -> Decimal: ...
def keccak256(data: bytes) -> bytes: ...
def limit_amounts(
    side: object,
    price: object,
    size: object,
    tick_size: object = "0.01",
    *,
    round_price: bool = False,
) -> Amounts: ...
def market_amounts(
    side: object,
    price: object,
    amount: object,
    tick_size: object = "0.01",
    *,
    round_price: bool = False,
) -> Amounts: ...
def market_price(
    levels: Iterable[object], side: object, amount: object, order_type: object = "FOK"
) -> Decimal: ...
def new_salt() -> int: ...
def new_salts(n: int) -> list[int]: ...
def salts_from_bytes(data: bytes, n: int) -> list[int]: ...
def sha256_hex(data: bytes) -> str: ...
def signature(
    secret: object,
    method: object,
    path: object,
    timestamp: object,
    nonce: object,
    body: object = b"",
) -> str: ...
def to_units(value: object, field: str = "value") -> int: ...
def verify_signature(
    secret: object,
    method: object,
    path: object,
    timestamp: object,
    nonce: object,
    body: object,
    sig: object,
) -> bool: ...

# -- the compiled twin's own: its hash paths ------------------------------------------
keccak_impls: Final[dict[str, int]]
keccak_names: Final[dict[int, str]]
sha256_impls: Final[dict[str, int]]

def self_check() -> list[str]: ...
def set_implementation(*, keccak: str | None = None, sha256: str | None = None) -> bool: ...
def implementation() -> dict[str, str]: ...

# -- the native signing path (clobkit.signing): handle = (sign, serialize, context)
# addresses from libsecp256k1, key = the address of the 32 key bytes -------------------
def parse_ids(ids: object) -> bytes | None: ...
def sign_digests(
    handle: tuple[int, int, int], key: int, digests: bytes, threads: object
) -> list[str]: ...
def _secp_check(handle: tuple[int, int, int], key: int, digest: bytes) -> str: ...
def _gil_meter(on: bool) -> bool: ...
def _missed_rows() -> int: ...
def _gil_held_ns() -> int: ...
def _gil_alone_ns() -> int: ...
