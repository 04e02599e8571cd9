"""``clobkit bench``: clobkit against the libraries people use today, in one process.

The same work runs through clobkit and through every peer that is installed
(``pip install 'clobkit[bench]'`` installs them all; a missing one is skipped
with a line saying so):

- order id: clobkit ``OrderHasher.order_id`` and ``order_ids`` (threads 1 and
  2) against py-order-utils, eth-account ``encode_typed_data`` and a
  hand-written pure-Python EIP-712 encoder on pycryptodome's Keccak;
- amounts: ``limit_amounts`` / ``market_amounts`` against py-clob-client's
  ``get_order_amounts`` / ``get_market_order_amounts`` and a hand-written
  ``decimal.Decimal`` reading of the rounding rules;
- request signing: ``RequestSigner.headers`` / ``headers_many`` against the
  standard library (``hmac`` + ``hashlib`` + ``secrets``);
- the floors F (five Keccak-f[1600] permutations, one order id's work, as
  OpenSSL does it through ``hashlib.sha3_256``) and S (one SHA-256
  compression through ``hashlib.sha256``).

Timing is best-of-N with ``time.perf_counter_ns`` over interleaved rounds:
each round samples every contender of an operation (and both floors) in turn,
forwards on even rounds and backwards on odd ones, so machine noise hits all of
them alike. Every peer's result is compared with clobkit's on the same inputs;
for py-clob-client that is the number of amount mismatches over the whole
tick-0.01 grid, where clobkit is also held to the Decimal reading. A separate
subprocess per thread count measures the peak memory of a large
``order_ids`` batch against the size of its inputs and outputs.

Run ``clobkit bench --help`` (or ``python -m clobkit.bench``) for the options.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import hashlib
import hmac
import importlib
import json
import math
import os
import platform
import random
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from pathlib import Path
from typing import Any

import clobkit
from clobkit import (
    IMPLEMENTATION,
    OrderHasher,
    RequestSigner,
    limit_amounts,
    market_amounts,
    verify_signature,
)

__all__ = [
    "DEFAULT",
    "QUICK",
    "Settings",
    "format_markdown",
    "format_text",
    "main",
    "measure_memory",
    "memory_child",
    "run",
    "write_png",
]

WALLET: dict[str, Any] = {
    "maker": "0x1111111111111111111111111111111111111111",
    "signer": "0x2222222222222222222222222222222222222222",
    "chain_id": 137,
    "signature_type": 2,
    "ctf_exchange": "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E",
    "neg_risk_exchange": "0xC5d563A36AE78145C45a50134d48A1215220f80a",
}
ZERO_ADDRESS = "0x" + "00" * 20
PEER_KEY = "0x" + "42" * 32  # py-order-utils wants a signer key; it never signs here
PATH = "/api/ext/v1/orders/raw"
BATCH_REQUESTS = 1000
INSTALL_HINT = "pip install 'clobkit[bench]'"


@dataclass(frozen=True)
class Settings:
    """How long and how large a run is."""

    rounds: int  # interleaved rounds per operation (best of N)
    target_ms: float  # minimum duration of one timed sample, milliseconds
    batch: int  # orders per order_ids call
    sizes_max_cents: int  # grid sizes run 0.01 .. sizes_max_cents / 100
    floor_bytes: int  # buffer hashed by the floors, bytes
    memory_orders: int  # orders per memory measurement (0: skip)
    checks: int  # orders and requests compared with each peer


DEFAULT = Settings(
    rounds=7,
    target_ms=20.0,
    batch=1_000_000,
    sizes_max_cents=3000,
    floor_bytes=4 << 20,
    memory_orders=1_000_000,
    checks=200,
)
QUICK = Settings(
    rounds=3,
    target_ms=2.0,
    batch=10_000,
    sizes_max_cents=500,
    floor_bytes=1 << 20,
    memory_orders=100_000,
    checks=40,
)


# ---------------------------------------------------------------- contenders


@dataclass
class Contender:
    """One implementation of one operation; ``run(reps)`` does ``reps * per`` operations."""

    name: str
    kind: str  # "clobkit", "peer" or "floor"
    run: Callable[[int], object]
    per: float
    reps: int = 1
    best_ns: float = math.inf  # best nanoseconds per operation so far
    correctness: str = ""
    compared: int = 0
    mismatches: int = 0
    expect_equal: bool = True  # False for a peer known to differ (py-clob-client's floats)

    def sample(self) -> None:
        """Time one sample (garbage collector off, as timeit does) and keep the best."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            t0 = time.perf_counter_ns()
            self.run(self.reps)
            elapsed = time.perf_counter_ns() - t0
        finally:
            if enabled:
                gc.enable()
        self.best_ns = min(self.best_ns, elapsed / (self.reps * self.per))

    def calibrate(self, target_ns: float) -> None:
        """Warm up, then pick ``reps`` so that one sample lasts at least ``target_ns``."""
        self.reps = 1
        self.sample()
        per_rep = self.best_ns * self.per
        if per_rep < target_ns:
            self.reps = max(1, math.ceil(target_ns / max(per_rep, 1.0)))


@dataclass
class Operation:
    """Contenders doing the same work; the first is clobkit's reference."""

    key: str
    title: str
    contenders: list[Contender] = field(default_factory=list)


def floors(size: int) -> tuple[Contender, Contender]:
    """F: five Keccak-f[1600] permutations (136-byte blocks); S: one SHA-256 compression."""
    buf = b"\x00" * size
    f = Contender(
        "F: 5 × Keccak-f[1600], hashlib.sha3_256",
        "floor",
        lambda reps: [hashlib.sha3_256(buf).digest() for _ in range(reps)],
        per=size / 136 / 5,
    )
    s = Contender(
        "S: 1 × SHA-256 compression, hashlib.sha256",
        "floor",
        lambda reps: [hashlib.sha256(buf).digest() for _ in range(reps)],
        per=size / 64,
    )
    return f, s


def time_operations(ops: Sequence[Operation], extra: Sequence[Contender], s: Settings) -> None:
    """Best-of-``s.rounds`` per contender, each round interleaving an operation's contenders.

    ``extra`` (the floors) join every operation's rounds, so their best is
    taken across the whole run.
    """
    target = s.target_ms * 1e6
    for c in extra:
        if c.best_ns == math.inf:
            c.calibrate(target)
    for op in ops:
        for c in op.contenders:
            c.calibrate(target)
        everyone = [*op.contenders, *extra]
        for r in range(s.rounds):
            for c in everyone if r % 2 == 0 else reversed(everyone):
                c.sample()


# ---------------------------------------------------------------- inputs


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


def request_bodies(n: int, seed: int) -> list[bytes]:
    """``n`` raw-order bodies padded to 300 bytes, as a bot sends them."""
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        body = (
            '{"market_id":"5f0c6a8e-3b1d-4c62-9d1e-2b7f4a9c8e11","outcome":"a",'
            f'"token_id":"{rnd.randrange(10**76, 10**77)}","maker_amount":'
            f'"{rnd.randrange(10**8)}","taker_amount":"{rnd.randrange(10**8)}","side":0,'
            f'"fee_rate_bps":0,"order_type":"GTC","salt":"{rnd.randrange(10**12)}",'
            '"client_order_id":"b1"}'
        ).encode()
        out.append(body + b" " * (300 - len(body)))
    return out


# ---------------------------------------------------------------- order id

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


def _tally(c: Contender, compared: int, mismatches: int, label: str) -> None:
    """Record a comparison: ``label: agreeing/compared``, flagged when any differ."""
    c.compared, c.mismatches = compared, mismatches
    c.correctness = f"{label}: {compared - mismatches:,}/{compared:,}"
    if mismatches:
        c.correctness += f" ({mismatches:,} DIFFER)"


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

    step = max(1, s.batch // 20_000)
    sample = range(0, s.batch, step)
    for threads in (1, 2):

        def many(reps: int, threads: int = threads) -> None:
            for _ in range(reps):
                hasher.order_ids(**batch, threads=threads)

        c = Contender(
            f"clobkit order_ids ×{s.batch:,}, threads={threads}", "clobkit", many, s.batch
        )
        out = hasher.order_ids(**batch, threads=threads)
        bad = sum(out[i] != clobkit_id(*row, False) for i, row in _indexed(batch, sample))
        _tally(c, len(sample), bad, "= order_id")
        del out
        op.contenders.append(c)

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
        _tally(c, len(checks), bad, "ids equal")
        op.contenders.append(c)
    return op


def _indexed(
    batch: dict[str, list[Any]], indexes: Sequence[int]
) -> list[tuple[int, tuple[str, int, int, int, int]]]:
    cols = [batch[k] for k in ("token_ids", "maker_amounts", "taker_amounts", "sides", "salts")]
    return [(i, (cols[0][i], cols[1][i], cols[2][i], cols[3][i], cols[4][i])) for i in indexes]


# ---------------------------------------------------------------- amounts

AMOUNT_DP = 4  # tick 0.01: prices 2 decimals, amounts 2 + 2
_Q = [Decimal(1).scaleb(-k) for k in range(AMOUNT_DP + 5)]


def _places(x: Decimal) -> int:
    exponent = x.normalize().as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def _fit(x: Decimal) -> Decimal:
    """Amount decimals: round up at AMOUNT_DP + 4 places, then down at AMOUNT_DP if still longer."""
    if _places(x) > AMOUNT_DP:
        x = x.quantize(_Q[AMOUNT_DP + 4], rounding=ROUND_CEILING)
        if _places(x) > AMOUNT_DP:
            x = x.quantize(_Q[AMOUNT_DP], rounding=ROUND_FLOOR)
    return x


def _units(x: Decimal) -> int:
    return int(x.scaleb(6))


def decimal_limit(side: str, price: Decimal, size: Decimal) -> tuple[int, int]:
    """(maker, taker) units of a tick-0.01 limit order, read literally off the rules in Decimal."""
    shares = size.quantize(_Q[2], rounding=ROUND_FLOOR)
    usdc = _fit(shares * price)
    if side == "BUY":
        return _units(usdc), _units(shares)
    return _units(shares), _units(usdc)


def decimal_market(side: str, price: Decimal, amount: Decimal) -> tuple[int, int]:
    """(maker, taker) units of a tick-0.01 market order (amount: USDC to BUY, shares to SELL)."""
    maker = amount.quantize(_Q[2], rounding=ROUND_FLOOR)
    taker = _fit(maker / price if side == "BUY" else maker * price)
    return _units(maker), _units(taker)


AmountsFn = Callable[[str, float, float], tuple[int, int]]  # (side, price, size) -> units


def clobkit_amount_fns() -> dict[str, AmountsFn]:
    """clobkit's amounts as (side, price, size_or_amount) -> (maker, taker)."""

    def limit(side: str, p: float, q: float) -> tuple[int, int]:
        a = limit_amounts(side, p, q)
        return a.maker_amount, a.taker_amount

    def market(side: str, p: float, q: float) -> tuple[int, int]:
        a = market_amounts(side, p, q)
        return a.maker_amount, a.taker_amount

    return {"limit": limit, "market": market}


def decimal_amount_fns() -> dict[str, AmountsFn]:
    """The Decimal reading, fed floats the way a user would: through their shortest repr."""
    return {
        "limit": lambda side, p, q: decimal_limit(side, Decimal(repr(p)), Decimal(repr(q))),
        "market": lambda side, p, q: decimal_market(side, Decimal(repr(p)), Decimal(repr(q))),
    }


def py_clob_client_amount_fns() -> dict[str, AmountsFn]:
    """py-clob-client's get_order_amounts / get_market_order_amounts, given floats as it takes."""
    builder = importlib.import_module("py_clob_client.order_builder.builder")
    b = builder.OrderBuilder.__new__(builder.OrderBuilder)  # the amount methods need no signer
    config = builder.ROUNDING_CONFIG["0.01"]

    def limit(side: str, p: float, q: float) -> tuple[int, int]:
        _, maker, taker = b.get_order_amounts(side, q, p, config)
        return int(maker), int(taker)

    def market(side: str, p: float, q: float) -> tuple[int, int]:
        _, maker, taker = b.get_market_order_amounts(side, q, p, config)
        return int(maker), int(taker)

    return {"limit": limit, "market": market}


def amounts_grid(sizes_max_cents: int, peer: dict[str, AmountsFn] | None) -> dict[str, Any]:
    """Mismatch counts over prices 0.01..0.99 × sizes 0.01..max, both sides, limit and market.

    clobkit and py-clob-client get floats (``i / 100``); the Decimal reading
    gets the exact decimals those floats print as.
    """
    prices = [(i / 100, Decimal(i).scaleb(-2)) for i in range(1, 100)]
    sizes = [(i / 100, Decimal(i).scaleb(-2)) for i in range(1, sizes_max_cents + 1)]
    ours = clobkit_amount_fns()
    exact = {"limit": decimal_limit, "market": decimal_market}
    out: dict[str, Any] = {
        "tick": "0.01",
        "prices": "0.01..0.99",
        "sizes": f"0.01..{sizes_max_cents / 100:.2f}",
        "points": 0,
    }
    with localcontext() as ctx:
        ctx.prec = 60
        for kind in ("limit", "market"):
            mine, rule = ours[kind], exact[kind]
            theirs = peer[kind] if peer else None
            n = ck_vs_dec = peer_vs_ck = peer_vs_dec = 0
            examples: list[str] = []
            for side in ("BUY", "SELL"):
                for pf, pd in prices:
                    for qf, qd in sizes:
                        got = mine(side, pf, qf)
                        want = rule(side, pd, qd)
                        n += 1
                        ck_vs_dec += got != want
                        if theirs is not None:
                            other = theirs(side, pf, qf)
                            if other != got:
                                peer_vs_ck += 1
                                if len(examples) < 5:
                                    examples.append(
                                        f"{side} {pd} × {qd}: {other[0]}/{other[1]}"
                                        f" (clobkit {got[0]}/{got[1]})"
                                    )
                            peer_vs_dec += other != want
            out["points"] = n
            out[kind] = {
                "clobkit_vs_decimal": ck_vs_dec,
                "py_clob_client_vs_clobkit": peer_vs_ck if theirs else None,
                "py_clob_client_vs_decimal": peer_vs_dec if theirs else None,
                "py_clob_client_examples": examples,
            }
    return out


def amounts_operations(
    s: Settings, notes: list[str], say: Callable[[str], None]
) -> tuple[list[Operation], dict[str, Any]]:
    """limit_amounts and market_amounts against py-clob-client and the Decimal reading."""
    try:
        peer: dict[str, AmountsFn] | None = py_clob_client_amount_fns()
    except ImportError as e:
        peer = None
        notes.append(
            f"py-clob-client not installed ({e.name}): amounts peer skipped; {INSTALL_HINT}"
        )
    say(f"amounts: checking the tick-0.01 grid (sizes up to {s.sizes_max_cents / 100:.2f})")
    grid = amounts_grid(s.sizes_max_cents, peer)
    rnd = random.Random(7)
    points = [
        (rnd.choice(("BUY", "SELL")), rnd.randrange(1, 100) / 100, rnd.randrange(1, 3001) / 100)
        for _ in range(1000)
    ]

    def timed(fn: Callable[[str, float, float], object], context: bool = False) -> Any:
        def run(reps: int) -> None:
            with localcontext() as ctx:
                if context:
                    ctx.prec = 60
                for _ in range(reps):
                    for side, p, q in points:
                        fn(side, p, q)

        return run

    ops = []
    for kind, api, direct in (
        ("limit", "limit_amounts", limit_amounts),
        ("market", "market_amounts", market_amounts),
    ):
        res, n = grid[kind], grid["points"]
        op = Operation(f"{kind}_amounts", f"{kind} amounts")
        c = Contender(f"clobkit {api}", "clobkit", timed(direct), len(points))
        _tally(c, n, res["clobkit_vs_decimal"], "= Decimal rules")
        op.contenders.append(c)
        if peer is not None:
            peer_api = "get_order_amounts" if kind == "limit" else "get_market_order_amounts"
            c = Contender(f"py-clob-client {peer_api}", "peer", timed(peer[kind]), len(points))
            bad = res["py_clob_client_vs_clobkit"]
            c.compared, c.mismatches, c.expect_equal = n, bad, False
            c.correctness = f"≠ clobkit: {bad:,} of {n:,}"
            op.contenders.append(c)
        fn = decimal_amount_fns()[kind]
        c = Contender("Decimal rules, hand-written", "peer", timed(fn, True), len(points))
        _tally(c, n, res["clobkit_vs_decimal"], "= clobkit")
        op.contenders.append(c)
        ops.append(op)
    return ops, grid


# ---------------------------------------------------------------- signing


def stdlib_headers(key: str, secret: bytes, method: str, path: str, body: bytes) -> dict[str, str]:
    """The same four headers written the obvious way with hmac, hashlib and secrets."""
    ts = str(time.time_ns() // 1_000_000)
    nonce = secrets.token_hex(16)
    return {
        "X-API-KEY": key,
        "X-API-TIMESTAMP": ts,
        "X-API-NONCE": nonce,
        "X-API-SIGNATURE": stdlib_signature(secret, method, path, ts, nonce, body),
    }


def stdlib_signature(
    secret: bytes, method: str, path: str, ts: str, nonce: str, body: bytes
) -> str:
    """HMAC-SHA256 (hex) of ``METHOD\\nPATH\\nTIMESTAMP\\nNONCE\\nsha256hex(body)``."""
    signing = f"{method}\n{path}\n{ts}\n{nonce}\n{hashlib.sha256(body).hexdigest()}"
    return hmac.new(secret, signing.encode(), hashlib.sha256).hexdigest()


def signing_operation(s: Settings) -> Operation:
    """RequestSigner.headers / headers_many against hmac + hashlib + secrets, per request."""
    key, secret = "bench-key", "bench-secret"
    signer = RequestSigner(key, secret)
    requests = [("POST", PATH, body) for body in request_bodies(BATCH_REQUESTS, seed=11)]
    checked = requests[: s.checks]

    def agree(headers: Sequence[dict[str, str]]) -> int:
        bad = 0
        for (m, p, b), h in zip(checked, headers, strict=True):
            want = stdlib_signature(
                secret.encode(), m, p, h["X-API-TIMESTAMP"], h["X-API-NONCE"], b
            )
            bad += not hmac.compare_digest(want, h["X-API-SIGNATURE"])
        return bad

    def one(reps: int) -> None:
        headers = signer.headers
        for _ in range(reps):
            for m, p, b in requests:
                headers(m, p, b)

    def many(reps: int) -> None:
        for _ in range(reps):
            signer.headers_many(requests)

    def std(reps: int) -> None:
        sec = secret.encode()
        for _ in range(reps):
            for m, p, b in requests:
                stdlib_headers(key, sec, m, p, b)

    op = Operation("headers", f"request headers (POST, {len(requests[0][2])}-byte body)")
    c = Contender("clobkit RequestSigner.headers", "clobkit", one, len(requests))
    _tally(c, len(checked), agree([signer.headers(m, p, b) for m, p, b in checked]), "= stdlib")
    op.contenders.append(c)
    c = Contender(f"clobkit headers_many ×{len(requests):,}", "clobkit", many, len(requests))
    _tally(c, len(checked), agree(signer.headers_many(checked)), "= stdlib")
    op.contenders.append(c)
    c = Contender("stdlib hmac + hashlib + secrets", "peer", std, len(requests))
    bad = 0
    for m, p, b in checked:
        h = stdlib_headers(key, secret.encode(), m, p, b)
        ts, nonce, sig = h["X-API-TIMESTAMP"], h["X-API-NONCE"], h["X-API-SIGNATURE"]
        bad += not verify_signature(secret, m, p, ts, nonce, b, sig)
    _tally(c, len(checked), bad, "verified by clobkit")
    op.contenders.append(c)
    return op


# ---------------------------------------------------------------- memory


def _proc_status(field: str) -> int | None:
    """A ``/proc/self/status`` memory field (``VmRSS``, ``VmHWM``) in bytes, or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _max_rss() -> int:
    """Peak resident set size of this process so far, bytes (ru_maxrss)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def _deep_size(lists: Sequence[Sequence[object]]) -> int:
    """sys.getsizeof of the lists and of each distinct element (shared ones once), bytes."""
    distinct = {id(x): x for items in lists for x in items}
    return sum(map(sys.getsizeof, lists)) + sum(map(sys.getsizeof, distinct.values()))


def memory_child(orders: int, threads: int) -> None:
    """In a fresh process: peak RSS of one ``order_ids`` call of ``orders`` orders, as JSON.

    The peak counter is reset (``/proc/self/clear_refs``) after the inputs are
    built and sized, so the baseline holds the inputs and the peak is the
    call's own; without that reset ``ru_maxrss`` gives an upper bound.
    """
    hasher = OrderHasher(WALLET)
    hasher.order_ids(**make_orders(8, seed=1), threads=threads)  # warm: pools, caches
    start = _proc_status("VmRSS") or _max_rss()
    batch = make_orders(orders, seed=5)
    inputs = _deep_size(list(batch.values()))
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        method = "VmHWM, reset after the inputs were built"
    except OSError:
        method = "ru_maxrss (upper bound: the peak may predate the call)"
    baseline = _proc_status("VmRSS") or _max_rss()
    t0 = time.perf_counter()
    out = hasher.order_ids(**batch, threads=threads)
    seconds = time.perf_counter() - t0
    peak = _proc_status("VmHWM") or _max_rss()
    outputs = sys.getsizeof(out) + sum(map(sys.getsizeof, out))
    if len(out) != orders or any(len(x) != 66 for x in out):
        raise AssertionError("order_ids returned a wrong result")
    print(
        json.dumps(
            {
                "orders": orders,
                "threads": threads,
                "inputs_bytes": inputs,
                "outputs_bytes": outputs,
                "baseline_rss_bytes": baseline,
                "peak_rss_bytes": peak,
                "peak_increase_bytes": peak - baseline,
                "ratio": (peak - baseline) / (inputs + outputs),
                "process_ratio": (peak - start) / (inputs + outputs),
                "seconds": seconds,
                "method": method,
            }
        )
    )


def measure_memory(orders: int, threads: Sequence[int] = (1, 2)) -> list[dict[str, Any]]:
    """Run :func:`memory_child` in one subprocess per thread count (concurrently).

    Each result's ``ratio`` is the peak RSS increase during ``order_ids``
    (baseline: inputs already built) divided by inputs + outputs (bytes, as
    sys.getsizeof counts them); ``process_ratio`` measures from before the
    inputs existed, so it includes them.
    """
    code = "import sys; from clobkit.bench import memory_child as m; m(*map(int, sys.argv[1:]))"
    env = dict(os.environ)
    src = str(Path(clobkit.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(orders), str(t)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for t in threads
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate()
        if proc.returncode:
            raise RuntimeError(f"memory measurement failed:\n{err}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


# ---------------------------------------------------------------- the run


def machine() -> dict[str, Any]:
    """Where the figures come from: CPU, cores, OS, Python, clobkit and its core's paths."""
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    from clobkit import _core

    paths = getattr(_core._impl, "implementation", None)
    return {
        "cpu": cpu or platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.machine()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "clobkit": clobkit.__version__,
        "core": IMPLEMENTATION,
        "hash_paths": paths() if callable(paths) else None,
    }


def machine_line(m: dict[str, Any]) -> str:
    """One line naming the machine: CPU, cores, OS, Python, clobkit and its core."""
    if m["core"] == "c":
        paths = m.get("hash_paths") or {}
        core = "compiled core" + (
            ": " + ", ".join(f"{k} {v}" for k, v in sorted(paths.items())) if paths else ""
        )
    else:
        core = "pure-Python core"
    return (
        f"{m['cpu']}, {m['cores']} cores, {m['system']}, {m['python']}, "
        f"clobkit {m['clobkit']} ({core})"
    )


def run(s: Settings, say: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Build, check and time every operation; returns the report (JSON-ready)."""
    notes: list[str] = []
    f, sh = floors(s.floor_bytes)
    ops = [order_id_operation(s, notes, say)]
    amount_ops, grid = amounts_operations(s, notes, say)
    ops += [*amount_ops, signing_operation(s)]
    for note in notes:
        say(note)
    for op in ops:
        say(f"timing {op.title}: {len(op.contenders)} contenders + floors, {s.rounds} rounds")
        time_operations([op], [f, sh], s)
    memory = []
    if s.memory_orders:
        say(f"memory: order_ids of {s.memory_orders:,} orders, threads 1 and 2 (subprocesses)")
        memory = measure_memory(s.memory_orders)
    fl, sl = f.best_ns, sh.best_ns

    def row(c: Contender, ref: float | None) -> dict[str, Any]:
        return {
            "implementation": c.name,
            "kind": c.kind,
            "per_op_ns": round(c.best_ns, 3),
            "x_clobkit": None if ref is None else round(c.best_ns / ref, 4),
            "x_F": round(c.best_ns / fl, 4),
            "x_S": round(c.best_ns / sl, 4),
            "correctness": c.correctness,
            "compared": c.compared,
            "mismatches": c.mismatches,
            "expect_equal": c.expect_equal,
        }

    operations: list[dict[str, Any]] = [
        {
            "key": op.key,
            "title": op.title,
            "rows": [row(c, op.contenders[0].best_ns) for c in op.contenders],
        }
        for op in ops
    ]
    operations.append({"key": "floors", "title": "floors", "rows": [row(f, None), row(sh, None)]})
    ok = all(r["mismatches"] == 0 for op in operations for r in op["rows"] if r["expect_equal"])
    return {
        "tool": "clobkit bench",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "settings": dataclasses.asdict(s),
        "floors_ns": {"F": round(fl, 3), "S": round(sl, 3)},
        "operations": operations,
        "amounts_grid": grid,
        "memory": memory,
        "notes": notes,
        "ok": ok,
    }


# ---------------------------------------------------------------- output


def fmt_ns(ns: float) -> str:
    """Nanoseconds with three significant digits and a unit: ``838 ns``, ``2.41 µs``."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{_sig3(ns / scale)} {unit}"
    return f"{_sig3(ns)} ns"


def _sig3(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}"


HEADERS = ["operation", "implementation", "per op", "× clobkit", "× F", "× S", "correctness"]


def table_rows(report: dict[str, Any]) -> list[list[str]]:
    """The table's cells, one list per row (operation named on its first row only)."""
    rows = []
    for op in report["operations"]:
        for i, r in enumerate(op["rows"]):
            rows.append(
                [
                    op["title"] if i == 0 else "",
                    r["implementation"],
                    fmt_ns(r["per_op_ns"]),
                    "" if r["x_clobkit"] is None else _sig3(r["x_clobkit"]),
                    _sig3(r["x_F"]),
                    _sig3(r["x_S"]),
                    r["correctness"],
                ]
            )
    return rows


def _preamble(report: dict[str, Any]) -> list[str]:
    s, fl = report["settings"], report["floors_ns"]
    return [
        f"clobkit bench, {report['date']}, on {machine_line(report['machine'])}",
        f"Per-operation time, best of {s['rounds']} interleaved rounds (clobkit and peers "
        "alternate). × clobkit: time ÷ the operation's first clobkit row. "
        f"F = {fmt_ns(fl['F'])}: 5 Keccak-f[1600] permutations (one order id's work), "
        f"OpenSSL via hashlib.sha3_256. S = {fmt_ns(fl['S'])}: one SHA-256 compression, "
        "hashlib.sha256.",
    ]


def _epilogue(report: dict[str, Any]) -> list[str]:
    g = report["amounts_grid"]
    lines = [
        f"Amounts grid: tick {g['tick']}, prices {g['prices']} × sizes {g['sizes']}, "
        f"BUY and SELL: {g['points']:,} points each for limit and market; floats go to clobkit "
        "and py-clob-client, the exact decimals they print as go to the Decimal rules."
    ]
    for kind in ("limit", "market"):
        ex = g[kind]["py_clob_client_examples"]
        if ex:
            lines.append(
                f"py-clob-client {kind} mismatches, e.g. (side price × size: its maker/taker "
                "units, then clobkit's): " + "; ".join(ex[:3])
            )
    return lines


MEMORY_HEADERS = [
    "orders",
    "threads",
    "inputs",
    "outputs",
    "peak increase",
    "peak ÷ (in + out)",
    "process peak ÷ (in + out)",
]


def memory_rows(report: dict[str, Any]) -> list[list[str]]:
    """Cells of the memory table (sizes in MB = 10**6 bytes)."""
    return [
        [
            f"{m['orders']:,}",
            str(m["threads"]),
            f"{m['inputs_bytes'] / 1e6:,.1f} MB",
            f"{m['outputs_bytes'] / 1e6:,.1f} MB",
            f"{m['peak_increase_bytes'] / 1e6:,.1f} MB",
            f"{m['ratio']:.2f}",
            f"{m['process_ratio']:.2f}",
        ]
        for m in report["memory"]
    ]


def _memory_note(report: dict[str, Any]) -> str:
    method = report["memory"][0]["method"] if report["memory"] else ""
    return (
        "Memory: one order_ids call on Python lists (distinct 77-digit token id strings, int "
        "amounts and salts), each thread count in a fresh process; inputs and outputs as "
        f"sys.getsizeof counts them; peak RSS from {method}. Issue #5 target: ≤ 2."
    )


def _text_table(headers: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        out = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(out).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *map(line, rows)]


def _md_table(headers: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    align = ["---:" if i in right else "---" for i in range(len(headers))]
    return ["| " + " | ".join(r) + " |" for r in [headers, align, *rows]]


def format_text(report: dict[str, Any]) -> str:
    """The report as a plain-text table for a terminal."""
    lines = [*_preamble(report), ""]
    lines += _text_table(HEADERS, table_rows(report), {2, 3, 4, 5})
    lines += ["", *_epilogue(report)]
    if report["memory"]:
        lines += ["", _memory_note(report)]
        lines += _text_table(MEMORY_HEADERS, memory_rows(report), set(range(len(MEMORY_HEADERS))))
    lines += [f"skipped: {n}" for n in report["notes"]]
    return "\n".join(lines)


def format_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown (for README)."""
    lines = []
    for p in _preamble(report):
        lines += [p, ""]
    lines += _md_table(HEADERS, table_rows(report), {2, 3, 4, 5})
    lines += [""]
    for e in _epilogue(report):
        lines += [e, ""]
    if report["memory"]:
        lines += [_memory_note(report), ""]
        lines += _md_table(MEMORY_HEADERS, memory_rows(report), set(range(len(MEMORY_HEADERS))))
        lines += [""]
    lines += [f"Skipped: {n}" for n in report["notes"]]
    return "\n".join(lines).rstrip() + "\n"


COLORS = {"clobkit": "#1f6fb4", "peer": "#e07b28"}


def write_png(report: dict[str, Any], path: str | Path) -> None:
    """Horizontal bar chart of per-operation times (log scale), floors drawn as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    labels: list[str] = []
    headers: list[int] = []  # label indexes that name an operation
    bars: list[tuple[float, float, str]] = []  # (y, ns, color)
    for op in report["operations"]:
        if op["key"] == "floors":
            continue
        headers.append(len(labels))
        labels.append(op["title"])
        for r in op["rows"]:
            bars.append((len(labels), r["per_op_ns"], COLORS.get(r["kind"], "#888888")))
            labels.append(r["implementation"])
    fig, ax = plt.subplots(figsize=(10, 0.3 * len(labels) + 1.6))
    ax.barh([b[0] for b in bars], [b[1] for b in bars], color=[b[2] for b in bars], height=0.75)
    ax.set_xscale("log")
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    for i, tick in enumerate(ax.get_yticklabels()):
        if i in headers:
            tick.set_fontweight("bold")
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(len(labels) - 0.4, -0.6)
    for y, ns, _ in bars:
        ax.text(ns * 1.08, y, fmt_ns(ns), va="center", fontsize=7)
    floors = report["floors_ns"]
    for name, style in (("F", "--"), ("S", ":")):
        ax.axvline(floors[name], color="#444444", linestyle=style, linewidth=1)
    ax.set_xlim(min(floors["S"], *(b[1] for b in bars)) / 2, max(b[1] for b in bars) * 4)
    ax.set_xlabel("time per operation, ns (log scale; shorter is faster)", fontsize=8)
    ax.legend(
        handles=[
            Patch(color=COLORS["clobkit"], label="clobkit"),
            Patch(color=COLORS["peer"], label="peers"),
            Line2D([], [], color="#444444", linestyle="--", label=f"F = {fmt_ns(floors['F'])}"),
            Line2D([], [], color="#444444", linestyle=":", label=f"S = {fmt_ns(floors['S'])}"),
        ],
        loc="lower right",
        fontsize=7,
    )
    ax.set_title(f"clobkit bench, {report['date']}\n{machine_line(report['machine'])}", fontsize=8)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


# ---------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """``clobkit bench``: returns 0, or 1 when clobkit disagrees with an exact reference."""
    p = argparse.ArgumentParser(
        prog="clobkit bench",
        description="clobkit against the installed peers, in one process: per-operation "
        "time, ratio to clobkit and to the floors F and S, and correctness.",
    )
    p.add_argument("--quick", action="store_true", help="a short run (tests, CI)")
    p.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    p.add_argument("--png", metavar="PATH", help="also write a bar chart (needs matplotlib)")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--rounds", type=int, help="interleaved rounds per operation")
    p.add_argument("--batch", type=int, help="orders per order_ids call")
    p.add_argument("--memory-orders", type=int, help="orders in the memory check (0 skips it)")
    p.add_argument("--memory-only", action="store_true", help="only the memory check")
    args = p.parse_args(argv)
    for flag, value, low in (
        ("--rounds", args.rounds, 1),
        ("--batch", args.batch, 1),
        ("--memory-orders", args.memory_orders, 0),
    ):
        if value is not None and value < low:
            print(
                f"clobkit bench: error: {flag} must be at least {low} (got {value})",
                file=sys.stderr,
            )
            return 2
    if args.png:
        try:
            import matplotlib  # noqa: F401  (fail before the run, not after it)
        except ImportError:
            print(
                "clobkit bench: error: --png needs matplotlib (pip install matplotlib)",
                file=sys.stderr,
            )
            return 2
    s = QUICK if args.quick else DEFAULT
    overrides = {
        "rounds": args.rounds,
        "batch": args.batch,
        "memory_orders": args.memory_orders,
    }
    s = dataclasses.replace(s, **{k: v for k, v in overrides.items() if v is not None})

    def say(msg: str) -> None:
        print(f"[bench] {msg}", file=sys.stderr, flush=True)

    if args.memory_only:
        report = {"memory": measure_memory(s.memory_orders or DEFAULT.memory_orders)}
        print(_memory_note(report))
        table = _md_table if args.markdown else _text_table
        cols = set(range(len(MEMORY_HEADERS)))
        print("\n".join(table(MEMORY_HEADERS, memory_rows(report), cols)))
        return 0
    report = run(s, say)
    print(format_markdown(report) if args.markdown else format_text(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        say(f"wrote {args.json}")
    if args.png:
        write_png(report, args.png)
        say(f"wrote {args.png}")
    if not report["ok"]:
        say("clobkit disagreed with an exact reference: see the correctness column")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
