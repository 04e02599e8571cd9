"""``clobkit bench`` rows for exchange V2 orders: order ids and signed orders against the peers.

- order id V2: ``OrderHasher.order_id`` and ``order_ids`` (threads 1 and 2)
  against py-clob-client-v2's own typed-data hash
  (``ExchangeOrderBuilderV2.build_order_hash``) and eth-account
  ``encode_typed_data``; ids compared on both V2 exchanges.
- signed order V2: ``OrderHasher.sign`` and ``sign_many`` (threads 1 and 2)
  against py-clob-client-v2 ``build_signed_order`` (build, hash, sign),
  eth-account (``encode_typed_data`` + ``Account.sign_message``) and E, the
  ECDSA floor: one bare libsecp256k1 signature through coincurve's wrapper
  (``PrivateKey.sign_recoverable(digest, hasher=None)``). Signatures compared
  byte for byte on the same orders.

The wallet is an EOA (signature type 0) whose signer is the benchmark's key,
so every peer signs for the same wallet.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from .. import OrderHasher, OrderSigner
from ..core.wallet import V2_CTF_EXCHANGE, V2_NEG_RISK_EXCHANGE
from ._timing import INSTALL_HINT, Contender, Operation, Settings, tally
from .order_ids import make_orders

KEY = "0x" + "42" * 32  # a throwaway key: the benchmark's wallet signs with it
CHAIN_ID = 137
TIMESTAMP = 1_777_777_777_123  # milliseconds; order i gets TIMESTAMP + i
ZERO32 = "0x" + "00" * 32  # metadata and builder left empty, as the peers default them
SIGN_BATCH = 2_000  # orders per sign_many call (about 40 ms of ECDSA)
# Published elsewhere, not measured here (docs: ../shared/exchange-versions.md):
# operation key -> (name, nanoseconds); the chart marks them, the text quotes them.
PUBLISHED_SOURCE = "nautilus_trader's Polymarket adapter (Rust), AMD Threadripper 9980X, 2026-05-19"
PUBLISHED = {
    "order_id_v2": ("nautilus_trader order_hash", 2_600.0),
    "sign_v2": ("nautilus_trader sign_order", 44_300.0),
}

# (token_id, maker_amount, taker_amount, side, salt, timestamp, neg_risk)
Order = tuple[str, int, int, int, int, int, bool]
OrderFn = Callable[[str, int, int, int, int, int, bool], str]


def wallet() -> dict[str, Any]:
    """The V2 wallet every contender hashes and signs for (EOA, signer = KEY's address)."""
    address = OrderSigner(KEY).address
    return {
        "maker": address,
        "signer": address,
        "chain_id": CHAIN_ID,
        "signature_type": 0,
        "ctf_exchange": V2_CTF_EXCHANGE,
        "neg_risk_exchange": V2_NEG_RISK_EXCHANGE,
    }


def v2_orders(n: int, seed: int) -> dict[str, list[Any]]:
    """``n`` V2 orders as ``order_ids`` columns: V1's random columns plus timestamps."""
    batch = make_orders(n, seed)
    batch["timestamps"] = [TIMESTAMP + i for i in range(n)]
    return batch


def rows_v2(batch: dict[str, list[Any]], n: int, neg_risk: bool = False) -> list[Order]:
    """The first ``n`` orders of a batch as tuples, on the CTF or the NegRisk exchange."""
    cols = ("token_ids", "maker_amounts", "taker_amounts", "sides", "salts", "timestamps")
    return [(*row, neg_risk) for row in zip(*(batch[c][:n] for c in cols), strict=True)]


def _contract(neg_risk: bool) -> str:
    return V2_NEG_RISK_EXCHANGE if neg_risk else V2_CTF_EXCHANGE


V2_ORDER_FIELDS = [  # the exchange's V2 Order struct, in order (docs/exchange-versions.md)
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
V2_TYPES = {
    "EIP712Domain": [
        {"name": "name", "type": "string"},
        {"name": "version", "type": "string"},
        {"name": "chainId", "type": "uint256"},
        {"name": "verifyingContract", "type": "address"},
    ],
    "Order": [{"name": n, "type": t} for n, t in V2_ORDER_FIELDS],
}


def v2_typed_data(
    w: dict[str, Any], t: str, m: int, k: int, sd: int, sl: int, ts: int, neg: bool
) -> dict[str, Any]:
    """One V2 order as EIP-712 typed data (eth-account's ``full_message``), for wallet ``w``."""
    zero = bytes(32)
    domain = {
        "name": "Polymarket CTF Exchange",
        "version": "2",
        "chainId": CHAIN_ID,
        "verifyingContract": _contract(neg),
    }
    message = {
        "salt": sl,
        "maker": w["maker"],
        "signer": w["signer"],
        "tokenId": int(t),
        "makerAmount": m,
        "takerAmount": k,
        "side": sd,
        "signatureType": w["signature_type"],
        "timestamp": ts,
        "metadata": zero,
        "builder": zero,
    }
    return {"types": V2_TYPES, "primaryType": "Order", "domain": domain, "message": message}


def eth_account_v2() -> tuple[OrderFn, OrderFn]:
    """eth-account: (id by ``encode_typed_data`` + its hash, signature by ``sign_message``)."""
    messages = importlib.import_module("eth_account.messages")
    account = importlib.import_module("eth_account").Account
    w = wallet()

    def signable(*row: Any) -> Any:
        return messages.encode_typed_data(full_message=v2_typed_data(w, *row))

    def order_id(t: str, m: int, k: int, sd: int, sl: int, ts: int, neg: bool) -> str:
        return "0x" + bytes(messages._hash_eip191_message(signable(t, m, k, sd, sl, ts, neg))).hex()

    def sign(t: str, m: int, k: int, sd: int, sl: int, ts: int, neg: bool) -> str:
        signed = account.sign_message(signable(t, m, k, sd, sl, ts, neg), private_key=KEY)
        return "0x" + bytes(signed.signature).hex()

    return order_id, sign


def py_clob_client_v2() -> tuple[OrderFn, OrderFn]:
    """py-clob-client-v2: (``build_order_hash`` of its typed data, ``build_signed_order``).

    ``build_signed_order`` draws its own salt: each call is handed the order's
    salt through the builder's ``generate_salt`` hook so both sides sign the
    same order; the timestamp goes in ``OrderDataV2``.
    """
    v2 = importlib.import_module("py_clob_client_v2.order_utils.exchange_order_builder_v2")
    model = importlib.import_module("py_clob_client_v2.order_utils.model.order_data_v2")
    signer = importlib.import_module("py_clob_client_v2.signer").Signer(KEY, CHAIN_ID)
    w = wallet()
    salt = [0]
    builders = {
        neg: v2.ExchangeOrderBuilderV2(
            _contract(neg), CHAIN_ID, signer, generate_salt=lambda: str(salt[0])
        )
        for neg in (False, True)
    }

    def order_id(t: str, m: int, k: int, sd: int, sl: int, ts: int, neg: bool) -> str:
        order = model.OrderV2(
            salt=str(sl),
            maker=w["maker"],
            signer=w["signer"],
            tokenId=t,
            makerAmount=str(m),
            takerAmount=str(k),
            side=sd,
            signatureType=w["signature_type"],
            timestamp=str(ts),
            metadata=ZERO32,
            builder=ZERO32,
        )
        b = builders[neg]
        return str(b.build_order_hash(b.build_order_typed_data(order)))

    def sign(t: str, m: int, k: int, sd: int, sl: int, ts: int, neg: bool) -> str:
        salt[0] = sl
        data = model.OrderDataV2(
            maker=w["maker"],
            signer=w["signer"],
            tokenId=t,
            makerAmount=str(m),
            takerAmount=str(k),
            side=sd,
            signatureType=w["signature_type"],
            timestamp=str(ts),
        )
        return str(builders[neg].build_signed_order(data).signature)

    return order_id, sign


def ecdsa_floor() -> tuple[Callable[[bytes], object], Callable[[bytes], str]]:
    """E: (the bare libsecp256k1 call through coincurve, timed; its ``0x`` r‖s‖v, checked)."""
    key = importlib.import_module("coincurve").PrivateKey(bytes.fromhex(KEY[2:]))
    sign = key.sign_recoverable

    def bare(digest: bytes) -> object:
        return sign(digest, hasher=None)

    def e(digest: bytes) -> str:
        sig: bytes = sign(digest, hasher=None)
        return "0x" + sig[:64].hex() + format(sig[64] + 27, "02x")

    return bare, e


# (package, name, factory) for each peer: factory() -> (order_id, sign)
V2_PEERS: list[tuple[str, str, Callable[[], tuple[OrderFn, OrderFn]]]] = [
    ("py-clob-client-v2", "py-clob-client-v2", py_clob_client_v2),
    ("eth-account", "eth-account", eth_account_v2),
]
PEER_CALLS = {
    "py-clob-client-v2": ("build_order_hash(typed data)", "build_signed_order"),
    "eth-account": ("encode_typed_data + hash", "encode_typed_data + sign_message"),
}


def _load_peers(notes: list[str]) -> list[tuple[str, OrderFn, OrderFn]]:
    peers = []
    for package, name, factory in V2_PEERS:
        try:
            order_id, sign = factory()
        except ImportError as e:
            notes.append(
                f"{package} not installed ({e.name}): {name} V2 rows skipped; {INSTALL_HINT}"
            )
            continue
        peers.append((name, order_id, sign))
    return peers


def _looped(fn: OrderFn, rows: list[Order]) -> Callable[[int], None]:
    def run(reps: int) -> None:
        for _ in range(reps):
            for row in rows:
                fn(*row)

    return run


class _Clobkit:
    """clobkit's V2 calls on one row tuple: the reference every other row is checked against."""

    def __init__(self) -> None:
        self.hasher = OrderHasher(wallet())
        self.signer = OrderSigner(KEY)

    def order_id(self, t: str, m: int, k: int, sd: int, sl: int, ts: int, neg: bool) -> str:
        return self.hasher.order_id(
            token_id=t, maker_amount=m, taker_amount=k, side=sd, salt=sl, timestamp=ts, neg_risk=neg
        )

    def sign(self, t: str, m: int, k: int, sd: int, sl: int, ts: int, neg: bool) -> str:
        signed = self.hasher.sign(
            self.signer,
            token_id=t,
            maker_amount=m,
            taker_amount=k,
            side=sd,
            salt=sl,
            timestamp=ts,
            neg_risk=neg,
        )
        return str(signed.signature)


def v2_operations(s: Settings, notes: list[str], say: Callable[[str], None]) -> list[Operation]:
    """The V2 order-id and signed-order operations, checked against every installed peer."""
    say(f"V2 orders: building {s.batch_v2:,} orders")
    ck = _Clobkit()
    batch = v2_orders(s.batch_v2, seed=17)
    timing = rows_v2(batch, 100)
    checks = [r for neg in (False, True) for r in rows_v2(batch, s.checks, neg)]
    sign_checks = checks[: s.checks // 2] + checks[s.checks : s.checks + s.checks // 2]
    peers = _load_peers(notes)
    ids = Operation("order_id_v2", "order id V2")
    ids.contenders += [_single_id(ck, timing), *_batch_ids(ck, batch, s.batch_v2)]
    expected = [ck.order_id(*row) for row in checks]
    for name, peer_id, _ in peers:
        ids.contenders.append(_peer(f"{name} {PEER_CALLS[name][0]}", peer_id, timing))
        _check(ids.contenders[-1], peer_id, checks, expected, "ids equal")
    sig = Operation("sign_v2", "signed order V2 (hash + sign)")
    sig.contenders += [_single_sign(ck, timing), *_batch_signs(ck, batch, s.batch_v2)]
    expected = [ck.sign(*row) for row in sign_checks]
    for name, _, peer_sign in peers:
        sig.contenders.append(_peer(f"{name} {PEER_CALLS[name][1]}", peer_sign, timing))
        _check(sig.contenders[-1], peer_sign, sign_checks, expected, "signatures equal")
    try:
        sig.contenders.append(_ecdsa_contender(ck, timing, sign_checks, expected))
    except ImportError as exc:  # coincurve is a runtime dependency; say so if it is gone
        notes.append(f"coincurve not installed ({exc.name}): the ECDSA floor E skipped")
    return [ids, sig]


def _peer(name: str, fn: OrderFn, timing: list[Order]) -> Contender:
    return Contender(name, "peer", _looped(fn, timing), len(timing))


def _check(c: Contender, fn: OrderFn, rows: list[Order], expected: list[str], label: str) -> None:
    """Compare ``fn`` with clobkit's results on ``rows``; the tally goes to ``c``."""
    bad = sum(fn(*r) != want for r, want in zip(rows, expected, strict=True))
    tally(c, len(rows), bad, label)


def _single_id(ck: _Clobkit, timing: list[Order]) -> Contender:
    """``order_id`` one order at a time, keywords spelled out as a caller writes them."""

    def single(reps: int) -> None:
        oid = ck.hasher.order_id
        for _ in range(reps):
            for t, m, k, sd, sl, ts, _neg in timing:
                oid(token_id=t, maker_amount=m, taker_amount=k, side=sd, salt=sl, timestamp=ts)

    c = Contender("clobkit order_id (V2)", "clobkit", single, len(timing))
    c.correctness = "reference"
    return c


def _batch_ids(ck: _Clobkit, batch: dict[str, list[Any]], n: int) -> list[Contender]:
    """``order_ids`` of the whole batch on 1 and 2 threads; 20,000 of its ids checked."""
    sample = range(0, n, max(1, n // 20_000))
    every = rows_v2(batch, n)
    out = []
    for threads in (1, 2):

        def many(reps: int, threads: int = threads) -> None:
            for _ in range(reps):
                ck.hasher.order_ids(**batch, threads=threads)

        c = Contender(f"clobkit order_ids (V2) ×{n:,}, threads={threads}", "clobkit", many, n)
        got = ck.hasher.order_ids(**batch, threads=threads)
        tally(c, len(sample), sum(got[i] != ck.order_id(*every[i]) for i in sample), "= order_id")
        out.append(c)
    return out


def _single_sign(ck: _Clobkit, timing: list[Order]) -> Contender:
    """``hasher.sign`` one order at a time."""

    def sign_one(reps: int) -> None:
        sign, signer = ck.hasher.sign, ck.signer
        for _ in range(reps):
            for t, m, k, sd, sl, ts, _neg in timing:
                sign(
                    signer,
                    token_id=t,
                    maker_amount=m,
                    taker_amount=k,
                    side=sd,
                    salt=sl,
                    timestamp=ts,
                )

    c = Contender("clobkit hasher.sign", "clobkit", sign_one, len(timing))
    c.correctness = "reference"
    return c


def _batch_signs(ck: _Clobkit, batch: dict[str, list[Any]], n_batch: int) -> list[Contender]:
    """``sign_many`` of SIGN_BATCH orders on 1 and 2 threads, each signature checked."""
    n = min(SIGN_BATCH, n_batch)
    columns = {k: v[:n] for k, v in batch.items()}
    signing = rows_v2(batch, n)
    out = []
    for threads in (1, 2):

        def sign_many(reps: int, threads: int = threads) -> None:
            for _ in range(reps):
                ck.hasher.sign_many(ck.signer, **columns, threads=threads)

        c = Contender(f"clobkit sign_many ×{n:,}, threads={threads}", "clobkit", sign_many, n)
        got = ck.hasher.sign_many(ck.signer, **columns, threads=threads)
        bad = sum(o.signature != ck.sign(*r) for o, r in zip(got, signing, strict=True))
        tally(c, n, bad, "= sign")
        out.append(c)
    return out


def _ecdsa_contender(
    ck: _Clobkit, timing: list[Order], checks: list[Order], expected: list[str]
) -> Contender:
    """E: the bare libsecp256k1 signature of each order's digest (no formatting in the timing)."""
    bare, e = ecdsa_floor()
    digests = [bytes.fromhex(ck.order_id(*r)[2:]) for r in timing]

    def floor(reps: int) -> None:
        for _ in range(reps):
            for d in digests:
                bare(d)

    c = Contender("E: bare ECDSA, coincurve sign_recoverable", "floor", floor, len(digests))
    _check(
        c, lambda *r: e(bytes.fromhex(ck.order_id(*r)[2:])), checks, expected, "signatures equal"
    )
    return c
