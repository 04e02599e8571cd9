"""Places and cancels: each order built (its ids known) before its POST and tracked
from then on; every request through the gate; every answer turned into an event of
the state machine (``orders.TRANSITIONS``), never a state set by hand."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from ..client import UNKNOWN_OUTCOME, AsyncClient, PreparedRawOrder
from ..core.select import from_units
from ..core.spec import CANCELLED, CODE_DUPLICATE, LIVE, SIDES
from ..errors import ApiError, ClobkitError, QuoteRefused, TransportError
from ..models import Order
from ..signing.protocol import AsyncSigner
from .cache import ExecutionCache, Owner
from .gate import CANCEL, PLACE, Gate
from .ladder import Level
from .orders import CANCELLABLE, Event, State, TrackedOrder
from .presign import Presigned
from .tasks import all_of, each_of

__all__ = ["Sender", "Sent"]

log = logging.getLogger("clobkit.mm")


class Sent:
    """What a requote's places came to: the orders built and sent, the places refused
    (with the error), and the first failure to build (sign) one, never sent."""

    __slots__ = ("new", "refused", "unbuilt")

    def __init__(self) -> None:
        self.new: list[TrackedOrder] = []
        self.refused: list[tuple[Level, ClobkitError]] = []
        self.unbuilt: BaseException | None = None

    def add(self, level: Level, t: TrackedOrder, refusal: ClobkitError | None) -> None:
        self.new.append(t)
        if refusal is not None:
            self.refused.append((level, refusal))


class Sender:
    """Builds and sends one desk's (or one lone quoter's) orders and cancels."""

    def __init__(self, client: AsyncClient, cache: ExecutionCache, gate: Gate) -> None:
        self.client = client
        self.cache = cache
        self.gate = gate
        #: Signs each order before its POST (the ``Quoter``'s or ``Desk``'s ``signer``).
        self.signer: AsyncSigner | None = None
        self.presigned = Presigned()

    async def prepare(
        self,
        owner: Owner,
        level: Level,
        *,
        order_type: str = "GTC",
        expiration: int | None = None,
    ) -> TrackedOrder:
        """``level`` of ``owner`` as an order ready to send, tracked from now on: its
        record is recognised by the key it echoes (``order_source_id``) or, on V1, by
        its precomputed ``clob_order_id``, even when it comes before the POST's answer.
        No request once the client's caches are warm (but the signer's)."""
        return self.track(await self._build(owner, level, order_type, expiration), owner, level)

    async def presign(
        self,
        owner: Owner,
        levels: list[Level],
        order_type: str = "GTC",
        expiration: int | None = None,
    ) -> None:
        """Build and sign ``levels`` now, for a later ``prepare`` of the same levels
        (``presign.Presigned`` says when that is safe). Nothing is tracked or sent."""
        built = await all_of(self._build(owner, lv, order_type, expiration, False) for lv in levels)
        for prepared, lv in zip(built, levels, strict=True):
            self.presigned.put(Presigned.fit(owner, lv, order_type, expiration), prepared)

    async def _build(
        self,
        owner: Owner,
        level: Level,
        order_type: str,
        expiration: int | None,
        ready: bool = True,
    ) -> PreparedRawOrder:
        market_id, outcome = owner
        fit = Presigned.fit(owner, level, order_type, expiration)
        if ready and self.presigned.has(fit):  # one signed ahead fits: taken when still good
            fee = await self.client.get_fee_rate(await self._token(owner))
            prepared = self.presigned.take(fit, fee)
            if prepared is not None:
                return prepared
        started = time.perf_counter()
        prepared = await self.client.prepare_raw_order_amounts(
            market_id,
            outcome,
            level.side,
            level.maker,
            level.taker,
            order_type=order_type,
            expiration=expiration,
            signer=self.signer,
        )
        if self.signer is not None:  # the build is the signature once the caches are warm
            self.gate.counters.sign.observe(time.perf_counter() - started)
        return prepared

    async def _token(self, owner: Owner) -> str:
        info = await self.client.market_info(owner[0])
        return info.token(owner[1])

    def track(self, prepared: PreparedRawOrder, owner: Owner, level: Level) -> TrackedOrder:
        """A prepared order tracked (``PLACING``) before it is sent."""
        result = prepared.result
        t = TrackedOrder(
            result.client_order_id,
            owner,
            level.side,
            level.price,
            level.shares,
            State.PLACING,
            result.clob_order_id,  # precomputed on V1, "" on V2/V3
            prepared,
        )
        t.expiration = result.expiration
        self.cache.add(t)
        return t

    async def place(self, t: TrackedOrder) -> ApiError | QuoteRefused | None:
        """Send ``t`` (again, under its key, when its outcome is unknown); the refusal
        that ended it, to report, else ``None`` (placed, or still of unknown outcome)."""
        prepared = t.prepared
        if prepared is None or t.state not in (State.PLACING, State.UNKNOWN):
            return None
        if t.state is State.UNKNOWN:  # the client weighs a refusal against earlier copies
            result = msgspec.structs.replace(prepared.result, sent_at=t.sent_at)
            prepared = PreparedRawOrder(result, prepared.body)
        fire = self.cache.fire
        t.tries += 1
        try:
            placed = await self.gate.request(PLACE, self.client.post_raw_order(prepared))
        except QuoteRefused as exc:  # never sent: halted, or no room under the service's rate
            first = t.state is State.PLACING  # else an earlier copy may still land
            t.failure = exc  # not the service's doing: an unknown one waits to be seen
            fire(t, Event.WITHHELD)
            return exc if first else None
        except UNKNOWN_OUTCOME as exc:
            log.info("place %s: outcome unknown (%s)", t.key, exc)
            sent = exc.order
            t.sent_at = sent.sent_at if sent is not None and sent.sent_at else time.time()
            t.failure = exc
            fire(t, Event.LOST)
            return None
        except asyncio.CancelledError:  # cut short: a copy may have left, and may land
            if t.state is State.PLACING:
                t.sent_at, t.failure = time.time(), TransportError(f"place {t.key}: cut short")
                fire(t, Event.LOST)
            raise
        except ApiError as exc:
            if exc.code == CODE_DUPLICATE:  # an order of this id exists: find it
                t.sent_at = t.sent_at or time.time()
                t.failure = exc
                fire(t, Event.LOST)
                return None
            # refused, and no earlier copy can land (the client raised OutcomeUnknown else)
            fire(t, Event.REFUSED)
            return exc
        self.cache.claim(t, placed.order_id)
        fire(t, Event.ACCEPTED)
        if t.record is None:
            t.record = self._synthesised(t)
        return None

    async def cancel(self, t: TrackedOrder) -> BaseException | None:
        """``DELETE`` ``t`` if it may rest under an id we know; its outcome an event.
        Why this cancel failed (the order may still rest), else ``None``."""
        if t.state not in CANCELLABLE or t.order_id is None:
            return None
        fire = self.cache.fire
        fire(t, Event.CANCEL)
        try:
            await self.gate.request(CANCEL, self.client.cancel_order(t.order_id))
        except asyncio.CancelledError:  # cut short: done or not, read it later
            t.failure = TransportError(f"cancel of {t.order_id}: cut short")
            fire(t, Event.CANCEL_FAILED)
            raise
        except (ApiError, *UNKNOWN_OUTCOME) as exc:
            # unknown outcome, or not cancellable now (filled, not live yet): read it
            log.info("cancel %s: %s", t.order_id, exc)
            t.failure = exc
            fire(t, Event.CANCEL_FAILED)
            return exc
        if t.record is not None:
            t.record = msgspec.structs.replace(t.record, status=CANCELLED)
        fire(t, Event.CANCELLED)
        return None

    async def send_as_signed(self, owner: Owner, levels: list[Level], kind: dict[str, Any]) -> Sent:
        """Each of ``levels`` built (signed) and sent as soon as it is, beside the others:
        the first signatures' places leave while the last are signed (``kind``: the
        orders' ``order_type`` and ``expiration``)."""

        async def one(level: Level) -> tuple[TrackedOrder, ApiError | QuoteRefused | None]:
            t = await self.prepare(owner, level, **kind)
            try:
                return t, await self.place(t)
            finally:
                self.withhold([t])  # cut short before it was handed to the gate

        results = await each_of(one(lv) for lv in levels)
        sent = Sent()
        for level, result in zip(levels, results, strict=True):
            if isinstance(result, BaseException):
                sent.unbuilt = sent.unbuilt or result
            else:
                sent.add(level, *result)
        return sent

    async def send_after(
        self,
        owner: Owner,
        levels: list[Level],
        kind: dict[str, Any],
        ready: Callable[[], Awaitable[None]],
    ) -> Sent:
        """``levels`` built (signed) together, then sent together once ``ready()`` is
        done (called when one was built: it may read them tracked, as resting)."""
        built = await each_of(self.prepare(owner, lv, **kind) for lv in levels)
        pairs = [
            (lv, t) for lv, t in zip(levels, built, strict=True) if not isinstance(t, BaseException)
        ]
        sent = Sent()
        sent.unbuilt = next((t for t in built if isinstance(t, BaseException)), None)
        new = [t for _, t in pairs]
        try:
            if new:
                await ready()
            results = await all_of(self.place(t) for t in new)
        finally:
            self.withhold(new)
        for (level, t), result in zip(pairs, results, strict=True):
            sent.add(level, t, result)
        return sent

    def withhold(self, orders: list[TrackedOrder]) -> None:
        """Orders built but never handed to the gate (the requote failed or was
        cancelled before their turn) are never sent: withheld."""
        for t in orders:
            if t.state is State.PLACING and not t.tries:
                self.cache.fire(t, Event.WITHHELD)

    @staticmethod
    def _synthesised(t: TrackedOrder) -> Order:
        """A record of a just placed order, until the service's comes."""
        assert t.order_id is not None
        market_id, outcome = t.owner
        price = from_units(t.price)
        kind = "GTC" if t.prepared is None else t.prepared.result.order_type
        return Order(
            id=t.order_id,
            market_id=market_id,
            outcome=outcome,
            status=LIVE,
            side=SIDES[t.side],
            order_type=kind,
            order_source_id=t.key,
            clob_order_id=t.clob_order_id or None,
            original_size=from_units(t.shares),
            size_matched=from_units(t.matched),
            clob_price=price,
            limit_price=price,
        )
