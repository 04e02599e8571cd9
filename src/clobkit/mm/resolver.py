"""What is not known is found out: places of unknown outcome looked for among the
service's newest orders, then sent again under their own key (or ruled out once no
copy can land any more); cancels of unknown outcome read back; V2/V3 order ids
learnt; an outcome's whole view re-read (``reconcile``). Each finding is an event
of the state machine."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable

from ..client import UNKNOWN_OUTCOME, AsyncClient
from ..core.spec import LIVE, PAGE_SIZE_MAX
from ..errors import NotFound, OutcomeUnknown, QuoteRefused, TransportError
from ..models import Order
from .cache import ExecutionCache, Owner
from .gate import OPEN_ORDERS, Gate
from .orders import Event, State, TrackedOrder
from .sender import Sender
from .tasks import all_of, each_of

__all__ = ["LISTING", "Resolver"]

log = logging.getLogger("clobkit.mm")

#: Requests of one listing of the open orders (``open_orders``): one per open status.
LISTING = 4
#: Seconds the newest orders are read past the oldest unknown send (clocks differ).
_SLACK = 60.0


class Resolver:
    """Settles the unknown states of one desk's (or one lone quoter's) orders."""

    def __init__(
        self, client: AsyncClient, cache: ExecutionCache, gate: Gate, sender: Sender
    ) -> None:
        self.client = client
        self.cache = cache
        self.gate = gate
        self.sender = sender
        #: Rounds of reads (backing off from 0.01 to 0.5 s) one ``settle`` makes at most.
        self.attempts = 20
        #: Seconds to wait for the stream to name a new V2/V3 order's ``clob_order_id``
        #: before reading it over REST.
        self.id_wait = 0.25
        #: Places and cancels sent again (the service showed they had not happened),
        #: by owner.
        self.resent: dict[Owner, int] = {}

    @property
    def landing_time(self) -> float:
        """Seconds a copy of a place without an answer may still land (the client's)."""
        return self.client.config.landing_time

    async def settle(self, orders: Iterable[TrackedOrder], *, resend: bool = True) -> None:
        """Settle what is unknown of ``orders``: places found, sent again under their key
        (``resend``) or ruled out once no copy can land; cancels read back and sent
        again while the order is live. Raises the last failure of the service if some
        stay unknown after ``attempts`` rounds. A place that the service answers but
        leaves unknown (``OutcomeUnknown``: refused while an earlier copy may land), or
        one not sent again (``resend`` false), stays tracked without an error: it waits
        for its copies' landing time."""
        chosen = list(orders)
        failure: BaseException | None = None
        for attempt in range(self.attempts):
            places = [t for t in chosen if t.state is State.UNKNOWN]
            cancels = [t for t in chosen if t.state is State.CANCEL_UNKNOWN]
            if not places and not cancels:
                return
            try:
                if places:
                    await self._places(places, resend)
                if cancels:
                    await self._cancels(cancels)
                failure = _failure(chosen, resend)
            except UNKNOWN_OUTCOME as exc:
                failure = exc
            if failure is None:
                return
            await asyncio.sleep(min(0.5, 0.01 * 2**attempt))
        if failure is not None:
            raise failure

    async def _places(self, places: list[TrackedOrder], resend: bool) -> None:
        started = time.time()
        found = await self._find(places)
        again = []
        for t in places:
            record = found.get(t.key)
            if record is not None:
                self.cache.apply(t, record)
            elif t.sent_at and t.sent_at + self.landing_time <= started:
                self.cache.fire(t, Event.RULED_OUT)  # looked for once none could land
            elif resend:
                again.append(t)
                self.resent[t.owner] = self.resent.get(t.owner, 0) + 1
        await all_of(self.sender.place(t) for t in again)

    async def _find(self, places: list[TrackedOrder]) -> dict[str, Order]:
        """The records of these places (by their key) among the newest orders over REST:
        matched by the key the record echoes (``order_source_id``), by ``id`` when
        known, or by a precomputed (V1) ``clob_order_id``."""
        since = min(t.sent_at or time.time() for t in places)
        wanted = {t.key: t for t in places}
        by_clob = {t.clob_order_id: t for t in places if t.clob_order_id}
        by_id = {t.order_id: t for t in places if t.order_id is not None}
        found: dict[str, Order] = {}
        page_no = 1
        while True:
            call = self.client.list_orders(page=page_no, page_size=PAGE_SIZE_MAX)
            page = await self.gate.request("GET /orders", call)
            oldest = None
            for order in page.orders:
                source = order.order_source_id
                t = (
                    (wanted.get(source) if source else None)
                    or by_id.get(order.id)
                    or by_clob.get(order.clob_order_id or "")
                )
                if t is not None:
                    found[t.key] = order
                if order.created_at is not None:
                    stamp = order.created_at.timestamp()
                    oldest = stamp if oldest is None else min(oldest, stamp)
            total = page.total_count or 0
            if (
                len(found) == len(wanted)
                or len(page.orders) < PAGE_SIZE_MAX
                or page_no * PAGE_SIZE_MAX >= total
                or (oldest is not None and oldest < since - _SLACK)
            ):
                return found
            page_no += 1

    async def _cancels(self, cancels: list[TrackedOrder]) -> None:
        known = [t for t in cancels if t.order_id is not None]
        records = await each_of(self._read(t) for t in known)
        again = []
        failure: BaseException | None = None
        for t, record in zip(known, records, strict=True):
            if isinstance(record, NotFound):
                log.warning("order %s vanished from the service", t.order_id)
                self.cache.fire(t, Event.VANISHED)
            elif isinstance(record, BaseException):
                failure = record
            else:
                self.cache.apply(t, record)
                if t.state is State.CANCEL_UNKNOWN and record.status == LIVE:
                    again.append(t)  # still live: the cancel did not happen
                    self.resent[t.owner] = self.resent.get(t.owner, 0) + 1
        if again:
            await all_of(self.sender.cancel(t) for t in again)
        if failure is not None:
            raise failure

    async def _read(self, t: TrackedOrder) -> Order:
        assert t.order_id is not None
        return await self.gate.request("GET /orders/:id", self.client.get_order(t.order_id))

    async def learn_ids(self, orders: list[TrackedOrder], heard: Callable[[], bool]) -> None:
        """The ``clob_order_id`` of every order placed without one (V2/V3): from the
        stream, which normally names it with the POST's answer (``id_wait`` s at most,
        while ``heard()``: the order topic is heard and current), else
        ``GET /orders/:id``."""

        def missing() -> list[TrackedOrder]:
            return [t for t in orders if not t.clob_order_id and t.order_id]

        todo = missing()
        if todo and heard():
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.id_wait
            learnt = self.cache.learnt
            while todo and (left := deadline - loop.time()) > 0:
                learnt.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(left):
                        await learnt.wait()
                todo = missing()
        for attempt in range(self.attempts):
            if not todo:
                return
            records = await each_of(self._read(t) for t in todo)
            failed: BaseException | None = None
            for t, record in zip(todo, records, strict=True):
                if isinstance(record, Order):
                    self.cache.apply(t, record)
                elif isinstance(record, UNKNOWN_OUTCOME):
                    failed = record
                else:
                    raise record
            if failed is None:
                return  # a record still without the id: the service has none yet
            if attempt + 1 == self.attempts:
                raise failed
            await asyncio.sleep(min(0.5, 0.01 * 2**attempt))
            todo = [t for t in missing() if t in todo]

    async def reconcile(self, owner: Owner, listed: list[Order] | None = None) -> None:
        """Make ``owner``'s view equal the service's: settle what is unknown, read the
        live orders (``listed``: the user's, read by the caller), adopt new ones, read
        the final record of those gone."""
        await self.settle(self.cache.orders(owner))
        if listed is None:
            listed = await self.gate.request(OPEN_ORDERS, self.client.open_orders(), LISTING)
        market_id, outcome = owner
        seen: set[str] = set()
        for record in listed:
            if record.market_id != market_id or record.outcome != outcome:
                continue
            t = self.cache.find(record)
            if t is None:
                t = self.cache.adopt(record, owner)
            else:
                self.cache.apply(t, record)
            seen.add(t.key)
        gone = [t for t in self.cache.orders(owner) if t.key not in seen and t.order_id is not None]
        await self.read_back(gone)

    async def read_back(self, orders: list[TrackedOrder]) -> None:
        """Read ``orders`` (not in a listing of the open ones: finished, most likely)
        one by one into the cache; a 404 is an order gone. Raises the last failure
        once all are read."""
        records = await each_of(self._read(t) for t in orders)
        failure: BaseException | None = None
        for t, record in zip(orders, records, strict=True):
            if isinstance(record, NotFound):
                self.cache.fire(t, Event.VANISHED)
            elif isinstance(record, BaseException):
                failure = record
            else:
                self.cache.apply(t, record)
        if failure is not None:
            raise failure


def _failure(orders: list[TrackedOrder], resend: bool) -> BaseException | None:
    """Why some of ``orders`` are still unknown when the service is to blame (a failed
    read or send), else ``None`` (all known, or waiting for their copies to land)."""
    for t in orders:
        if t.state is State.CANCEL_UNKNOWN:
            return t.failure or TransportError(f"cancel of {t.order_id}: outcome unknown")
        waiting = isinstance(t.failure, (OutcomeUnknown, QuoteRefused))  # not the service's
        if t.state is State.UNKNOWN and resend and not waiting:
            return t.failure or TransportError(f"place {t.key}: outcome unknown")
    return None
