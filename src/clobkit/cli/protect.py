"""``clobkit cancel-all`` and ``clobkit sentinel``: what protects an account's orders
outside a running desk (docs/when-the-bot-dies.md)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..core.spec import ENV_SENTINEL_TOKEN
from .base import Connection, Failed, Usage
from .common import EXIT_OK, Commands, add_connection, check_positive, extra_missing

if TYPE_CHECKING:
    from ..client import Client


def add_cancel_all(sub: Commands) -> None:
    """``clobkit cancel-all``."""
    p = sub.add_parser(
        "cancel-all",
        help="cancel every open order of the account",
        description=(
            "List every open order of the account (all pages), cancel every live one at "
            "once, and list again until nothing rests (orders still being processed are "
            "cancelled once live). Prints the counts; exits 1 if anything still rests at "
            "the end of --timeout."
        ),
    )
    p.add_argument("--market", metavar="ID", help="only the orders of this market")
    p.add_argument("--dry-run", action="store_true", help="list what would be cancelled")
    p.add_argument(
        "--timeout", type=float, default=60.0, metavar="SECONDS", help="give up after (60)"
    )
    add_connection(p)
    p.set_defaults(handler=_cmd_cancel_all)


def add_sentinel(sub: Commands) -> None:
    """``clobkit sentinel``."""
    p = sub.add_parser(
        "sentinel",
        help="cancel every order of the account when a desk falls silent",
        description=(
            "Listen for the heartbeats of desks (Desk(..., sentinel='http://HOST:PORT')), "
            f"signed with the token in ${ENV_SENTINEL_TOKEN} (the same on both sides), and "
            "when a desk it heard sends none for --heartbeat-timeout seconds, cancel every "
            "open order of the account until nothing rests, then keep watching. Needs the "
            "sentinel extra and a key with orders:write. docs/when-the-bot-dies.md."
        ),
    )
    p.add_argument(
        "--listen",
        default="127.0.0.1:8765",
        metavar="HOST:PORT",
        help="where desks send heartbeats (default 127.0.0.1:8765)",
    )
    p.add_argument(
        "--heartbeat-timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="silence after which every order is cancelled (default 5)",
    )
    p.add_argument(
        "--linger",
        type=float,
        metavar="SECONDS",
        help="after firing, sweep again for this long (default: 60, a late place's landing)",
    )
    add_connection(p, clob=True)
    p.set_defaults(handler=_cmd_sentinel)


def _cmd_cancel_all(args: argparse.Namespace) -> int:
    from ..client import Client

    check_positive(args, "timeout")
    conn = Connection.from_args(args)
    conn.require("base_url", "api_key", "api_secret")
    with Client(conn.base_url, conn.api_key, conn.api_secret) as client:
        if args.dry_run:
            return _dry_run(client, args.market)
        result = client.cancel_all_orders(args.market, timeout=args.timeout)
    print(
        f"cancelled {len(result.cancelled)}, already gone {len(result.gone)}, "
        f"still resting {len(result.remaining)} ({result.rounds} listings, "
        f"{result.deletes} DELETEs)"
    )
    if not result.confirmed:
        raise Failed("the last listing failed: nothing confirms what rests")
    if result.remaining:
        shown = ", ".join(o.id for o in result.remaining[:10])
        more = "" if len(result.remaining) <= 10 else ", ..."
        raise Failed(f"{len(result.remaining)} orders still rest: {shown}{more}")
    return EXIT_OK


def _dry_run(client: Client, market_id: str | None) -> int:
    """Print every open order (of ``market_id``) and their count; nothing cancelled."""
    if market_id is not None and not market_id.strip():
        raise Usage("--market must name a market id")
    orders = [o for o in client.open_orders() if market_id is None or o.market_id == market_id]
    for o in orders:
        price = o.limit_price if o.limit_price is not None else o.clob_price
        print(
            f"{o.id}  {o.market_id} {o.outcome}  {o.side} {price} x {o.original_size}  {o.status}"
        )
    print(f"would cancel {len(orders)} open orders")
    return EXIT_OK


def _cmd_sentinel(args: argparse.Namespace) -> int:
    try:
        import starlette  # noqa: F401 - the listener's; checked before anything starts
        import uvicorn  # noqa: F401
    except ModuleNotFoundError as exc:
        raise Failed(extra_missing("sentinel", exc)) from None
    from ..sentinel.listener import split_listen
    from ..sentinel.wire import read_token

    check_positive(args, "heartbeat_timeout")
    if args.linger is not None and args.linger < 0:
        raise Usage(f"--linger must be 0 or more seconds (got {args.linger})")
    try:
        split_listen(args.listen)
    except ValueError as exc:
        raise Usage(str(exc)) from None
    read_token()  # a ValidationError: a usage error, said before anything starts
    conn = Connection.from_args(args)
    conn.require("base_url", "api_key", "api_secret")
    _watch(conn, args)
    return EXIT_OK


def _watch(conn: Connection, args: argparse.Namespace) -> None:
    import logging

    from ..client import AsyncClient
    from ..sentinel.run import run_sentinel
    from .services import until_stopped

    logging.basicConfig(format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr)
    logging.getLogger("clobkit").setLevel(logging.INFO)  # what it heard, what it did

    def announce(line: str) -> None:
        print(line, flush=True)

    async def watch() -> None:
        url, key, secret = conn.base_url, conn.api_key, conn.api_secret
        async with AsyncClient(url, key, secret, clob_url=conn.clob_url) as client:
            await run_sentinel(
                client, args.listen, args.heartbeat_timeout, linger=args.linger, announce=announce
            )

    until_stopped(watch())
