"""The ``Quoter``: keeps a ladder of resting orders on the service equal to the wanted one.

It is a strategy on the execution layer (``execution.Execution``): every order is
built before it is sent and tracked from then on in the execution cache by the
``client_order_id`` it carries (the service's idempotency key, which the order
record echoes as ``order_source_id``), on a V1 wallet also by its precomputed
``clob_order_id``; every state change goes through the order state machine
(``orders.TRANSITIONS``); every quote passes the one pre-trade gate before anything
is sent. A place whose outcome is unknown stays unknown until it is seen or ruled
out: it holds its level (nothing is placed beside it), and one that lands late is
kept when still wanted, else cancelled. See docs/market-making.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable
from decimal import Decimal
from types import TracebackType
from typing import Protocol

from ..client import UNKNOWN_OUTCOME, AsyncClient
from ..core.select import from_units, to_units
from ..errors import (
    ApiError,
    ClobkitError,
    OrderBookNotFound,
    QuoteRefused,
    RiskControlError,
)
from ..models import Market, Order, Orderbook
from ..signing.protocol import AsyncSigner
from .book import BookMirror
from .cache import Holding
from .execution import Execution
from .feed import Feed, Streams
from .gate import Paced
from .ladder import Level, Quote, diff, read_ladder
from .options import check_quoter
from .orders import LIVE, Fill, State, TrackedOrder
from .plan import cancels_first, check_ladders, check_plan, standing, unwanted
from .reads import SharedReads
from .renewal import Expiry, expiry
from .report import RequoteReport, report
from .risk import Limits, Number, units
from .tasks import Rerun, all_of, beside, leaving

__all__ = ["Fill", "Quoter", "RequoteReport", "Seat"]

log = logging.getLogger("clobkit.mm")


class Seat(Streams, Protocol):
    """What a quoter needs of the desk that runs it (``desk.Desk`` is one): its
    execution layer and shared reads, its streams (``feed.Streams``), and its roll of
    quoters. A protocol rather than an import of ``desk``, which makes quoters."""

    @property
    def execution(self) -> Execution: ...
    @property
    def reads(self) -> SharedReads: ...
    async def open(self, *quoters: Quoter) -> None: ...
    def join(self, q: Quoter) -> None: ...
    def forget(self, q: Quoter) -> None: ...
    async def held(self, q: Quoter) -> int: ...
    async def listed(self, q: Quoter) -> list[Order]: ...


class Quoter:
    """Keeps the wanted ladder of ``outcome`` (``a``/``b``) of ``market_id`` on the service.

    ``async with Quoter(client, market_id, "a") as q: await q.requote([...])``.
    On enter it reads the market (tokens, ``neg_risk``, minimum order size, fee
    rate), subscribes to the user's order topic and the outcome's book topic,
    and adopts the live orders of that market and outcome. On exit it cancels
    its open orders (unless ``cancel_on_exit`` is false): a ``DELETE`` for every
    order it knows first, then listings until nothing of it rests
    (``exit_timeout`` s at most); then it closes its stream.

    ``book`` mirrors the outcome's book (read over REST on enter, then the stream's);
    ``book.stale`` is true while the stream is down and after a reconnect until a
    fresh book comes (the subscription's snapshot), ``book.age`` its seconds.

    It runs on every exchange version of the wallet (``exchange_version``): on V1
    each order's ``clob_order_id`` is precomputed; on V2/V3 it signs the service's
    timestamp and is learnt from the order's record (stream, else REST) before
    ``requote`` returns. Either way each order is tracked by its ``client_order_id``.

    Limits, checked by the gate before anything is sent (``QuoteRefused``): at most
    ``max_open_orders`` quotes; ``max_position`` shares held if every quote filled;
    ``max_notional`` USDC over the ladder. On its own, at most ``orders_per_minute``
    places in any minute when given (a service's per-minute risk control; learnt from
    its refusals too: ``Gate``). ``order_ttl`` (s, or an ``Expiry``): every quote is a
    GTD order that expires that long after it is placed, renewed before it does while
    the quoter lives (``renewal.Renewer``; on a desk, the desk's). ``user_id``
    (optional) names the account; without it the quoter learns it from the first
    order it sees. ``desk``: the ``Desk`` (a ``Seat``) that runs it (``Desk.quoter``
    passes itself), else it runs alone, with an execution layer and a stream of its
    own. ``signer`` (alone; on a desk, the desk's): signs each order before its POST
    (``Desk``); ``presign`` signs ahead.
    """

    def __init__(
        self,
        client: AsyncClient,
        market_id: str,
        outcome: str,
        *,
        max_open_orders: int = 50,
        max_position: Number | None = None,
        max_notional: Number | None = None,
        cancel_on_exit: bool = True,
        user_id: str | None = None,
        orders_per_minute: int | None = None,
        order_ttl: float | Expiry | None = None,
        desk: Seat | None = None,
        signer: AsyncSigner | None = None,
    ) -> None:
        alone = {"orders_per_minute": orders_per_minute, "order_ttl": order_ttl, "signer": signer}
        check_quoter(market_id, outcome, max_open_orders, desk is not None, alone)
        policy = expiry(order_ttl)
        self.client = client
        self.market_id = market_id
        self.outcome = outcome
        self.max_open_orders = max_open_orders
        self.limits = Limits(
            max_open_orders,
            units(max_position, "max_position"),
            units(max_notional, "max_notional"),
        )
        self.cancel_on_exit = cancel_on_exit
        self.user_id = user_id
        self.desk = desk
        #: (market id as given, outcome): its key on its desk.
        self.key = (market_id, outcome)
        #: The market as read on enter; ``event_id``, ``token_id``, ``neg_risk``,
        #: ``fee_rate_bps`` and the wallet's ``exchange_version`` (1, 2 or 3) with it.
        self.market: Market | None = None
        self.event_id: str | None = None
        self.token_id = ""
        self.neg_risk = False
        self.fee_rate_bps = 0
        self.exchange_version = 0
        #: Seconds an exit (or ``cancel_all``) keeps listing until nothing rests.
        self.exit_timeout = 10.0
        self.execution = (
            desk.execution
            if desk is not None
            else Execution.lone(client, orders_per_minute, self.owns, signer, policy)
        )
        #: A lone quoter's reads (a desk's quoters share the desk's).
        self.reads = SharedReads(client, self.execution.gate, lambda: False)
        self.feed: Feed | None = None
        self._lock = asyncio.Lock()
        self._wanted: list[Level] | None = None  # the last ladder requoted (late landings)
        # cancels the late landings the last ladder does not want (once more for one
        # landing while its cancels are in flight: it listed the unwanted before)
        self._tidying = Rerun(self._tidy, "clobkit-tidy", _tidy_failed)
        self._closed = False

    def __repr__(self) -> str:
        return (
            f"Quoter(market_id={self.market_id!r}, outcome={self.outcome!r}, "
            f"open={len(self.open_orders)}, position={self.position})"
        )

    # -- what it holds ----------------------------------------------------------

    @property
    def owner(self) -> tuple[str, str]:
        """(market id, outcome): its key in the execution cache and the gate."""
        return (self.market_id, self.outcome)

    def owns(self, record: Order) -> tuple[str, str] | None:
        """This quoter's key, if ``record`` is an order of its market and outcome."""
        mine = record.market_id == self.market_id and record.outcome == self.outcome
        return self.owner if mine else None

    @property
    def _holding(self) -> Holding:
        return self.execution.cache.holding(self.owner)

    @property
    def position(self) -> Decimal:
        """Shares of the outcome held: the holding read on enter plus the fills since."""
        return from_units(self._holding.position)

    @property
    def fills(self) -> deque[Fill]:
        """Fills seen so far, oldest first (the last 10,000; a deque: pop as you read)."""
        return self._holding.fills

    @property
    def fill_count(self) -> int:
        """Fills seen so far (all of them)."""
        return self._holding.count

    @property
    def open_orders(self) -> list[Order]:
        """The quoter's live orders on the service (``Order`` with ``clob_order_id``)."""
        return [
            t.record
            for t in self.execution.cache.orders(self.owner)
            if t.state in LIVE and t.record is not None
        ]

    @property
    def pending(self) -> int:
        """Orders whose place or cancel is unresolved (of unknown outcome included)."""
        return sum(1 for t in self.execution.cache.orders(self.owner) if t.state is not State.OPEN)

    @property
    def position_units(self) -> int:
        """``position`` in share units (1 share = 1_000_000)."""
        return self._holding.position

    def read_quotes(self, quotes: Iterable[Quote]) -> list[Level]:
        """``quotes`` as ``Level``s checked against the market's minimum
        (``ladder.read_ladder``); ``QuoteRefused`` or ``AmountError`` naming the first
        one that cannot be quoted."""
        return read_ladder(quotes, self._min_order(), f"{self.market_id} {self.outcome}")

    def resting(self) -> list[Level]:
        """Every order that may rest on the service (open, or with a place or cancel in
        flight or of unknown outcome) as a ``Level`` of its remaining shares."""
        return self.execution.cache.resting(self.owner)

    @property
    def book(self) -> BookMirror:
        """The outcome's book (an empty one, never fed, before enter)."""
        return self.feed.book if self.feed is not None else BookMirror("")

    @property
    def min_order_size(self) -> Decimal | None:
        """The market's minimum order value in USDC, when known."""
        return None if self.feed is None else self.feed.min_order_size

    @property
    def book_topic(self) -> str:
        """The outcome's book topic ("" before enter)."""
        return "" if self.feed is None else self.feed.book_topic

    @property
    def stale(self) -> bool:
        """Whether order messages were lost since the view was last read (a reconnect):
        the next requote re-reads first."""
        return self.feed is not None and self.feed.stale

    @property
    def deaf(self) -> str | None:
        """Why the service refused the user's order topic (fills would go unheard),
        else ``None``: new quotes are refused meanwhile."""
        return None if self.feed is None else self.feed.deaf

    @property
    def reconnects(self) -> int:
        return 0 if self.feed is None else self.feed.reconnects

    @property
    def retries(self) -> int:
        """Places and cancels sent again after the service showed they had not happened."""
        return self.execution.resolver.resent.get(self.owner, 0)

    # -- enter and exit -------------------------------------------------------

    async def __aenter__(self) -> Quoter:
        self._closed = False
        if self.desk is not None:
            self.desk.join(self)
        await self._read_market()
        if self.desk is None and self.execution.sender.signer is not None:
            await self.client.check_signer(self.execution.sender.signer)
        self.execution.gate.join(self.owner, self.limits, self.event_id)
        feed = self.feed = Feed(
            self.client,
            self.execution.cache,
            self.owner,
            self.token_id,
            self._read_book,
            self.reconcile,
        )
        self.execution.cache.on_live[self.owner] = self._landed
        self.execution.renew(self.owner, self._renew, alone=self.desk is None)
        try:
            await self._first_book(feed)
            await self._listen(feed)
            await self._adopt_live()
        except BaseException:
            await self._close()
            raise
        return self

    async def _read_market(self) -> None:
        """The market, its token and ``neg_risk``, the wallet's version, the fee rate."""
        client = self.client
        # the market (caching tokens and neg_risk), the wallet, both tokens' fee rates; on
        # a desk one read for the quoters of a market opening together
        reads = self.reads if self.desk is None else self.desk.reads
        market = await reads.market(self.market_id)
        self.market = market
        self.market_id = market.id  # as the service spells it
        self.event_id = market.event_id
        # all cached by prepare(): no request (on a desk, none to charge to its budget)
        self.exchange_version = await client.exchange_version()
        info = await client.market_info(market.id)
        self.token_id = info.token(self.outcome)
        self.neg_risk = info.neg_risk
        self.fee_rate_bps = await client.get_fee_rate(self.token_id)

    async def _read_book(self) -> Orderbook:
        return await self.execution.gate.request(
            "GET /orderbook", self.client.get_orderbook(self.token_id)
        )

    async def _first_book(self, feed: Feed) -> None:
        try:
            feed.take(await self._read_book())
        except OrderBookNotFound:
            return

    async def _listen(self, feed: Feed) -> None:
        if self.user_id is None and self.desk is None:  # a desk learns it once for all
            self.user_id = await self.execution.gate.request("GET /orders", self.client.user_id())
        await feed.listen(self.user_id, self.desk)

    async def _adopt_live(self) -> None:
        """The position held and the live orders of this outcome, now that updates are
        heard (on a desk: one read of each shared by its quoters)."""
        desk = self.desk
        listed = None
        if desk is not None:
            held = await desk.held(self)
            listed = await desk.listed(self)
        else:
            held = await self.reads.held(self.token_id, self.owner)
        self._holding.position = held
        await self.reconcile(listed=listed)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await leaving(self.close(), exc, f"leaving {self!r}")

    async def close(self, *, cancel: bool | None = None) -> None:
        """Leave: cancel every order of the quoter (``cancel``, default
        ``cancel_on_exit``: see ``cancel_all``), stop hearing the service and leave the
        gate. A closed quoter refuses new quotes until entered again."""
        self._closed = True
        try:
            if self.cancel_on_exit if cancel is None else cancel:
                await self.cancel_all()
        finally:
            await self._close(forget=True)

    async def _close(self, forget: bool = False) -> None:
        await self._tidying.close()
        self.execution.cache.on_live.pop(self.owner, None)
        self.execution.renew(self.owner, None)
        self.execution.sender.presigned.forget(self.owner)
        if self.feed is not None:
            await self.feed.close(forget)
        if forget:
            self.execution.gate.leave(self.owner)
            self.execution.cache.forget(self.owner)  # its finished orders and held records
            if self.desk is not None:
                self.desk.forget(self)
        if self.desk is None:
            await self.execution.close()

    # -- requote --------------------------------------------------------------

    async def requote(self, quotes: Iterable[Quote]) -> RequoteReport:
        """Make the live ladder equal ``quotes``: keep the orders that already match (side,
        price, remaining size), cancel the others and place the missing ones, concurrently.

        Quotes breaking a limit or the market minimum raise ``QuoteRefused`` (bad prices
        or sizes the core's ``AmountError``) before anything is sent. A quote the service
        refuses for good raises its ``ApiError`` once everything else is done and the
        view is consistent, as an order the signer failed to sign raises its
        ``SignerError`` (the others sent, each once signed); one refused for a reason
        it may lift (a risk control's rate) is reported (``refused``) and the gate
        paces the places to come. Returns when every request has ended; an order
        whose outcome the service leaves unknown is
        reported (``unknown``) and tracked until it is seen or ruled out.
        """
        wanted = list(quotes)
        levels = (await check_plan(self.execution.gate, {self: wanted}, self._open))[self]
        async with self._lock:
            try:
                report = await self._requote(wanted, levels)
            finally:
                self._settle()
        refusals = [e for _, e in report.refused if not isinstance(e, (RiskControlError, Paced))]
        if refusals:
            raise refusals[0]
        return report

    async def presign(self, quotes: Iterable[Quote]) -> None:
        """Sign ``quotes``' orders now, while the ladder rests: a later requote places
        them without waiting for the signer (``mm.presign``: when it is safe)."""
        await self.execution.sender.presign(self.owner, self.read_quotes(quotes))

    async def _open(self, _: object) -> None:
        """On a desk, open on it when not yet open (reads only: the market, positions,
        live orders); alone, it was opened on enter."""
        if self.desk is not None and self.market is None:
            await self.desk.open(self)

    async def _requote(self, wanted: list[Quote], levels: list[Level]) -> RequoteReport:
        feed = self.feed
        assert feed is not None
        position = self._holding.position
        if feed.stale:
            await self._reconcile()
        else:
            await self.execution.resolver.settle(self.execution.cache.orders(self.owner))
        if self._holding.position != position:  # fills meanwhile: the limits again
            check_ladders(self.execution.gate, {self: levels})
        self._wanted = levels
        cache, sender, renewer = self.execution.cache, self.execution.sender, self.execution.renewer
        now = standing(cache.orders(self.owner), self.expiring)
        kept, cancel, place = diff(levels, now.keep)
        cancel += now.replace
        # old and new orders rest together while a requote is in flight: when both
        # could break a limit (the quoter's own or the desk's), the cancels go first
        resting = [*cancel, *now.retiring]  # renewed, left to expire: resting all the same
        union = [*levels, *(Level(o.side, o.price, o.remaining, 0, 0) for o in resting)]
        first = self.execution.gate.admit(self.owner, union, self._holding.position)
        kind = {} if renewer is None else renewer.order_kind()
        gone: list[TrackedOrder] = [o.handle for o in cancel]
        live = [*now.keep, *now.replace, *now.retiring]
        # the cancels leave first, while the new orders are signed (a remote signer
        # takes tens of ms): the quotes no longer wanted rest no longer than a cancel
        # takes. Each new order leaves once signed, unless the cancels must be done first
        async with beside(self._cancel(gone)) as cancels:
            await asyncio.sleep(0)  # a turn: the cancels' requests leave before any build
            if place and (first or cancels_first(place, gone, live, self._holding.position)):
                # together they could break a limit, or a new one trade with one cancelled
                sent = await sender.send_after(
                    self.owner, place, kind, lambda: self._room(gone, cancels)
                )
            else:
                sent = await sender.send_as_signed(self.owner, place, kind)
        new = sent.new
        await self.execution.resolver.settle(cache.orders(self.owner))
        await self.execution.resolver.learn_ids(new, lambda: feed.heard)
        if feed.stale:
            await self._reconcile()
        await self._learn_user(new)
        if sent.unbuilt is not None:  # a signer's failure: raised once the rest is done
            raise sent.unbuilt
        return report(wanted, levels, new, gone, kept, sent.refused)

    async def _cancel(self, gone: list[TrackedOrder]) -> None:
        await all_of(self.execution.sender.cancel(t) for t in gone)

    async def _room(self, gone: list[TrackedOrder], cancels: asyncio.Future[None]) -> None:
        """The ``cancels`` of ``gone`` done and read, and what may rest then (the new
        places included) fitting the limits: the places may go."""
        await cancels
        await self.execution.resolver.settle(gone)
        position = self._holding.position
        await self.execution.gate.admit_places(self.owner, self.resting(), position)

    async def _learn_user(self, new: list[TrackedOrder]) -> None:
        """Subscribe to the user's order topic once the first order names the user."""
        if self.user_id is not None or self.feed is None:
            return
        placed = next((t for t in new if t.order_id is not None), None)
        if placed is None or placed.order_id is None:
            return
        call = self.client.get_order(placed.order_id)
        record = await self.execution.gate.request("GET /orders/:id", call)
        self.execution.cache.apply(placed, record)
        if record.user_id is not None:
            self.user_id = record.user_id
            await self.feed.learn_user(record.user_id)

    # -- cancel, reconcile, late landings ------------------------------------------

    async def cancel_all(self) -> list[Order]:
        """Cancel every order of the quoter: a ``DELETE`` for every order it knows at
        once (no lock, no read before), then, once a requote in flight is done, listings
        until nothing of it rests (``exit_timeout`` s at most). The orders cancelled
        (or found done); raises the last failure if something may still rest."""
        cache, kill = self.execution.cache, self.execution.kill
        known = cache.orders(self.owner)
        try:
            await kill.cancel_known(self.owner)
        except (ApiError, *UNKNOWN_OUTCOME) as exc:
            log.info("cancelling %s %s: %s", self.market_id, self.outcome, exc)
        async with self._lock:
            try:
                self._wanted = []
                flat = await kill.flatten(self.owner, self.exit_timeout)
            finally:
                self._settle()
        if not flat:
            raise next(
                (t.failure for t in cache.orders(self.owner) if t.failure is not None),
                ClobkitError(f"orders of {self.market_id} {self.outcome} may still rest"),
            )
        return [t.record for t in known if t.state is State.DONE and t.record is not None]

    async def reconcile(self, *, listed: list[Order] | None = None) -> None:
        """Re-read the service (live orders, fills) so that the view equals it;
        ``listed``: the account's open orders, read by the caller (a desk reads them
        once for all its quoters)."""
        async with self._lock:
            try:
                await self._reconcile(listed)
            finally:
                self._settle()

    async def _reconcile(self, listed: list[Order] | None = None) -> None:
        feed = self.feed
        if feed is not None:
            feed.stale = False
        try:
            await self.execution.resolver.reconcile(self.owner, listed)
        except BaseException:
            if feed is not None:
                feed.stale = True
            raise

    def _landed(self, t: TrackedOrder, before: State) -> None:
        """An order of unknown outcome (or called refused) is live after all: kept when
        the last ladder still wants its level, else cancelled (``_tidy``)."""
        if before in (State.UNKNOWN, State.REFUSED):
            self._tidying.ask()

    async def _tidy(self) -> None:
        async with self._lock:
            wanted = self._wanted
            if wanted is None:
                return  # no ladder yet: adopted as any live order found on enter
            cancel = unwanted(self.execution.cache.orders(self.owner), wanted, self.expiring)
            await all_of(self.execution.sender.cancel(t) for t in cancel)
            self._settle()

    def check_hearing(self) -> None:
        """``QuoteRefused`` for new quotes of a closed quoter, or of one whose order
        topic the service refused (cancels still go: they only lower the risk)."""
        if self._closed:
            raise QuoteRefused("quoter", self, "is closed: enter it again to quote")
        deaf = self.deaf
        if deaf is not None:
            topic = None if self.feed is None else self.feed.orders_topic
            reason = f"was refused by the service ({deaf}): fills would go unheard"
            raise QuoteRefused("orders topic", topic, reason)

    @property
    def expiring(self) -> bool:
        """Whether its quotes are GTD orders that are renewed (``order_ttl``)."""
        return self.execution.renewer is not None

    async def _renew(self, due: list[TrackedOrder]) -> None:
        """Renew ``due`` orders (the renewer's call) at the last ladder's levels."""
        renewer = self.execution.renewer
        assert renewer is not None
        async with self._lock:
            try:
                held = self._holding.position
                await renewer.renew_owner(self.owner, due, self._wanted or [], held)
            finally:
                self._settle()

    def _settle(self) -> None:
        """Tell the gate what this quoter may now have on the service."""
        if self.feed is not None:
            self.feed.settle_unclaimed()
        self.execution.gate.settle(self.owner, self.resting(), self._holding.position)

    def _min_order(self) -> int | None:
        size = self.min_order_size
        return None if size is None else to_units(size, "min_order_size")


def _tidy_failed(exc: Exception) -> None:
    # what stays resting is the next requote's to cancel
    log.warning("cancelling an order that landed late failed: %s", exc)
