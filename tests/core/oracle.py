"""Independent oracles the core is held to.

``decimal_*_amounts`` restate the rounding rules (docs/raw-orders.md,
"Decisions") literally in ``decimal.Decimal`` (a size or amount with more than 2 dp is refused with
``ValueError``, multiply or divide, round up at amount decimals + 4 then down at
amount decimals, scale by 10**6), the way a careful reader of the rules would
write them, sharing no code with clobkit.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext

ROUND = {"0.1": (1, 3), "0.01": (2, 4), "0.001": (3, 5), "0.0001": (4, 6)}  # price, amount decimals


def _dp(x: Decimal) -> int:
    return max(0, -x.normalize().as_tuple().exponent)  # type: ignore[operator]


def _down(x: Decimal, places: int) -> Decimal:
    return x.quantize(Decimal(1).scaleb(-places), rounding=ROUND_FLOOR)


def _up(x: Decimal, places: int) -> Decimal:
    return x.quantize(Decimal(1).scaleb(-places), rounding=ROUND_CEILING)


def _fit(x: Decimal, amount_dp: int) -> Decimal:
    if _dp(x) > amount_dp:
        x = _up(x, amount_dp + 4)
        if _dp(x) > amount_dp:
            x = _down(x, amount_dp)
    return x


def _hundredths(x: Decimal, name: str) -> Decimal:
    if _dp(x) > 2:
        raise ValueError(f"{name} {x} has more than 2 decimals")
    return x


def _units(x: Decimal) -> int:
    scaled = x * 10**6
    assert scaled == scaled.to_integral_value()
    return int(scaled)


def decimal_limit_amounts(side: str, price: str, size: str, tick: str = "0.01") -> tuple[int, int]:
    with localcontext() as ctx:
        ctx.prec = 120
        _, amount_dp = ROUND[tick]
        p = Decimal(price)
        shares = _hundredths(Decimal(size), "size")
        usdc = _fit(shares * p, amount_dp)
        if side == "BUY":
            return _units(usdc), _units(shares)
        return _units(shares), _units(usdc)


def decimal_market_amounts(
    side: str, price: str, amount: str, tick: str = "0.01"
) -> tuple[int, int]:
    with localcontext() as ctx:
        ctx.prec = 120
        _, amount_dp = ROUND[tick]
        p = Decimal(price)
        maker = _hundredths(Decimal(amount), "amount")
        taker = _fit(maker / p, amount_dp) if side == "BUY" else _fit(maker * p, amount_dp)
        return _units(maker), _units(taker)


ORDER_FIELDS = [
    ("salt", "uint256"),
    ("maker", "address"),
    ("signer", "address"),
    ("taker", "address"),
    ("tokenId", "uint256"),
    ("makerAmount", "uint256"),
    ("takerAmount", "uint256"),
    ("expiration", "uint256"),
    ("nonce", "uint256"),
    ("feeRateBps", "uint256"),
    ("side", "uint8"),
    ("signatureType", "uint8"),
]


def eth_account_order_id(wallet: dict[str, object], order: dict[str, int], neg_risk: bool) -> str:
    """The EIP-712 digest of the Order as eth-account computes it (encode_typed_data)."""
    from eth_account.messages import _hash_eip191_message, encode_typed_data

    contract = wallet["neg_risk_exchange"] if neg_risk else wallet["ctf_exchange"]
    message = {
        "salt": order["salt"],
        "maker": wallet["maker"],
        "signer": wallet["signer"],
        "taker": "0x" + "00" * 20,
        "tokenId": order["token_id"],
        "makerAmount": order["maker_amount"],
        "takerAmount": order["taker_amount"],
        "expiration": order["expiration"],
        "nonce": order["nonce"],
        "feeRateBps": order["fee_rate_bps"],
        "side": order["side"],
        "signatureType": wallet["signature_type"],
    }
    signable = encode_typed_data(
        full_message={
            "types": {
                "EIP712Domain": [
                    {"name": "name", "type": "string"},
                    {"name": "version", "type": "string"},
                    {"name": "chainId", "type": "uint256"},
                    {"name": "verifyingContract", "type": "address"},
                ],
                "Order": [{"name": n, "type": t} for n, t in ORDER_FIELDS],
            },
            "primaryType": "Order",
            "domain": {
                "name": "Polymarket CTF Exchange",
                "version": "1",
                "chainId": wallet["chain_id"],
                "verifyingContract": contract,
            },
            "message": message,
        }
    )
    return "0x" + _hash_eip191_message(signable).hex()


ORDER_FIELDS_V2 = [
    ("salt", "uint256"),
    ("maker", "address"),
    ("signer", "address"),
    ("tokenId", "uint256"),
    ("makerAmount", "uint256"),
    ("takerAmount", "uint256"),
    ("side", "uint8"),
    ("signatureType", "uint8"),
    ("timestamp", "uint256"),
    ("metadata", "bytes32"),
    ("builder", "bytes32"),
]


def _word(value: object) -> bytes:
    """A bytes32 as given to clobkit (None, 32 bytes or 0x hex) as eth-account wants it."""
    if value is None:
        return bytes(32)
    if isinstance(value, str):
        return bytes.fromhex(value[2:])
    assert isinstance(value, (bytes, bytearray))
    return bytes(value)


def eth_account_order_id_v2(
    wallet: Mapping[str, object], order: Mapping[str, object], neg_risk: bool, version: int = 2
) -> str:
    """The EIP-712 digest of a V2/V3 Order (domain version "2" or "3") by eth-account."""
    from eth_account.messages import _hash_eip191_message, encode_typed_data

    contract = wallet["neg_risk_exchange"] if neg_risk else wallet["ctf_exchange"]
    message = {
        "salt": int(order["salt"]),  # type: ignore[call-overload]
        "maker": wallet["maker"],
        "signer": wallet["signer"],
        "tokenId": int(order["token_id"]),  # type: ignore[call-overload]
        "makerAmount": int(order["maker_amount"]),  # type: ignore[call-overload]
        "takerAmount": int(order["taker_amount"]),  # type: ignore[call-overload]
        "side": order["side"],
        "signatureType": wallet["signature_type"],
        "timestamp": int(order["timestamp"]),  # type: ignore[call-overload]
        "metadata": _word(order.get("metadata")),
        "builder": _word(order.get("builder")),
    }
    signable = encode_typed_data(
        full_message={
            "types": {
                "EIP712Domain": [
                    {"name": "name", "type": "string"},
                    {"name": "version", "type": "string"},
                    {"name": "chainId", "type": "uint256"},
                    {"name": "verifyingContract", "type": "address"},
                ],
                "Order": [{"name": n, "type": t} for n, t in ORDER_FIELDS_V2],
            },
            "primaryType": "Order",
            "domain": {
                "name": "Polymarket CTF Exchange",
                "version": str(version),
                "chainId": wallet["chain_id"],
                "verifyingContract": contract,
            },
            "message": message,
        }
    )
    return "0x" + _hash_eip191_message(signable).hex()


def eth_abi_struct_hash_v2(wallet: dict[str, object], order: dict[str, object]) -> bytes:
    """keccak256(abi.encode(typehash, fields...)) of a V2 Order, written out with eth-abi."""
    from eth_abi import encode
    from eth_utils import keccak

    typehash = keccak(text="Order(" + ",".join(f"{t} {n}" for n, t in ORDER_FIELDS_V2) + ")")
    values = [
        typehash,
        int(order["salt"]),  # type: ignore[call-overload]
        wallet["maker"],
        wallet["signer"],
        int(order["token_id"]),  # type: ignore[call-overload]
        int(order["maker_amount"]),  # type: ignore[call-overload]
        int(order["taker_amount"]),  # type: ignore[call-overload]
        order["side"],
        wallet["signature_type"],
        int(order["timestamp"]),  # type: ignore[call-overload]
        _word(order.get("metadata")),
        _word(order.get("builder")),
    ]
    types = ["bytes32"] + [t for _, t in ORDER_FIELDS_V2]
    return bytes(keccak(encode(types, values)))


def eth_abi_struct_hash_v1(wallet: dict[str, object], order: dict[str, object]) -> bytes:
    """keccak256(abi.encode(typehash, fields...)) of a V1 Order, written out with eth-abi."""
    from eth_abi import encode
    from eth_utils import keccak

    typehash = keccak(text="Order(" + ",".join(f"{t} {n}" for n, t in ORDER_FIELDS) + ")")
    values = [
        typehash,
        int(order["salt"]),  # type: ignore[call-overload]
        wallet["maker"],
        wallet["signer"],
        "0x" + "00" * 20,
        int(order["token_id"]),  # type: ignore[call-overload]
        int(order["maker_amount"]),  # type: ignore[call-overload]
        int(order["taker_amount"]),  # type: ignore[call-overload]
        int(order.get("expiration", 0)),  # type: ignore[call-overload]
        int(order.get("nonce", 0)),  # type: ignore[call-overload]
        int(order.get("fee_rate_bps", 0)),  # type: ignore[call-overload]
        order["side"],
        wallet["signature_type"],
    ]
    types = ["bytes32"] + [t for _, t in ORDER_FIELDS]
    return bytes(keccak(encode(types, values)))
