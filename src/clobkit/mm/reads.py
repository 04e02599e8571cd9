"""The reads a desk's quoters share while they open together (``Desk.open``): each
market and its fee rates once, the positions once, the live orders once (grouped by
outcome, so that each quoter takes its own, not the whole desk's). A quoter opening
on its own, outside such a batch, reads afresh."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from ..client import AsyncClient
from ..core.select import to_units
from ..core.spec import PAGE_SIZE_MAX
from ..models import Market, Order
from .gate import OPEN_ORDERS, Gate
from .resolver import LISTING

__all__ = ["PREPARE", "SharedReads", "by_outcome"]

#: Requests of a quoter's ``prepare`` at most: the wallet, the market, two fee rates.
PREPARE = 4
POSITIONS = "GET /portfolio/positions"

Owner = tuple[str, str]
T = TypeVar("T")


class SharedReads:
    """One desk's reads, shared while ``opening()`` says quoters open together."""

    def __init__(self, client: AsyncClient, gate: Gate, opening: Callable[[], bool]) -> None:
        self.client = client
        self.gate = gate
        self.opening = opening
        self._markets: dict[str, asyncio.Task[Market]] = {}
        self._held: asyncio.Task[dict[Any, int]] | None = None
        self._listed: asyncio.Task[dict[Owner, list[Order]]] | None = None

    async def market(self, market_id: str) -> Market:
        """The market, read and prepared (the wallet, both tokens' fee rates) once for
        the quoters of it that open together: both outcomes of a market read it and
        its fee rates once, not once each (twice, racing)."""
        task = self._markets.get(market_id)
        if task is None:
            task = self._markets[market_id] = asyncio.ensure_future(self._read_market(market_id))
        return await self._shared(task)

    async def _read_market(self, market_id: str) -> Market:
        client, gate = self.client, self.gate
        market = await gate.request("GET /markets/:id", client.get_market(market_id))
        await gate.request("prepare", client.prepare([market.id]), PREPARE)
        return market

    async def held(self, token_id: str, owner: Owner) -> int:
        """Share units held of ``token_id`` (``owner``: when the position names no token)."""
        if self._held is None:
            self._held = asyncio.ensure_future(self.gate.request(POSITIONS, self._positions()))
        positions = await self._shared(self._held)
        return positions.get(token_id, positions.get(owner, 0))

    async def _positions(self) -> dict[Any, int]:
        """Every position, a page of 100 a request (``paced`` makes each further page
        take room in the budget)."""
        positions: dict[Any, int] = {}
        async for pos in self.client.iter_positions(per_page=PAGE_SIZE_MAX):
            units = to_units(pos.shares or 0, "shares")
            if pos.token_id is not None:
                positions[pos.token_id] = units
            elif pos.market_id is not None and pos.raw_outcome is not None:
                positions[(pos.market_id, pos.raw_outcome)] = units
        return positions

    async def listed(self, owner: Owner) -> list[Order]:
        """The live orders of ``owner``, from one listing shared by the quoters opening."""
        if self._listed is None:
            self._listed = asyncio.ensure_future(self._grouped())
        return (await self._shared(self._listed)).get(owner, [])

    async def _grouped(self) -> dict[Owner, list[Order]]:
        return by_outcome(await self.gate.request(OPEN_ORDERS, self.client.open_orders(), LISTING))

    async def _shared(self, task: asyncio.Future[T]) -> T:
        try:
            return await asyncio.shield(task)
        finally:
            self.forget()

    def forget(self) -> None:
        """Outside a batch of quoters opening together, nothing is kept for later."""
        if not self.opening():
            self._held = self._listed = None
            self._markets.clear()


def by_outcome(orders: list[Order]) -> dict[Owner, list[Order]]:
    """A listing's orders by (market, outcome): one pass, so that handing each quoter its
    own costs the listing once, not once per quoter (quoters x orders on a big desk)."""
    groups: dict[Owner, list[Order]] = {}
    for order in orders:
        if order.market_id is not None and order.outcome is not None:
            groups.setdefault((order.market_id, order.outcome), []).append(order)
    return groups
