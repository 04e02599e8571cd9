"""How a ``Quoter`` settles what it does not know: places and cancels of unknown
outcome resolved over REST (and sent again only under their own key), V2/V3 order
ids learnt, and the whole view re-read after a reconnect (``_reconcile``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from .._spec import LIVE, PAGE_SIZE_MAX
from ..client import within
from ..errors import NotFound, TransportError
from ..models import Order
from .sending import LISTING, UNKNOWN, Sending
from .tracking import CANCEL_UNKNOWN, DONE, OPEN, PLACE_UNKNOWN, _Tracked

__all__ = ["Resolving"]

log = logging.getLogger("clobkit.mm")


class Resolving(Sending):
    """Resolution of unknown outcomes and reconciliation with the service."""

    #: Rounds of REST reads (with backoff, about 0.01 to 0.5 s) resolving unknown outcomes.
    resolve_attempts: int
    #: Seconds a requote waits for the stream to name a new V2/V3 order's
    #: ``clob_order_id`` before reading it over REST.
    id_wait: float

    async def _resolve(self) -> None:
        """Settle every place and cancel of unknown outcome from REST, re-sending only
        what REST shows was not done. Raises the last failure if it cannot. A re-send
        cut short (the caller cancelled) is left of unknown outcome, as any request cut
        short is (``_orphans``): under the quoter's lock nothing else is in flight."""
        try:
            await self._settle_unknown()
        finally:
            self._orphans()

    async def _settle_unknown(self) -> None:
        last: Exception | None = None
        for attempt in range(self.resolve_attempts):
            places = [t for t in self._live.values() if t.state == PLACE_UNKNOWN]
            cancels = [t for t in self._live.values() if t.state == CANCEL_UNKNOWN]
            if not places and not cancels:
                self._settle_unclaimed()
                return
            try:
                if places:
                    await self._resolve_places(places)
                if cancels:
                    await self._resolve_cancels(cancels)
            except UNKNOWN as exc:
                last = exc
            if any(t.state in (PLACE_UNKNOWN, CANCEL_UNKNOWN) for t in self._live.values()):
                await asyncio.sleep(min(0.5, 0.01 * 2**attempt))
        if any(t.state in (PLACE_UNKNOWN, CANCEL_UNKNOWN) for t in self._live.values()):
            raise last or TransportError("orders of unknown outcome could not be resolved")

    async def _learn_ids(self) -> None:
        """The ``clob_order_id`` of every tracked order placed without one (V2/V3): from
        the stream, which normally names it with the POST's answer (``id_wait`` s at
        most), else ``GET /orders/:id``."""

        def missing() -> list[_Tracked]:
            return [t for t in self._live.values() if not t.clob_order_id and t.order_id]

        todo = missing()
        if todo and self._orders_topic is not None and not self._stale:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.id_wait
            while todo and (left := deadline - loop.time()) > 0:
                self._learnt.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await within(self._learnt.wait(), left)
                todo = missing()
        for attempt in range(self.resolve_attempts):
            if not todo:
                return
            records = await asyncio.gather(
                *(
                    self._req("GET /orders/:id", self._client.get_order(t.order_id))
                    for t in todo
                    if t.order_id is not None
                ),
                return_exceptions=True,
            )
            failed: BaseException | None = None
            for t, record in zip(todo, records, strict=True):
                if isinstance(record, Order):
                    self._apply(t, record)
                elif isinstance(record, UNKNOWN):
                    failed = record
                else:
                    raise record
            if failed is None:
                return  # a record still without the id: the service has none yet
            if attempt + 1 == self.resolve_attempts:
                raise failed
            await asyncio.sleep(min(0.5, 0.01 * 2**attempt))
            todo = [t for t in missing() if t in todo]

    async def _resolve_places(self, places: list[_Tracked]) -> None:
        found = await self._find(places)
        resend = []
        for t in places:
            order = found.get(t.key)
            if order is not None:
                self._apply(t, order)
                if t.state == PLACE_UNKNOWN:  # a status outside the API text's list
                    t.state = OPEN
            elif t.state == PLACE_UNKNOWN:
                # not seen on the service: sent again under the same client_order_id,
                # which the service answers with the order holding it if the first
                # send landed after all, so this cannot make a second one
                resend.append(t)
        if resend:
            self.retries += len(resend)
            await asyncio.gather(*(self._send_place(t) for t in resend))

    async def _find(self, places: list[_Tracked]) -> dict[str, Order]:
        """The records of these places (by their key) among the newest orders over REST:
        matched by the key the record echoes (``order_source_id``), by ``id`` when
        known, or by a precomputed (V1) ``clob_order_id``."""
        since = min(t.sent_at for t in places)
        wanted = {t.key: t for t in places}
        by_clob = {t.clob_order_id: t for t in places if t.clob_order_id}
        by_id = {t.order_id: t for t in places if t.order_id is not None}
        found: dict[str, Order] = {}
        page_no = 1
        while True:
            page = await self._req(
                "GET /orders", self._client.list_orders(page=page_no, page_size=PAGE_SIZE_MAX)
            )
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
                or (oldest is not None and oldest < since - 60)
            ):
                return found
            page_no += 1

    async def _resolve_cancels(self, cancels: list[_Tracked]) -> None:
        cancels = [t for t in cancels if t.order_id is not None]
        records = await asyncio.gather(
            *(
                self._req("GET /orders/:id", self._client.get_order(t.order_id))
                for t in cancels
                if t.order_id is not None
            ),
            return_exceptions=True,
        )
        again = []
        failure: BaseException | None = None
        for t, record in zip(cancels, records, strict=True):
            if isinstance(record, NotFound):
                log.warning("order %s vanished from the service", t.order_id)
                self._finish(t)
            elif isinstance(record, BaseException):
                failure = record
            else:
                self._apply(t, record)
                if t.state != DONE and record.status == LIVE:
                    again.append(t)  # still live: the cancel did not happen
        if again:
            self.retries += len(again)
            await asyncio.gather(*(self._send_cancel(t) for t in again))
        if failure is not None:
            raise failure

    async def _reconcile(self, listed: list[Order] | None = None) -> None:
        """Make the view equal the service's: resolve unknowns, read the live orders of
        this market and outcome (``listed``: the user's, read after the view went stale),
        adopt new ones, read the final record of those gone."""
        self._stale = False
        try:
            await self._resolve()
            if listed is None:
                listed = await self._req("GET /orders?open", self._client.open_orders(), LISTING)
            seen: set[str] = set()
            for order in listed:
                if order.market_id != self.market_id or order.outcome != self.outcome:
                    continue
                t = self._match(order)
                if t is None:
                    t = self._adopt(order)
                else:
                    self._apply(t, order)
                seen.add(t.key)
            gone = [t for t in self._live.values() if t.key not in seen]
            if gone:
                known = [t for t in gone if t.order_id is not None]
                records = await asyncio.gather(
                    *(
                        self._req("GET /orders/:id", self._client.get_order(t.order_id))
                        for t in known
                        if t.order_id is not None
                    )
                )
                for t, record in zip(known, records, strict=True):
                    self._apply(t, record)
        except BaseException:
            self._stale = True
            raise
