"""The read side of the client's operations (EndpointCore): the caches, one
operation per endpoint, and the pagers. ``ClientCore`` adds placing and waiting.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, NamedTuple, TypeVar

from ..core.checks import positive_int
from ..core.select import OrderHasher, RequestSigner
from ..core.spec import (
    API_PREFIX,
    CANCELLED,
    LIST_STATUSES,
    OUTCOME_A,
    OUTCOME_B,
    PAGE_SIZE_DEFAULT,
    PAGE_SIZE_MAX,
)
from ..errors import (
    OrderFieldError,
    ValidationError,
)
from ..models import (
    OPEN_STATUSES,
    CancelResult,
    Event,
    EventPage,
    Market,
    Order,
    Orderbook,
    OrderPage,
    PortfolioOrderPage,
    PositionPage,
    WalletInfo,
)
from . import _decode as shapes
from ._config import ClientConfig
from ._decode import Shape
from ._ops import NEVER, SAFE, Call, CallRunner, Gather, Operation
from ._paging import EventsPager, OrdersPager, Pager, PortfolioOrdersPager, PositionsPager
from ._validate import (
    _segment,
    _side_name,
)

log = logging.getLogger("clobkit.client")
T = TypeVar("T")
P = TypeVar("P")


class MarketInfo(NamedTuple):
    """What the raw-order flow needs of a market: its two tokens and ``neg_risk``."""

    token_id_a: str
    token_id_b: str
    neg_risk: bool

    def token(self, outcome: str) -> str:
        return self.token_id_a if outcome == OUTCOME_A else self.token_id_b


def market_info(market: Market) -> MarketInfo | None:
    a, b = market.token_id(OUTCOME_A), market.token_id(OUTCOME_B)
    if not a or not b:
        return None
    return MarketInfo(a, b, bool(market.neg_risk))


class EndpointCore(CallRunner):
    """The caches (wallet and order hasher for the client's life, market tokens /
    ``neg_risk``, fee rate per token with a TTL) and the read operations."""

    def __init__(self, config: ClientConfig, signer: RequestSigner) -> None:
        super().__init__(config, signer)
        self.wallet: WalletInfo | None = None
        self.hasher: OrderHasher | None = None
        self.markets: dict[str, MarketInfo] = {}
        self.fee_rates: dict[str, tuple[int, float]] = {}
        self.user: str | None = None  # the caller's user id, once an order showed it

    # -- endpoints ------------------------------------------------------------

    def _get(
        self,
        path: str,
        shape: Shape[T],
        params: Mapping[str, Any] | None = None,
    ) -> Operation[T]:
        return self.run(Call("GET", API_PREFIX + path, params, b"", shape, SAFE))

    def list_events(self, params: Mapping[str, Any]) -> Operation[EventPage]:
        return self._get("/events", shapes.EVENTS, params)

    def get_event(self, id_or_slug: str) -> Operation[Event]:
        return self._get("/events/" + _segment(id_or_slug, "id_or_slug"), shapes.EVENT)

    def get_event_markets(self, event_id: str) -> Operation[list[Market]]:
        page = yield from self._get(
            f"/events/{_segment(event_id, 'event_id')}/markets", shapes.MARKETS
        )
        return list(page.markets)

    def search_markets(self, q: str, limit: int) -> Operation[list[Market]]:
        if not isinstance(q, str) or not q.strip():
            raise ValidationError("q", q, "must be a non-empty search string")
        positive_int(limit, "limit", PAGE_SIZE_MAX)
        page = yield from self._get("/markets", shapes.MARKETS, {"q": q, "limit": limit})
        for market in page.markets:
            self._remember(market)
        return list(page.markets)

    def get_market(self, market_id: str) -> Operation[Market]:
        market = yield from self._get(
            "/markets/" + _segment(market_id, "market_id", OrderFieldError), shapes.MARKET
        )
        self._remember(market, detail=True)
        return market

    def get_orderbook(self, asset_id: str) -> Operation[Orderbook]:
        return self._get("/orderbooks/" + _segment(asset_id, "asset_id"), shapes.ORDERBOOK)

    def list_orders(self, status: str | None, page: int, page_size: int) -> Operation[OrderPage]:
        if status is not None and status not in LIST_STATUSES:
            raise OrderFieldError("status", status, f"must be one of {', '.join(LIST_STATUSES)}")
        positive_int(page, "page")
        positive_int(page_size, "page_size", PAGE_SIZE_MAX)
        params = {"status": status, "page": page, "page_size": page_size}
        return self._get("/orders", shapes.ORDERS, params)

    def get_order(self, order_id: str, until: float | None = None) -> Operation[Order]:
        """The order (``until``: a time of ``clock`` its retries end by)."""
        path = API_PREFIX + "/orders/" + _segment(order_id, "order_id", OrderFieldError)
        return self.run(Call("GET", path, None, b"", shapes.ORDER, SAFE), until)

    def user_id(self) -> Operation[str | None]:
        """The caller's user id, the one home of its discovery: the ``user_id`` of its
        newest order (``GET /orders``, one item), cached once known; ``None`` while the
        caller has no order (the API has no other place that tells it)."""
        if self.user is None:
            page = yield from self.list_orders(None, 1, 1)
            if page.orders:
                self.user = page.orders[0].user_id
        return self.user

    def get_wallet(self, refresh: bool = False) -> Operation[WalletInfo]:
        if self.wallet is None or refresh:
            wallet = yield from self._get("/wallet", shapes.WALLET)
            if self.wallet is None or wallet != self.wallet:
                self.hasher = OrderHasher(wallet)
            self.wallet = wallet
        return self.wallet

    def list_positions(self, page: int, per_page: int) -> Operation[PositionPage]:
        positive_int(page, "page")
        positive_int(per_page, "per_page", PAGE_SIZE_MAX)
        return self._get(
            "/portfolio/positions", shapes.POSITIONS, {"page": page, "per_page": per_page}
        )

    def list_portfolio_orders(
        self, side: object, page: int, per_page: int
    ) -> Operation[PortfolioOrderPage]:
        side_name = None if side is None else _side_name(side)
        positive_int(page, "page")
        positive_int(per_page, "per_page", PAGE_SIZE_MAX)
        params = {"side": side_name, "page": page, "per_page": per_page}
        return self._get("/portfolio/orders", shapes.PORTFOLIO_ORDERS, params)

    def cancel_order(self, order_id: str) -> Operation[CancelResult]:
        path = API_PREFIX + "/orders/" + _segment(order_id, "order_id", OrderFieldError)
        default = CancelResult(order_id=order_id, status=CANCELLED)
        return self.run(Call("DELETE", path, None, b"", shapes.CANCEL, NEVER, default=default))

    # -- pagers ---------------------------------------------------------------

    def events_pager(self, params: dict[str, Any]) -> EventsPager:
        return EventsPager(params, self.list_events)

    def orders_pager(self, status: str | None, page_size: int) -> OrdersPager:
        params = {"status": status, "page": 1, "page_size": page_size}
        return OrdersPager(
            params, lambda p: self.list_orders(p["status"], p["page"], p["page_size"])
        )

    def positions_pager(self, per_page: int) -> PositionsPager:
        params = {"page": 1, "per_page": per_page}
        return PositionsPager(params, lambda p: self.list_positions(p["page"], p["per_page"]))

    def portfolio_orders_pager(self, side: object, per_page: int) -> PortfolioOrdersPager:
        params = {"side": side, "page": 1, "per_page": per_page}
        return PortfolioOrdersPager(
            params, lambda p: self.list_portfolio_orders(p["side"], p["page"], p["per_page"])
        )

    def all_orders(
        self, status: str | None, page_size: int = PAGE_SIZE_DEFAULT
    ) -> Operation[list[Order]]:
        """Every order of one status, all pages."""
        pager = self.orders_pager(status, page_size)
        orders: list[Order] = []
        while pager.params is not None:
            page = yield from self.page(pager)
            orders.extend(pager.advance(page))
        return orders

    def open_orders(self) -> Operation[list[Order]]:
        """Orders still trading (pending, signing, submitted, live), read concurrently."""
        lists = yield Gather([self.all_orders(status) for status in OPEN_STATUSES])
        return [order for orders in lists for order in orders]

    def page(self, pager: Pager[P, Any]) -> Operation[P]:
        """The next page of ``pager`` (its ``params`` must not be ``None``)."""
        params = pager.params
        assert params is not None
        return pager.fetch(params)

    def _remember(self, market: Market, *, detail: bool = False) -> None:
        """Cache a market's tokens and ``neg_risk``. Only the detail and search shapes
        carry ``neg_risk``; a detail without it (guide shape) is read as a CTF market."""
        if market.neg_risk is None and not detail:
            return
        info = market_info(market)
        if info is None:
            return
        if market.neg_risk is None:
            log.warning(
                "market %s has no neg_risk: hashing its orders for the CTF exchange", market.id
            )
        self.markets[market.id] = info
