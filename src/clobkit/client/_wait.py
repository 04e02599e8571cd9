"""Waiting on an order (``wait_for_order``): polled, or read again when the owner's open
stream says it changed; the stream feeds the shells hand it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

from ..core.checks import seconds
from ..core.spec import ORDER_STATUSES, user_orders_topic
from ..errors import OrderFieldError, RateLimited, ServerError, TransportError
from ..errors import TimeoutError as ClobkitTimeoutError
from ..models import FINAL_STATUSES, Order, Reconnected, StreamMessage
from ._endpoints import EndpointCore
from ._ops import Operation, Receive, Sleep

#: A read's failures that say nothing of the order: at the deadline, the wait timed out.
UNKNOWN_READ = (ServerError, TransportError, RateLimited)

StreamItem = StreamMessage | Reconnected
"""What a stream yields: a ``StreamMessage``, or a ``Reconnected`` marker after a reconnect
(messages sent while it was down are lost: read the open orders over REST then)."""


class _Listenable(Protocol):
    """What a waiting operation needs of a stream (``Stream`` and ``SyncStream``)."""

    @property
    def closed(self) -> bool: ...

    @property
    def topics(self) -> list[str]: ...

    def add_listener(self, listener: Callable[[StreamItem], None]) -> None: ...

    def remove_listener(self, listener: Callable[[StreamItem], None]) -> None: ...


S = TypeVar("S", bound=_Listenable)


class OrderFeed:
    """A listener on an open stream whose items land in ``inbox`` through ``put``
    (the shell's queue); ``close()`` removes the listener."""

    def __init__(self, stream: _Listenable, inbox: Any, put: Callable[[StreamItem], None]) -> None:
        self.stream = stream
        self.inbox = inbox
        self._put = put
        stream.add_listener(put)

    @property
    def closed(self) -> bool:
        return self.stream.closed

    def close(self) -> None:
        self.stream.remove_listener(self._put)


class WaitCore(EndpointCore):
    """``wait_for_order`` and its parts, for ``ClientCore``."""

    def wait_for_order(
        self,
        order_id: str,
        statuses: Iterable[str] | str | None,
        timeout: float,
        poll_interval: float,
        listen: Callable[[Order], OrderFeed | None],
    ) -> Operation[Order]:
        """The order once it reaches one of ``statuses``, within ``timeout`` seconds.

        ``listen(order)`` gives a feed of the owner's open order stream, or
        ``None``: then ``GET /orders/:id`` is polled every ``poll_interval``
        seconds. With a feed, the order is read again when a stream item
        concerns it (or the stream reconnected) and, as a safety net, when
        nothing came for ``max(poll_interval, 5)`` seconds.
        """
        wanted = self.wait_statuses(statuses)
        deadline = self.deadline(timeout)
        poll_interval = seconds(poll_interval, "poll_interval")
        order = yield from self.get_order(order_id)  # one whole read, even with timeout 0
        feed = listen(order)
        try:
            if feed is not None:  # read again: closes the window before listening
                order = yield from self._read(order_id, wanted, deadline, order)
            while order.status not in wanted:
                remaining = deadline - self.clock()
                if remaining <= 0:
                    raise self.wait_timeout(order_id, wanted, order)
                if feed is None or feed.closed:
                    yield Sleep(min(poll_interval, remaining))
                    order = yield from self._read(order_id, wanted, deadline, order)
                    continue
                item = yield Receive(feed.inbox, min(remaining, max(poll_interval, 5.0)))
                if item is None or self.stream_says(item, order_id, wanted):
                    order = yield from self._read(order_id, wanted, deadline, order)
        finally:
            if feed is not None:
                feed.close()
        return order

    def _read(
        self, order_id: str, wanted: frozenset[str], deadline: float, last: Order
    ) -> Operation[Order]:
        """The order read again, its retries ending by ``deadline``. A read that fails
        without a word on the order (a 503, a lost connection, a 429) is a poll that
        told nothing: ``last`` stands, and at the deadline the wait times out."""
        try:
            return (yield from self.get_order(order_id, deadline))
        except UNKNOWN_READ as exc:
            if self.clock() >= deadline:
                raise self.wait_timeout(order_id, wanted, last) from exc
            return last

    @staticmethod
    def order_stream(order: Order, streams: Iterable[S]) -> S | None:
        """The first open stream of ``streams`` on the order owner's topic, if any."""
        if order.user_id is None:
            return None
        topic = user_orders_topic(order.user_id)
        for stream in streams:
            if not stream.closed and topic in stream.topics:
                return stream
        return None

    def wait_statuses(self, statuses: Iterable[str] | str | None) -> frozenset[str]:
        """The statuses ``wait_for_order`` stops at (default: the final ones)."""
        if statuses is None:
            return frozenset(FINAL_STATUSES)
        reason = f"must be order statuses ({', '.join(ORDER_STATUSES)})"
        try:
            chosen = frozenset([statuses] if isinstance(statuses, str) else statuses)
        except TypeError:  # not iterable, or holding what cannot be a status
            raise OrderFieldError("statuses", statuses, reason) from None
        if not chosen:
            raise OrderFieldError("statuses", statuses, "must name at least one order status")
        if not chosen <= frozenset(ORDER_STATUSES):  # a misspelt one would wait out the timeout
            raise OrderFieldError("statuses", statuses, reason)
        return chosen

    def deadline(self, timeout: float) -> float:
        return self.clock() + seconds(timeout, "timeout", zero=True)

    def wait_timeout(
        self, order_id: str, statuses: frozenset[str], last: Order
    ) -> ClobkitTimeoutError:
        wanted = ", ".join(sorted(statuses))
        return ClobkitTimeoutError(
            f"order {order_id} did not reach {wanted} in time (last status {last.status})"
        )

    @staticmethod
    def stream_says(item: StreamItem, order_id: str, statuses: frozenset[str]) -> bool:
        """True when a stream item means the order must be read again."""
        if isinstance(item, Reconnected):
            return True
        if item.order_id != order_id:
            return False
        status = item.order.status if item.order is not None else None
        return status is None or status in statuses
