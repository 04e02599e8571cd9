"""``clobkit demo``: a market maker's loop with the real client, step by step.

Embedded (default): a sandbox in this process; events, a book, amounts, a
precomputed ``clob_order_id``, a raw GTC order followed on the stream, a
partial fill by the house, a cancel, positions. Remote (a base URL is
configured): the read-only part against that service; nothing is placed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, NamedTuple, TextIO

from ..amounts import from_units, limit_amounts
from ..client import Client, SyncStream, orders_topic
from ..core.select import IMPLEMENTATION, PURE_BY_CHOICE
from ..core.spec import CANCELLED, LIVE, OUTCOME_A
from ..core.types import Amounts
from ..errors import OrderBookNotFound
from ..models import Event, Market, Order, Orderbook, StreamMessage
from ..order_id import OrderHasher
from ..salt import new_salt
from .base import Failed

if TYPE_CHECKING:
    from ..sandbox import Sandbox
    from .base import Connection

__all__ = ["run_demo"]

TICK = Decimal("0.01")
SIZE = 20  # shares of the demo order
FILL = 8  # shares the house fills


class Steps:
    """Numbered, indented output, flushed after every line."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.n = 0

    def title(self, text: str) -> None:
        self.n += 1
        self.line(f"\n{self.n}. {text}", indent="")

    def line(self, text: str = "", indent: str = "   ") -> None:
        self.out.write(indent + text + "\n")
        self.out.flush()


def _missing_core_note() -> str | None:
    """What a pure-Python run costs and how to leave it, unless CLOBKIT_NO_EXTENSIONS chose it.

    A source install without a C compiler falls back to the pure twin (setup.py),
    and pip shows the build's warning only with ``-v``: the demo says it again.
    """
    if IMPLEMENTATION == "c" or PURE_BY_CHOICE:
        return None
    return (
        "note: the compiled core clobkit.core._core_c is not installed"
        " (built without a C compiler?);\n"
        "      results are the same, but slower (clobkit order-ids on a 1,000,000-row file\n"
        "      10 to 20 times). Install a C compiler and reinstall:\n"
        "      pip install --force-reinstall --no-deps --no-cache-dir .   (or use a wheel)"
    )


def _units(value: int) -> str:
    return f"{from_units(value).normalize():f}"


def _short(address: str) -> str:
    return f"{address[:8]}...{address[-6:]}"


def _money(value: Decimal | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _kickoff(event: Event) -> str:
    when = event.start_time or (
        event.enriched_markets.game_start_time if event.enriched_markets else None
    )
    return when.strftime("%Y-%m-%d %H:%M UTC") if when else "date n/a"


def _prices(event: Event) -> str:
    em = event.enriched_markets
    if em is None or em.home_win is None or em.away_win is None:
        return ""
    home = (event.home_team.abbreviation if event.home_team else None) or "home"
    away = (event.away_team.abbreviation if event.away_team else None) or "away"
    return f"{home} {em.home_win.price}  {away} {em.away_win.price}"


def _upcoming(client: Client, league: str | None) -> list[Event]:
    events = client.list_events(league=league, limit=50).events
    games = [e for e in events if not e.is_future and not e.ended]
    return [e for e in games if not e.live] + [e for e in games if e.live]


def _pick_market(client: Client, events: list[Event]) -> tuple[Event, Market, Orderbook]:
    """The first market (detail shape) whose outcome-a token has a two-sided book."""
    for event in events:
        for market in client.get_event_markets(event.id):
            if market.token_id_a is None:
                continue
            try:
                book = client.get_orderbook(market.token_id_a)
            except OrderBookNotFound:
                continue
            if book.bids and book.asks:
                return event, client.get_market(market.id), book
    raise Failed("no market with a two-sided order book among these events")


def _book_lines(book: Orderbook, depth: int = 3) -> Iterator[str]:
    bids = sorted(book.bids, key=lambda level: level.price, reverse=True)[:depth]
    asks = sorted(book.asks, key=lambda level: level.price)[:depth]
    yield f"{'bid':>6} {'USDC':>10}   |   {'ask':>6} {'USDC':>10}"
    for i in range(max(len(bids), len(asks))):
        left = f"{bids[i].price:>6} {_money(bids[i].size):>10}" if i < len(bids) else " " * 17
        right = f"{asks[i].price:>6} {_money(asks[i].size):>10}" if i < len(asks) else ""
        yield f"{left}   |   {right}"


def _follow(
    stream: SyncStream, order_id: str, done: Callable[[Order], bool], timeout: float = 5.0
) -> list[Order]:
    """Updates of one order from the stream, until ``done`` says so (or ``timeout`` s)."""
    seen: list[Order] = []
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        item = stream.get(timeout=remaining)
        if item is None:
            break
        if isinstance(item, StreamMessage) and item.order is not None:
            if item.order_id != order_id:
                continue
            seen.append(item.order)
            if done(item.order):
                break
    return seen


def run_demo(conn: Connection, *, league: str, out: TextIO) -> int:
    """Run the demo; 0 when every check passed."""
    steps = Steps(out)
    started = time.perf_counter()
    core = "compiled" if IMPLEMENTATION == "c" else "pure-Python"
    if conn.base_url is not None:
        assert conn.api_key is not None
        assert conn.api_secret is not None
        steps.line(
            f"clobkit demo: the read-only part against {conn.base_url} ({core} core)", indent=""
        )
        if note := _missing_core_note():
            steps.line(note)
        with Client(conn.base_url, conn.api_key, conn.api_secret, clob_url=conn.clob_url) as client:
            steps.title("Connect")
            steps.line(f"{conn.base_url} as {conn.api_key}; read-only: no order is placed")
            return _loop(client, steps, league, started, sandbox=None, user_id=None)
    try:
        from ..sandbox import serve_in_thread
    except ModuleNotFoundError as exc:
        from ..core.extras import install_hint

        raise Failed(
            f"the demo needs the sandbox extra (missing {exc.name}): {install_hint('sandbox')}"
        ) from None
    steps.line(
        f"clobkit demo: a market maker's loop on the embedded sandbox ({core} core)", indent=""
    )
    if note := _missing_core_note():
        steps.line(note)
    steps.title("Start the sandbox (in this process, on loopback)")
    # a scripted tour: the house's prices still, so that its quote rests where it is put
    with serve_in_thread({"walk": None}) as sandbox:
        user = sandbox.users[0]
        steps.line(f"listening on {sandbox.base_url}, as {user.api_key} ({user.balance:,} USDC)")
        with Client(sandbox.base_url, user.api_key, user.api_secret) as client:
            return _loop(client, steps, league, started, sandbox=sandbox, user_id=user.user_id)


class _Plan(NamedTuple):
    """The demo order: what goes into its hash, and the id computed offline."""

    market: Market
    price: Decimal
    size: int
    amounts: Amounts
    salt: int
    fee: int
    clob_order_id: str


def _loop(
    client: Client,
    steps: Steps,
    league: str,
    started: float,
    *,
    sandbox: Sandbox | None,
    user_id: str | None,
) -> int:
    market, book = _browse(client, steps, league)
    plan = _precompute(client, steps, market, book)
    if sandbox is None:
        _positions(client, steps)
        elapsed = time.perf_counter() - started
        steps.line(f"\nDone in {elapsed:.1f} s (read-only: no order was placed).", indent="")
        return 0
    assert user_id is not None
    with client.stream([orders_topic(user_id)]) as stream:
        order_id = _place(client, steps, stream, plan)
        _fill(client, steps, stream, sandbox, order_id, plan.size)
        _cancel(client, steps, stream, order_id, plan)
    _positions(client, steps)
    elapsed = time.perf_counter() - started
    steps.line(
        f"\nDone in {elapsed:.1f} s. The precomputed clob_order_id matched the server's.",
        indent="",
    )
    return 0


def _browse(client: Client, steps: Steps, league: str) -> tuple[Market, Orderbook]:
    """Steps: the league's upcoming events, then the book of the first market that has one."""
    steps.title(f"Browse upcoming {league} events: GET /events?league={league}")
    events = _upcoming(client, league)
    if not events:
        steps.line(f"no {league} events here; browsing every league")
        events = _upcoming(client, None)
    for event in events[:3]:
        steps.line(f"{(event.title or event.id)[:44]:<44}  {_kickoff(event)}  {_prices(event)}")
    event, market, book = _pick_market(client, events)
    token = market.token_id_a
    assert token is not None
    outcome_name = market.outcome_a or "outcome a"

    steps.title(f'Read the book of "{outcome_name}": GET /orderbooks/:token_id')
    steps.line(f"{event.title}; token {token[:10]}...{token[-6:]}")
    for text in _book_lines(book):
        steps.line(text)
    return market, book


def _precompute(client: Client, steps: Steps, market: Market, book: Orderbook) -> _Plan:
    """Steps: the amounts of a BUY two ticks under the best bid, then its id, offline."""
    best_bid = book.best_bid
    assert best_bid is not None
    price = max(TICK, best_bid - 2 * TICK)
    size = SIZE
    if book.min_order_size and price * size < book.min_order_size:
        size = math.ceil(book.min_order_size / price)
    amounts = limit_amounts("BUY", price, size)
    steps.title(f"Compute the amounts: BUY {size} shares at {price} (2 ticks under the best bid)")
    steps.line(
        f"maker_amount {amounts.maker_amount} ({_units(amounts.maker_amount)} USDC paid), "
        f"taker_amount {amounts.taker_amount} ({_units(amounts.taker_amount)} shares received)"
    )

    steps.title("Precompute the clob_order_id offline")
    token = market.token_id_a
    assert token is not None
    wallet = client.get_wallet()
    fee = client.get_fee_rate(token)
    salt = new_salt()
    neg_risk = bool(market.neg_risk)
    precomputed = OrderHasher(wallet).order_id(
        token_id=token,
        maker_amount=amounts.maker_amount,
        taker_amount=amounts.taker_amount,
        side="BUY",
        salt=salt,
        fee_rate_bps=fee,
        neg_risk=neg_risk,
    )
    exchange = "NegRisk" if neg_risk else "CTF"
    steps.line(
        f"wallet maker {_short(wallet.maker)}, fee {fee} bps (GET /fee-rate), "
        f"salt {salt}, {exchange} exchange"
    )
    steps.line(f"clob_order_id {precomputed}")
    return _Plan(market, price, size, amounts, salt, fee, precomputed)


def _place(client: Client, steps: Steps, stream: SyncStream, plan: _Plan) -> str:
    """Step: send the order; the server's clob_order_id must be the precomputed one."""
    steps.title("Place it: POST /orders/raw (GTC), followed on the WebSocket stream")
    placed = client.place_raw_order_amounts(
        plan.market.id,
        OUTCOME_A,
        "BUY",
        plan.amounts.maker_amount,
        plan.amounts.taker_amount,
        order_type="GTC",
        salt=plan.salt,
        fee_rate_bps=plan.fee,
    )
    order_id = placed.order_id
    updates = _follow(stream, order_id, lambda o: o.status == LIVE)
    steps.line(f"order {order_id}")
    steps.line(f"stream: {' -> '.join(str(o.status) for o in updates) or '(no update)'}")
    server = client.get_order(order_id)
    matches = server.clob_order_id == plan.clob_order_id == placed.clob_order_id
    steps.line(f"server's clob_order_id {server.clob_order_id}")
    steps.line(f"equals the precomputed one: {'yes' if matches else 'NO'}")
    if not matches:
        raise Failed("the server's clob_order_id differs from the precomputed one")
    return order_id


def _fill(
    client: Client, steps: Steps, stream: SyncStream, sandbox: Sandbox, order_id: str, size: int
) -> None:
    """Step: the house fills part of the order (the sandbox's admin route)."""
    steps.title(f"The house fills {FILL} of the {size} shares (sandbox admin route)")
    sandbox.house_fill(order_id, FILL)
    filled = _follow(stream, order_id, lambda o: (o.size_matched or 0) >= FILL)
    last = filled[-1] if filled else client.get_order(order_id)
    steps.line(f"stream: {last.status}, size_matched {last.size_matched} of {size}")


def _cancel(client: Client, steps: Steps, stream: SyncStream, order_id: str, plan: _Plan) -> None:
    """Step: cancel what is left, and say what it released."""
    steps.title(f"Cancel the rest: DELETE /orders/{order_id}")
    result = client.cancel_order(order_id)
    _follow(stream, order_id, lambda o: o.status == CANCELLED, timeout=2.0)
    final = client.get_order(order_id)
    left = Decimal(plan.size) - (final.size_matched or Decimal(0))
    steps.line(f"{result.status}; {left} unfilled shares released ({left * plan.price} USDC)")


def _positions(client: Client, steps: Steps) -> None:
    steps.title("Positions: GET /portfolio/positions")
    positions = client.list_positions(per_page=5).positions
    if not positions:
        steps.line("(none)")
    for p in positions:
        pnl = p.pnl if p.pnl is not None else Decimal(0)
        steps.line(
            f"{(p.outcome or p.token_id or '?')[:28]:<28} {p.shares} shares  avg {p.avg_cost}  "
            f"value {_money(p.current_value)} USDC  pnl {pnl:+.2f}"
        )
