"""A ``Quoter``'s requests: each order built (its ids known) before its POST,
places and cancels sent, and their failures turned into states to resolve; on a
desk every request goes through the desk's budget (``Host``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from .._spec import CANCELLED, CODE_DUPLICATE, OPEN_STATUSES
from ..client import UNKNOWN_OUTCOME, AsyncClient, Stream, orders_topic, within
from ..errors import ApiError, TransportError
from ..models import Market, Order
from .ladder import Level
from .tracking import (
    CANCEL_UNKNOWN,
    CANCELLING,
    DONE,
    OPEN,
    PLACE_UNKNOWN,
    PLACING,
    Tracking,
    _Tracked,
    _with_status,
)

if TYPE_CHECKING:
    from .quoter import Quoter

__all__ = ["UNKNOWN", "Host", "Sending"]

T = TypeVar("T")

log = logging.getLogger("clobkit.mm")

#: Failures after which a request may or may not have taken effect.
UNKNOWN = UNKNOWN_OUTCOME
#: Requests of one listing of the open orders (``open_orders``): one per open status.
LISTING = len(OPEN_STATUSES)
#: Requests of a quoter's ``prepare`` at most: the wallet, the market, two fee rates.
PREPARE = 4


class Host(Protocol):
    """What a ``Desk`` does for the quoters it hosts (``quoter._host``): the stream,
    the shared reads, the request budget and the limits over all of them."""

    async def request(
        self, endpoint: str, call: Awaitable[T], cost: int = 1, *, again: bool = False
    ) -> T: ...
    async def open(self, q: Quoter) -> None: ...
    async def market(self, q: Quoter) -> Market: ...

    @property
    def deaf(self) -> str | None: ...
    async def attach(self, q: Quoter) -> None: ...
    async def detach(self, q: Quoter, forget: bool = False) -> None: ...
    async def held(self, q: Quoter) -> int: ...
    async def listed(self, q: Quoter) -> list[Order]: ...
    async def subscribe_orders(self, user_id: str) -> None: ...
    async def admit(self, q: Quoter, levels: Sequence[Level], union: Sequence[Level]) -> bool: ...
    async def admit_places(self, q: Quoter, place: Sequence[Level]) -> None: ...
    def settle(self, q: Quoter) -> None: ...


class Sending(Tracking):
    """A ``Quoter``'s places and cancels: built, sent (through its desk, if any) and
    left in a state ``Resolving`` settles when their outcome is unknown."""

    _client: AsyncClient
    _host: Host | None
    _stream: Stream | None
    _orders_topic: str | None
    _acked: asyncio.Event | None
    _stale: bool
    _errors: list[ApiError]
    retries: int

    async def _req(
        self, endpoint: str, call: Awaitable[T], cost: int = 1, *, again: bool = False
    ) -> T:
        """A request to the service (``cost``: the requests the call makes; ``again``: a
        place sent again to settle one of unknown outcome): on a desk, within its budget
        and counted."""
        host = self._host
        if host is None:
            return await call
        return await host.request(endpoint, call, cost, again=again)

    async def _prepare(self, level: Level) -> _Tracked:
        prepared = await self._client.prepare_raw_order_amounts(  # caches warm: no request
            self.market_id, self.outcome, level.side, level.maker, level.taker, order_type="GTC"
        )
        result = prepared.result
        t = _Tracked(
            result.client_order_id,
            result.clob_order_id,  # precomputed on V1, "" on V2/V3
            level.side,
            level.price,
            level.shares,
            PLACING,
            prepared,
        )
        # tracked before the POST: the stream's record of it is recognised by the
        # key it echoes (order_source_id) or, on V1, by its precomputed hash
        self._by_client[t.key] = t
        if t.clob_order_id:
            self._by_clob[t.clob_order_id] = t
        self._live[t.key] = t
        return t

    async def _send_place(self, t: _Tracked) -> None:
        assert t.prepared is not None
        t.sent_at = time.time()
        try:
            # sent again (same key: it cannot make a second order) to settle one of
            # unknown outcome: a halted desk lets it through, to cancel it after
            again = t.state == PLACE_UNKNOWN
            call = self._client.post_raw_order(t.prepared)
            result = await self._req("POST /orders", call, again=again)
        except UNKNOWN as exc:
            log.info("place %s: outcome unknown (%s)", t.key, exc)
            if t.state == PLACING:
                t.state = PLACE_UNKNOWN
            return
        except ApiError as exc:
            if exc.code == CODE_DUPLICATE:  # it exists: find it
                if t.state == PLACING:
                    t.state = PLACE_UNKNOWN
                return
            if t.state in (PLACING, PLACE_UNKNOWN):
                self._forget(t)
                self._errors.append(exc)
            return
        if t.order_id is None:
            self._claim(t, result.order_id)
        if t.state in (PLACING, PLACE_UNKNOWN):
            t.state = OPEN
        if t.order is None:
            t.order = self._synthesised(t)
        if self.user_id is None:
            await self._learn_user(t, result.order_id)

    async def _send_cancel(self, t: _Tracked) -> None:
        assert t.order_id is not None
        if t.state == DONE:
            return
        t.state = CANCELLING
        try:
            await self._req("DELETE /orders/:id", self._client.cancel_order(t.order_id))
        except (TransportError, ApiError) as exc:
            # unknown outcome, or not cancellable now (filled, not live yet): read it
            log.info("cancel %s: %s", t.order_id, exc)
            if t.state == CANCELLING:
                t.state = CANCEL_UNKNOWN
            return
        if t.state != DONE:
            if t.order is not None:
                t.order = _with_status(t.order, CANCELLED)
            self._finish(t)

    async def _learn_user(self, t: _Tracked, order_id: str) -> None:
        """Subscribe to the user's order topic once the first order names the user."""
        order = await self._req("GET /orders/:id", self._client.get_order(order_id))
        self._apply(t, order)
        if self.user_id is not None or order.user_id is None:
            return
        if self._host is not None:
            self.user_id = order.user_id
            self._orders_topic = orders_topic(order.user_id)
            await self._host.subscribe_orders(order.user_id)
        elif self._stream is not None:
            self.user_id = order.user_id
            self._orders_topic = orders_topic(order.user_id)
            self._acked = asyncio.Event()
            await self._stream.subscribe(self._orders_topic)
            with contextlib.suppress(asyncio.TimeoutError):
                await within(self._acked.wait(), 1.0)
        else:
            return
        self._stale = True  # what happened before the subscription is read from REST

    def _orphans(self) -> None:
        """Requests cut short (the caller was cancelled) become requests of unknown outcome."""
        for t in self._live.values():
            if t.state == PLACING:
                t.state = PLACE_UNKNOWN
            elif t.state == CANCELLING:
                t.state = CANCEL_UNKNOWN
