"""Wallet parsing, the exchange versions and the EIP-712 constants shared by both core twins.

Runs once per ``OrderHasher``; each twin passes its own Keccak-256 so the
compiled twin's constants are computed by the compiled hash. The exchange
contracts clobkit knows, and the order version each one implies, live here
and nowhere else (see docs/exchange-versions.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import OrderFieldError
from .types import record

TYPE_CHECKING = False  # typing stays off ``import clobkit``'s path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NamedTuple
else:
    NamedTuple = object  # @record makes the named tuple

ORDER_TYPE = (
    "Order(uint256 salt,address maker,address signer,address taker,uint256 tokenId,"
    "uint256 makerAmount,uint256 takerAmount,uint256 expiration,uint256 nonce,"
    "uint256 feeRateBps,uint8 side,uint8 signatureType)"
)
# V2 and V3 share one struct; only the domain's version differs.
ORDER_TYPE_V2 = (
    "Order(uint256 salt,address maker,address signer,uint256 tokenId,"
    "uint256 makerAmount,uint256 takerAmount,uint8 side,uint8 signatureType,"
    "uint256 timestamp,bytes32 metadata,bytes32 builder)"
)
ORDER_TYPES = {1: ORDER_TYPE, 2: ORDER_TYPE_V2, 3: ORDER_TYPE_V2}
DOMAIN_TYPE = "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
DOMAIN_NAME = "Polymarket CTF Exchange"
DOMAIN_VERSIONS = {1: "1", 2: "2", 3: "3"}
DOMAIN_VERSION = DOMAIN_VERSIONS[1]
VERSIONS = (1, 2, 3)
UINT256_MAX = (1 << 256) - 1

# Exchange contracts by order version, from py-clob-client-v2's contract
# config (py_clob_client_v2/config.py): Polygon (137) and the Amoy test chain
# (80002) share the V1 NegRisk and both V2 contracts; Amoy has its own V1 CTF
# and V3 contracts. Any other address is the API text's V1 flow unless the
# wallet's other exchange is a known V2/V3 contract.
V1_CTF_EXCHANGE = "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E"
V1_NEG_RISK_EXCHANGE = "0xC5d563A36AE78145C45a50134d48A1215220f80a"
V2_CTF_EXCHANGE = "0xE111180000d2663C0091e4f400237545B87B996B"
V2_NEG_RISK_EXCHANGE = "0xe2222d279d744050d28e00520010520000310F59"
V3_EXCHANGE = "0xe3333700cA9d93003F00f0F71f8515005F6c00Aa"
AMOY_V1_CTF_EXCHANGE = "0xdFE02Eb6733538f8Ea35D585af8DE5958AD99E40"
AMOY_V3_EXCHANGE = "0x9fE6e61422AdB6F610d8597F9684b16912D50C3D"
EXCHANGE_VERSIONS = {
    V1_CTF_EXCHANGE: 1,
    V1_NEG_RISK_EXCHANGE: 1,
    AMOY_V1_CTF_EXCHANGE: 1,
    V2_CTF_EXCHANGE: 2,
    V2_NEG_RISK_EXCHANGE: 2,
    V3_EXCHANGE: 3,
    AMOY_V3_EXCHANGE: 3,
}
_VERSION_OF = {bytes.fromhex(a[2:]): v for a, v in EXCHANGE_VERSIONS.items()}
# A wallet's (ctf_exchange, neg_risk_exchange) for each version: V3 has one contract.
EXCHANGES_OF_VERSION = {
    1: (V1_CTF_EXCHANGE, V1_NEG_RISK_EXCHANGE),
    2: (V2_CTF_EXCHANGE, V2_NEG_RISK_EXCHANGE),
    3: (V3_EXCHANGE, V3_EXCHANGE),
}
CHAINS = {137: "Polygon", 80002: "Polygon Amoy"}  # known; any positive chain id is accepted
# The exchanges' SignatureType enum: EOA, POLY_PROXY, POLY_GNOSIS_SAFE, POLY_1271 (V2/V3 only).
SIGNATURE_TYPES = {0: "EOA", 1: "POLY_PROXY", 2: "POLY_GNOSIS_SAFE", 3: "POLY_1271"}
POLY_1271 = 3

_HEX = frozenset("0123456789abcdefABCDEF")
_WALLET_FIELDS = (
    "maker",
    "signer",
    "chain_id",
    "signature_type",
    "ctf_exchange",
    "neg_risk_exchange",
)


@record
class PreparedWallet(NamedTuple):
    """The 32-byte ABI words an order hash needs that depend only on the wallet."""

    typehash: bytes
    maker: bytes
    signer: bytes
    taker: bytes
    signature_type: bytes
    domain_ctf: bytes
    domain_neg_risk: bytes
    chain_id: int
    signature_type_value: int
    version: int
    maker_address: str
    signer_address: str


def parse_address(value: object, field: str, keccak256: Callable[[bytes], bytes]) -> bytes:
    """20 address bytes from ``0x`` + 40 hex; mixed case must be a valid EIP-55 checksum."""
    if not isinstance(value, str):
        raise OrderFieldError(field, value, "must be a 0x-prefixed hex address string")
    if len(value) != 42 or value[:2] not in ("0x", "0X") or not _HEX.issuperset(value[2:]):
        raise OrderFieldError(field, value, "must be 0x followed by 40 hex digits")
    body = value[2:]
    if body != body.lower() and body != body.upper() and body != checksum(body.lower(), keccak256):
        raise OrderFieldError(field, value, "fails its EIP-55 checksum (mistyped address?)")
    return bytes.fromhex(body)


def checksum(lower_hex: str, keccak256: Callable[[bytes], bytes]) -> str:
    """EIP-55 mixed-case form of 40 lowercase hex digits (no 0x)."""
    digest = keccak256(lower_hex.encode("ascii")).hex()
    return "".join(
        c.upper() if int(h, 16) >= 8 else c for c, h in zip(lower_hex, digest, strict=False)
    )


def _small_int(value: object, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.isascii() and value.isdigit():
            if len(value.lstrip("0")) > len(str(high)):  # before int(): the digit limit
                raise OrderFieldError(field, value, f"must lie in [{low}, {high}]")
            value = int(value.lstrip("0") or "0")
        else:
            raise OrderFieldError(field, value, "must be an integer")
    if not low <= value <= high:
        raise OrderFieldError(field, value, f"must lie in [{low}, {high}]")
    return value


def wallet_data(wallet: object) -> object:
    """The ``GET /wallet`` data of a saved answer (``{"success": true, "data": {...}}``);
    any other wallet as given. The one reading of a wallet's envelope: the hashers,
    ``clobkit.dask`` and ``clobkit order-ids --wallet`` all take both forms."""
    if isinstance(wallet, Mapping) and ("success" in wallet or list(wallet) == ["data"]):
        if wallet.get("success", True) is not True:
            raise OrderFieldError("wallet", wallet, f"is a failed response: {wallet.get('error')}")
        return wallet.get("data")
    return wallet


def _field(wallet: object, name: str) -> object:
    if isinstance(wallet, Mapping):
        if name not in wallet:
            raise OrderFieldError(f"wallet.{name}", None, "is missing")
        return wallet[name]
    try:
        return getattr(wallet, name)
    except AttributeError:
        raise OrderFieldError(f"wallet.{name}", None, "is missing") from None


def parse_version(value: object) -> int | None:
    """``OrderHasher``'s ``version=``: None (from the wallet), 1, 2 or 3."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value in VERSIONS:
        return int(value)
    raise OrderFieldError("version", value, "must be None (from the wallet), 1, 2 or 3")


def exchange_version(ctf: bytes, neg_risk: bytes, neg_risk_text: object) -> int:
    """The order version a wallet's two exchange addresses imply.

    A known contract decides; an unknown one is neutral (a V3 wallet may pair
    the V3 contract with any NegRisk address); two unknown ones are the API
    text's V1 flow. Two known contracts of different versions are refused:
    one of the two ids would match nothing.
    """
    a, b = _VERSION_OF.get(ctf), _VERSION_OF.get(neg_risk)
    if a is not None and b is not None and a != b:
        raise OrderFieldError(
            "wallet.neg_risk_exchange",
            neg_risk_text,
            f"is a V{b} exchange but wallet.ctf_exchange is a V{a} one "
            "(pass OrderHasher(..., version=) to choose one)",
        )
    return a or b or 1


def prepare_wallet(
    wallet: object, keccak256: Callable[[bytes], bytes], version: object = None
) -> PreparedWallet:
    """Validate a ``WalletInfo``, ``GET /wallet`` data mapping or its saved envelope and
    derive the constant words.

    ``version`` None picks the order version from the exchange addresses; an
    explicit 1, 2 or 3 wins over them.
    """
    chosen = parse_version(version)
    wallet = wallet_data(wallet)
    values = {name: _field(wallet, name) for name in _WALLET_FIELDS}
    maker = parse_address(values["maker"], "wallet.maker", keccak256)
    signer = parse_address(values["signer"], "wallet.signer", keccak256)
    ctf = parse_address(values["ctf_exchange"], "wallet.ctf_exchange", keccak256)
    neg = parse_address(values["neg_risk_exchange"], "wallet.neg_risk_exchange", keccak256)
    chain_id = _small_int(values["chain_id"], "wallet.chain_id", 1, UINT256_MAX)
    sig_type = _small_int(values["signature_type"], "wallet.signature_type", 0, 3)
    v = chosen if chosen is not None else exchange_version(ctf, neg, values["neg_risk_exchange"])
    if sig_type == POLY_1271 and v == 1:
        raise OrderFieldError(
            "wallet.signature_type",
            values["signature_type"],
            "3 (POLY_1271) exists only on V2 and V3 exchanges, and this wallet's are V1",
        )

    def word(raw: bytes) -> bytes:
        return raw.rjust(32, b"\0")

    domain_head = (
        keccak256(DOMAIN_TYPE.encode())
        + keccak256(DOMAIN_NAME.encode())
        + keccak256(DOMAIN_VERSIONS[v].encode())
        + chain_id.to_bytes(32, "big")
    )
    return PreparedWallet(
        typehash=keccak256(ORDER_TYPES[v].encode()),
        maker=word(maker),
        signer=word(signer),
        taker=bytes(32),
        signature_type=sig_type.to_bytes(32, "big"),
        domain_ctf=keccak256(domain_head + word(ctf)),
        domain_neg_risk=keccak256(domain_head + word(neg)),
        chain_id=chain_id,
        signature_type_value=sig_type,
        version=v,
        maker_address="0x" + checksum(maker.hex(), keccak256),
        signer_address="0x" + checksum(signer.hex(), keccak256),
    )
