"""``clobkit salts``, ``clobkit amounts`` and ``clobkit extras``: offline, no connection."""

from __future__ import annotations

import argparse
import sys
from decimal import ROUND_HALF_EVEN, Decimal

from ..core.spec import SALT_RANGE, SIDES
from ..errors import ValidationError
from .base import Usage
from .common import EXIT_OK, Commands


def add_salts(sub: Commands) -> None:
    """``clobkit salts``."""
    p = sub.add_parser(
        "salts",
        help="print N order salts",
        description=f"Print N salts, uniform on {SALT_RANGE} from the OS CSPRNG, one per line.",
    )
    p.add_argument("n", type=_positive, metavar="N", help="how many")
    p.set_defaults(handler=_cmd_salts)


def add_amounts(sub: Commands) -> None:
    """``clobkit amounts``."""
    p = sub.add_parser(
        "amounts",
        help="exact maker/taker amounts of an order",
        description=(
            "Exchange amounts in 6-decimal units for a limit order of SIZE shares at PRICE, "
            "or with --market for SIZE = USDC to spend (BUY) or shares to sell (SELL)."
        ),
    )
    p.add_argument("side", metavar="SIDE", help="BUY or SELL")
    p.add_argument("price", metavar="PRICE", help="price, e.g. 0.55")
    p.add_argument("size", metavar="SIZE", help="shares (limit) or amount (--market)")
    p.add_argument(
        "--tick", default="0.01", help="tick size: 0.1, 0.01, 0.005, 0.0025, 0.001, 0.0001"
    )
    p.add_argument("--market", action="store_true", help="market-order rounding")
    p.add_argument("--round-price", action="store_true", help="round an off-grid price")
    p.set_defaults(handler=_cmd_amounts)


def add_extras(sub: Commands) -> None:
    """``clobkit extras``."""
    p = sub.add_parser(
        "extras",
        help="print the pip line that adds an extra",
        description=(
            "Print the pip line that adds an extra to this clobkit: its packages by name, "
            "read from clobkit's own metadata. It works beside a wheel and in a checkout, and "
            "never builds the compiled core again. Without NAME: every extra's line."
        ),
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="an extra: sandbox, data, dask, ...")
    p.set_defaults(handler=_cmd_extras)


def _cmd_extras(args: argparse.Namespace) -> int:
    from ..core.extras import extras, install_hint

    known = extras()
    if args.name is not None and known and args.name not in known:
        raise Usage(f"no extra {args.name!r}: {', '.join(known)}")
    for name in known if args.name is None else [args.name]:
        print(install_hint(name) if args.name else f"{name}: {install_hint(name)}")
    return EXIT_OK


def _cmd_salts(args: argparse.Namespace) -> int:
    from ..salt import new_salts

    remaining = args.n
    out = sys.stdout
    while remaining > 0:
        chunk = min(remaining, 65536)
        out.write("\n".join(map(str, new_salts(chunk))) + "\n")
        remaining -= chunk
    return EXIT_OK


def _units(value: int) -> str:
    from ..amounts import from_units

    return f"{from_units(value).normalize():f}"


def _cmd_amounts(args: argparse.Namespace) -> int:
    from ..amounts import limit_amounts, market_amounts

    side = args.side
    if side not in SIDES:  # the API's spelling, as place_raw_order and the core take it
        raise Usage(f"SIDE must be BUY or SELL, in capitals (got {side!r})")
    compute = market_amounts if args.market else limit_amounts
    try:
        amounts = compute(side, args.price, args.size, args.tick, round_price=args.round_price)
    except ValidationError as exc:
        # name the flag, not the Python argument
        raise Usage(str(exc).replace("round_price=True", "--round-price")) from None
    paid, received = ("USDC", "shares") if side == "BUY" else ("shares", "USDC")
    maker, taker = amounts.maker_amount, amounts.taker_amount
    # the size the amounts are for (the core refuses one with more than 2 decimals)
    if args.market:
        used, unit, kind = maker, paid, "market"
    else:
        used, unit, kind = (taker if side == "BUY" else maker), "shares", "limit"
    what = f"{_units(used)} {unit}"
    width = len(str(max(maker, taker)))
    price = args.price
    if args.round_price:
        rounded = Decimal(price).quantize(Decimal(args.tick), rounding=ROUND_HALF_EVEN)
        if rounded != Decimal(price):
            price = f"{rounded} ({args.price} rounded)"
    print(f"{side} {what} at {price} ({kind}, tick {args.tick})")
    print(f"maker_amount {maker:>{width}}  ({_units(maker)} {paid} paid)")
    print(f"taker_amount {taker:>{width}}  ({_units(taker)} {received} received)")
    return EXIT_OK


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return number
