"""Cancelling every live order of the caller, written once for both shells
(``Client.cancel_all_orders``, ``AsyncClient.cancel_all_orders``; ``clobkit cancel-all``
and ``clobkit sentinel`` run it).

The service has no cancel-all endpoint and cancels only orders in status ``live``
(``DELETE /orders/:id``, one at a time). So a round lists every open order (a request
per open status, all pages), sends a ``DELETE`` for every live one at once (one
``Gather``: the shell's connection pool is the only bound), and the next round lists
again: what a failed or refused ``DELETE`` left, what was still being processed
(pending, signing, submitted: not cancellable yet) and what landed meanwhile is
cancelled then, until a listing shows nothing resting or the time is up.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import msgspec

from ..core.checks import seconds
from ..core.spec import LIVE
from ..errors import ApiError, ClobkitError, RateLimited, TransportError
from ..models import Order
from ._ops import Gather, Operation, Sleep
from ._validate import _segment

if TYPE_CHECKING:
    from ._endpoints import EndpointCore

__all__ = ["CancelAllResult", "cancel_all"]

log = logging.getLogger("clobkit.client")

#: Seconds between two rounds when the last one left something (doubling, at most
#: ``_WAIT_MAX``): an order still being processed becomes live within a few steps.
_WAIT = 0.05
_WAIT_MAX = 2.0


class CancelAllResult(msgspec.Struct, frozen=True, kw_only=True):
    """What ``cancel_all_orders`` did, each order as it was last listed.

    ``cancelled``: the orders its ``DELETE``s cancelled (answered so). ``gone``: orders
    listed as open that a later listing no longer showed without such an answer:
    filled, expired or cancelled by someone else between the listing and the
    ``DELETE``, or cancelled by a ``DELETE`` whose answer was lost. ``remaining``: what
    the last listing still showed resting when the time was up (empty: nothing rests).
    ``confirmed``: whether that last listing was read (``False``: it failed, and
    ``remaining`` is the last one read). ``rounds``: listings made; ``deletes``:
    ``DELETE`` requests sent.
    """

    cancelled: list[Order]
    gone: list[Order]
    remaining: list[Order]
    confirmed: bool
    rounds: int
    deletes: int

    @property
    def flat(self) -> bool:
        """True when a listing showed nothing of the caller's (of the market) resting."""
        return self.confirmed and not self.remaining


class _Tally:
    """The running account of one cancel-all."""

    def __init__(self) -> None:
        self.cancelled: dict[str, Order] = {}
        self.unconfirmed: dict[str, Order] = {}  # refused or unanswered: gone unless listed
        self.gone: dict[str, Order] = {}
        self.rounds = 0
        self.deletes = 0
        self.wait = 0.0  # seconds before the next round

    def listed(self, resting: list[Order]) -> None:
        """A listing read: an order whose ``DELETE`` was refused or unanswered last round
        and which it no longer shows is gone."""
        ids = {o.id for o in resting}
        for order_id, order in self.unconfirmed.items():
            if order_id not in ids and order_id not in self.cancelled:
                self.gone[order_id] = order
        self.unconfirmed = {}
        self.rounds += 1

    def result(self, remaining: list[Order], confirmed: bool) -> CancelAllResult:
        return CancelAllResult(
            cancelled=list(self.cancelled.values()),
            gone=[o for i, o in self.gone.items() if i not in self.cancelled],
            remaining=remaining,
            confirmed=confirmed,
            rounds=self.rounds,
            deletes=self.deletes,
        )


def cancel_all(
    core: EndpointCore, market_id: str | None = None, timeout: float = 60.0
) -> Operation[CancelAllResult]:
    """Cancel every open order of the caller (of ``market_id`` alone when given) until a
    listing shows none, ``timeout`` s at most (``CancelAllResult``)."""
    if market_id is not None:
        _segment(market_id, "market_id")
    seconds(timeout, "timeout")
    return _rounds(core, market_id, timeout)


def _rounds(
    core: EndpointCore, market_id: str | None, timeout: float
) -> Operation[CancelAllResult]:
    end = core.clock() + timeout
    tally = _Tally()
    resting: list[Order] = []
    while True:
        try:
            listed = yield from core.open_orders()
        except (ApiError, TransportError) as exc:  # after the listing's own retries
            if core.clock() >= end:
                log.warning("cancel-all: the last listing failed (%s)", exc)
                return tally.result(resting, confirmed=False)
            log.info("cancel-all: listing failed (%s); again", exc)
            tally.wait = _later(tally.wait)
        else:
            resting = [o for o in listed if market_id is None or o.market_id == market_id]
            tally.listed(resting)
            if not resting or core.clock() >= end:
                return tally.result(resting, confirmed=True)
            yield from _cancel(core, resting, tally)
        pause = min(tally.wait, end - core.clock())
        if pause > 0:
            yield Sleep(pause)


def _cancel(core: EndpointCore, resting: list[Order], tally: _Tally) -> Operation[None]:
    """A ``DELETE`` for every live order of ``resting``, all at once; the others (still
    being processed) wait for the next round."""
    live = [o for o in resting if o.status == LIVE]
    answers: list[ClobkitError | None] = []
    if live:
        answers = yield Gather([_delete(core, o.id) for o in live])
    tally.deletes += len(live)
    retry_after = 0.0
    for order, answer in zip(live, answers, strict=True):
        if answer is None:
            tally.cancelled[order.id] = order
            continue
        tally.unconfirmed[order.id] = order  # not live now, or no answer: listed again?
        if isinstance(answer, RateLimited) and answer.retry_after is not None:
            retry_after = max(retry_after, min(answer.retry_after, core.config.max_retry_after))
    log.info(
        "cancel-all round %d: %d open, %d cancelled, %d refused or unanswered, %d not live yet",
        tally.rounds,
        len(resting),
        len(live) - len(tally.unconfirmed),
        len(tally.unconfirmed),
        len(resting) - len(live),
    )
    nothing_left = len(resting) == len(live) and not tally.unconfirmed
    tally.wait = 0.0 if nothing_left else max(retry_after, _later(tally.wait))
    return None


def _delete(core: EndpointCore, order_id: str) -> Operation[ClobkitError | None]:
    """``DELETE`` one order: ``None`` when cancelled, else the error (never raised, so
    that one failure stops none of the others)."""
    try:
        yield from core.cancel_order(order_id)
    except ClobkitError as exc:  # refused, not found, no answer, an id no path can carry
        return exc
    return None


def _later(wait: float) -> float:
    return min(_WAIT_MAX, max(_WAIT, 2 * wait))
