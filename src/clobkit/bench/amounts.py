"""``clobkit bench`` rows for amounts: limit/market_amounts against py-clob-client and Decimal.

clobkit's ``limit_amounts`` / ``market_amounts`` against py-clob-client's
``get_order_amounts`` / ``get_market_order_amounts`` and a hand-written
``decimal.Decimal`` reading of the rounding rules; correctness is the number
of mismatches over the whole tick-0.01 grid, where clobkit is also held to
the Decimal reading.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from typing import Any

from .. import limit_amounts, market_amounts
from ..core.spec import DECIMALS
from ._timing import INSTALL_HINT, Contender, Operation, Settings, tally

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
    return int(x.scaleb(DECIMALS))


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
        tally(c, n, res["clobkit_vs_decimal"], "= Decimal rules")
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
        tally(c, n, res["clobkit_vs_decimal"], "= clobkit")
        op.contenders.append(c)
        ops.append(op)
    return ops, grid
