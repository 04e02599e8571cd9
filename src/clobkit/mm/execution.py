"""The execution layer one desk (or one lone quoter) trades through: the execution
cache with its state machine, the one pre-trade gate, the sender, the resolver and
the kill switch, each with one job, wired together here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..client import AsyncClient, PreparedRawOrder
from ..core.spec import UNIT
from ..models import Order, PlacedOrder
from ..signing.protocol import AsyncSigner
from .cache import ExecutionCache, Owner
from .gate import OPEN_ORDERS, Gate
from .killswitch import KillSwitch
from .ladder import Level
from .orders import State, TrackedOrder
from .renewal import Expiry, Renewer
from .resolver import LISTING, Resolver
from .sender import Sender

__all__ = ["LONE_IN_FLIGHT", "Execution"]

#: Requests of a lone quoter in flight at most: the client's connection pool (100).
LONE_IN_FLIGHT = 100


class Execution:
    """The parts orders go through. ``owns(record)`` names the owner (market id,
    outcome) of a record of an order the cache does not know, when it belongs to this
    desk (a quoter of it trades that outcome), else ``None``. ``expiry``: quotes are
    GTD orders renewed before they expire (``renewer``), else ``None``."""

    def __init__(
        self,
        client: AsyncClient,
        gate: Gate,
        owns: Callable[[Order], Owner | None],
        expiry: Expiry | None = None,
    ) -> None:
        self.client = client
        self.gate = gate
        self.cache = ExecutionCache()
        self.sender = Sender(client, self.cache, gate)
        self.resolver = Resolver(client, self.cache, gate, self.sender)
        self.kill = KillSwitch(self.cache, gate, self.sender, self.resolver, self.list_open, owns)
        self.renewer = (
            None
            if expiry is None
            else Renewer(expiry, self.cache, gate, self.sender, self.resolver)
        )

    def renew(
        self,
        owner: Owner,
        hook: Callable[[list[TrackedOrder]], Awaitable[None]] | None,
        *,
        alone: bool = False,
    ) -> None:
        """``owner``'s quoter renews its orders with ``hook`` (``None``: it left); a lone
        quoter (``alone``) starts the renewer, a desk does when it opens."""
        renewer = self.renewer
        if renewer is None:
            return
        if hook is None:
            renewer.quoters.pop(owner, None)
            return
        renewer.quoters[owner] = hook
        if alone:
            renewer.start()

    async def close(self) -> None:
        """Stop the renewer and the kill switch's background work."""
        if self.renewer is not None:
            await self.renewer.close()
        await self.kill.close()

    @classmethod
    def lone(
        cls,
        client: AsyncClient,
        orders_per_minute: int | None,
        owns: Callable[[Order], Owner | None],
        signer: AsyncSigner | None = None,
        expiry: Expiry | None = None,
    ) -> Execution:
        """A lone quoter's: its requests as concurrent as the client's connection pool
        allows (a desk holds many quoters to ``max_in_flight``; one quoter's ladder is a
        handful of requests), the default request budget, its own place pace, its
        ``signer``, its quotes' ``expiry``."""
        gate = Gate(orders_per_minute=orders_per_minute, max_in_flight=LONE_IN_FLIGHT)
        execution = cls(client, gate, owns, expiry)
        execution.sender.signer = signer
        return execution

    async def list_open(self) -> list[Order]:
        """The account's open orders (a request per open status), within the budget."""
        return await self.gate.request(OPEN_ORDERS, self.client.open_orders(), LISTING)

    async def send_raw_order(self, prepared: PreparedRawOrder) -> PlacedOrder | None:
        """An order of one's own (``client.prepare_raw_order(...)``) through this gate
        and cache: checked against the limits of its outcome's quoter and the desk's
        beside what rests (``QuoteRefused``, nothing sent), tracked from before its
        POST (its records, the kill switch). The service's answer, or ``None`` when
        its outcome is unknown (tracked until it is seen or ruled out); a refusal is
        raised."""
        result = prepared.result
        owner = (result.market_id, result.outcome)
        shares = result.taker_amount if result.side == 0 else result.maker_amount
        usdc = result.maker_amount if result.side == 0 else result.taker_amount
        price = -(-usdc * UNIT // max(shares, 1))  # USDC units per share, rounded up
        level = Level(result.side, price, shares, result.maker_amount, result.taker_amount)
        held = self.cache.holding(owner).position
        self.gate.admit_order(owner, [*self.cache.resting(owner), level], held)
        t = self.sender.track(prepared, owner, level)
        try:
            refusal = await self.sender.place(t)
        finally:
            self.gate.settle(owner, self.cache.resting(owner), held)
        if refusal is not None:
            raise refusal
        if t.state is State.UNKNOWN or t.order_id is None:
            return None
        return PlacedOrder(order_id=t.order_id, notification_id="")
