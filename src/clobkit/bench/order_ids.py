"""``clobkit bench`` rows for V1 order ids: clobkit against py-order-utils, eth-account, Keccak.

clobkit ``OrderHasher.order_id`` and ``order_ids`` (threads 1 and 2) against
py-order-utils, eth-account ``encode_typed_data`` and a hand-written
pure-Python EIP-712 encoder on pycryptodome's Keccak; every peer's id is
compared with clobkit's on the same orders, on both exchanges.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable, Sequence
from typing import Any

from .. import OrderHasher
from ..core.wallet import V1_CTF_EXCHANGE, V1_NEG_RISK_EXCHANGE
from ._timing import INSTALL_HINT, Contender, Operation, Settings, tally

WALLET: dict[str, Any] = {
    "maker": "0x1111111111111111111111111111111111111111",
    "signer": "0x2222222222222222222222222222222222222222",
    "chain_id": 137,
    "signature_type": 2,
    "ctf_exchange": V1_CTF_EXCHANGE,
    "neg_risk_exchange": V1_NEG_RISK_EXCHANGE,
}
ZERO_ADDRESS = "0x" + "00" * 20
PEER_KEY = "0x" + "42" * 32  # py-order-utils wants a signer key; it never signs here


def make_orders(n: int, seed: int) -> dict[str, list[Any]]:
    """``n`` orders as Python lists: distinct 77-digit token id strings, int amounts and salts."""
    bits = random.Random(seed).getrandbits
    base, span = 10**76, 10**70  # token i lies in [base + i * span, base + (i + 1) * span)
    return {
        "token_ids": [str(base + i * span + bits(232)) for i in range(n)],  # 2**232 < span
        "maker_amounts": [bits(30) + 1 for _ in range(n)],
        "taker_amounts": [bits(30) + 1 for _ in range(n)],
        "sides": [i & 1 for i in range(n)],
        "salts": [bits(39) for _ in range(n)],  # 2**39 < 10**12
    }


def rows_of(batch: dict[str, list[Any]], n: int) -> list[tuple[str, int, int, int, int]]:
    """The first ``n`` orders of a batch as tuples (token_id, maker, taker, side, salt)."""
    return list(
        zip(
            batch["token_ids"][:n],
            batch["maker_amounts"][:n],
            batch["taker_amounts"][:n],
            batch["sides"][:n],
            batch["salts"][:n],
            strict=True,
        )
    )


ORDER_TYPE = (
    b"Order(uint256 salt,address maker,address signer,address taker,uint256 tokenId,"
    b"uint256 makerAmount,uint256 takerAmount,uint256 expiration,uint256 nonce,"
    b"uint256 feeRateBps,uint8 side,uint8 signatureType)"
)
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

# (token_id, maker_amount, taker_amount, side, salt, neg_risk) -> "0x" + 64 hex
OrderIdFn = Callable[[str, int, int, int, int, bool], str]


def pure_python_order_id() -> OrderIdFn:
    """A hand-written EIP-712 encoder on pycryptodome's Keccak, domain separators precomputed."""
    keccak = importlib.import_module("Crypto.Hash.keccak")

    def k(data: bytes) -> bytes:
        return bytes(keccak.new(digest_bits=256, data=data).digest())

    def word(x: int) -> bytes:
        return x.to_bytes(32, "big")

    def address(a: str) -> bytes:
        return bytes(12) + bytes.fromhex(a[2:])

    domain_type = k(
        b"EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
    )

    def domain(contract: str) -> bytes:
        return k(
            domain_type
            + k(b"Polymarket CTF Exchange")
            + k(b"1")
            + word(WALLET["chain_id"])
            + address(contract)
        )

    domains = {False: domain(WALLET["ctf_exchange"]), True: domain(WALLET["neg_risk_exchange"])}
    order_type = k(ORDER_TYPE)
    parties = address(WALLET["maker"]) + address(WALLET["signer"]) + address(ZERO_ADDRESS)
    zeros = word(0) * 3  # expiration, nonce, feeRateBps
    sig_type = word(WALLET["signature_type"])

    def order_id(
        token_id: str, maker_amount: int, taker_amount: int, side: int, salt: int, neg_risk: bool
    ) -> str:
        struct = k(
            order_type
            + word(salt)
            + parties
            + word(int(token_id))
            + word(maker_amount)
            + word(taker_amount)
            + zeros
            + word(side)
            + sig_type
        )
        return "0x" + k(b"\x19\x01" + domains[neg_risk] + struct).hex()

    return order_id


def eth_account_order_id() -> OrderIdFn:
    """eth-account: ``encode_typed_data`` on the full typed message, then its EIP-191 hash."""
    messages = importlib.import_module("eth_account.messages")
    types = {
        "EIP712Domain": [
            {"name": "name", "type": "string"},
            {"name": "version", "type": "string"},
            {"name": "chainId", "type": "uint256"},
            {"name": "verifyingContract", "type": "address"},
        ],
        "Order": [{"name": n, "type": t} for n, t in ORDER_FIELDS],
    }

    def order_id(
        token_id: str, maker_amount: int, taker_amount: int, side: int, salt: int, neg_risk: bool
    ) -> str:
        contract = WALLET["neg_risk_exchange"] if neg_risk else WALLET["ctf_exchange"]
        signable = messages.encode_typed_data(
            full_message={
                "types": types,
                "primaryType": "Order",
                "domain": {
                    "name": "Polymarket CTF Exchange",
                    "version": "1",
                    "chainId": WALLET["chain_id"],
                    "verifyingContract": contract,
                },
                "message": {
                    "salt": salt,
                    "maker": WALLET["maker"],
                    "signer": WALLET["signer"],
                    "taker": ZERO_ADDRESS,
                    "tokenId": int(token_id),
                    "makerAmount": maker_amount,
                    "takerAmount": taker_amount,
                    "expiration": 0,
                    "nonce": 0,
                    "feeRateBps": 0,
                    "side": side,
                    "signatureType": WALLET["signature_type"],
                },
            }
        )
        return "0x" + bytes(messages._hash_eip191_message(signable)).hex()

    return order_id


def py_order_utils_order_id() -> OrderIdFn:
    """py-order-utils: an ``Order`` struct hashed by ``OrderBuilder._create_struct_hash``."""
    builders = importlib.import_module("py_order_utils.builders")
    model = importlib.import_module("py_order_utils.model.order")
    signer = importlib.import_module("py_order_utils.signer").Signer(PEER_KEY)
    chain = WALLET["chain_id"]
    by_risk = {
        False: builders.OrderBuilder(WALLET["ctf_exchange"], chain, signer),
        True: builders.OrderBuilder(WALLET["neg_risk_exchange"], chain, signer),
    }

    def order_id(
        token_id: str, maker_amount: int, taker_amount: int, side: int, salt: int, neg_risk: bool
    ) -> str:
        order = model.Order(
            salt=salt,
            maker=WALLET["maker"],
            signer=WALLET["signer"],
            taker=ZERO_ADDRESS,
            tokenId=int(token_id),
            makerAmount=maker_amount,
            takerAmount=taker_amount,
            expiration=0,
            nonce=0,
            feeRateBps=0,
            side=side,
            signatureType=WALLET["signature_type"],
        )
        return str(by_risk[neg_risk]._create_struct_hash(order))

    return order_id


ORDER_ID_PEERS: list[tuple[str, str, Callable[[], OrderIdFn]]] = [
    ("py-order-utils", "py-order-utils _create_struct_hash(Order)", py_order_utils_order_id),
    ("eth-account", "eth-account encode_typed_data + hash", eth_account_order_id),
    ("pycryptodome", "pure Python EIP-712 + pycryptodome keccak", pure_python_order_id),
]


def order_id_operation(s: Settings, notes: list[str], say: Callable[[str], None]) -> Operation:
    """clobkit order_id / order_ids (threads 1, 2) and the installed peers, per order."""
    say(f"order id: building {s.batch:,} orders")
    batch = make_orders(s.batch, seed=5)
    hasher = OrderHasher(WALLET)
    timing_rows = rows_of(batch, 100)
    checks = [(*row, neg) for row in rows_of(batch, s.checks) for neg in (False, True)]

    def clobkit_id(t: str, m: int, k: int, sd: int, sl: int, neg: bool) -> str:
        return hasher.order_id(
            token_id=t, maker_amount=m, taker_amount=k, side=sd, salt=sl, neg_risk=neg
        )

    expected = [clobkit_id(*row) for row in checks]

    def single(reps: int) -> None:
        oid = hasher.order_id
        for _ in range(reps):
            for t, m, k, sd, sl in timing_rows:
                oid(token_id=t, maker_amount=m, taker_amount=k, side=sd, salt=sl)

    op = Operation("order_id", "order id")
    op.contenders.append(Contender("clobkit order_id", "clobkit", single, len(timing_rows)))
    op.contenders[0].correctness = "reference"

    op.contenders += _batch_contenders(hasher, batch, clobkit_id)
    op.contenders += _peer_contenders(timing_rows, checks, expected, notes)
    return op


def _batch_contenders(
    hasher: OrderHasher, batch: dict[str, list[Any]], clobkit_id: OrderIdFn
) -> list[Contender]:
    """order_ids over the whole batch, threads 1 and 2, each sampled against order_id."""
    n = len(batch["salts"])
    step = max(1, n // 20_000)
    sample = range(0, n, step)
    out_contenders = []
    for threads in (1, 2):

        def many(reps: int, threads: int = threads) -> None:
            for _ in range(reps):
                hasher.order_ids(**batch, threads=threads)

        c = Contender(f"clobkit order_ids ×{n:,}, threads={threads}", "clobkit", many, n)
        out = hasher.order_ids(**batch, threads=threads)
        bad = sum(out[i] != clobkit_id(*row, False) for i, row in _indexed(batch, sample))
        tally(c, len(sample), bad, "= order_id")
        del out
        out_contenders.append(c)
    return out_contenders


def _peer_contenders(
    timing_rows: list[tuple[str, int, int, int, int]],
    checks: list[tuple[str, int, int, int, int, bool]],
    expected: list[str],
    notes: list[str],
) -> list[Contender]:
    """Each installed peer, timed per order and checked against clobkit's ids."""
    out = []
    for package, name, factory in ORDER_ID_PEERS:
        try:
            fn = factory()
        except ImportError as e:
            notes.append(f"{package} not installed ({e.name}): {name} skipped; {INSTALL_HINT}")
            continue

        def peer(reps: int, fn: OrderIdFn = fn) -> None:
            for _ in range(reps):
                for t, m, k, sd, sl in timing_rows:
                    fn(t, m, k, sd, sl, False)

        c = Contender(name, "peer", peer, len(timing_rows))
        bad = sum(fn(*row) != want for row, want in zip(checks, expected, strict=True))
        tally(c, len(checks), bad, "ids equal")
        out.append(c)
    return out


def _indexed(
    batch: dict[str, list[Any]], indexes: Sequence[int]
) -> list[tuple[int, tuple[str, int, int, int, int]]]:
    cols = [batch[k] for k in ("token_ids", "maker_amounts", "taker_amounts", "sides", "salts")]
    return [(i, (cols[0][i], cols[1][i], cols[2][i], cols[3][i], cols[4][i])) for i in indexes]
