"""The public methods of ``AsyncClient`` (``_api_async.py``, written by hand) and of
``Client`` (``_api_sync.py``, generated from it by ``scripts/unasync_client.py``): each
checks its arguments and drives one ``ClientCore`` operation through the shell's ``_run``.

The shells (``_async.py``, ``_sync.py``) add what differs: the I/O driver, the
lifecycle, the stream. A new method or parameter is written here, then
``python scripts/unasync_client.py`` regenerates the sync twin
(tests/client/test_generated.py fails while it is not current).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from ssl import SSLContext
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.spec import PAGE_SIZE_DEFAULT
from ..core.types import OrderType, Side
from ..models import (
    CancelResult,
    Event,
    EventPage,
    Market,
    Order,
    Orderbook,
    OrderPage,
    PlacedOrder,
    PortfolioOrder,
    PortfolioOrderPage,
    Position,
    PositionPage,
    RawOrderResult,
    WalletInfo,
)
from ..signing.protocol import AsyncSigner
from ._cancel_all import CancelAllResult
from ._config import ClientConfig
from ._core import ClientCore, OrderFeed, PreparedRawOrder
from ._endpoints import MarketInfo
from ._net import NetworkOptions, network_options, tls_context
from ._ops import Operation
from ._paging import Pager
from ._validate import EventFilters, RawOrderSpec, event_params

if TYPE_CHECKING:
    from collections.abc import AsyncIterator  # the twin's Iterator (sorted alike)
    from typing import Unpack

__all__ = ["AsyncClientApi"]

T = TypeVar("T")
Number = Decimal | str | int | float


class AsyncClientApi:
    """What the client inherits (``AsyncClient`` this, ``Client`` its generated twin):
    its settings and every call of the API. The shell gives ``_start`` (its
    transport), ``_run``, ``_iterate`` and ``_listen``."""

    _core: ClientCore
    _tls: SSLContext | None

    if TYPE_CHECKING:

        def _start(self, config: ClientConfig) -> None: ...

        async def _run(self, op: Operation[T]) -> T: ...

        def _iterate(self, pager: Pager[Any, T]) -> AsyncIterator[T]: ...

        def _listen(self, order: Order) -> OrderFeed | None: ...

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        api_secret: str | None = None,
        *,
        clob_url: str | None = None,
        ws_url: str | None = None,
        timeout: float = 10.0,
        max_retries: int = 3,
        backoff: float = 0.2,
        backoff_cap: float = 5.0,
        max_retry_after: float = 30.0,
        fee_rate_ttl: float = 300.0,
        sign_query: bool = True,
        total_timeout: float | None = None,
        max_response_bytes: int = 16 * 1024 * 1024,
        landing_time: float = 60.0,
        **network: Unpack[NetworkOptions],
    ) -> None:
        config, signer = ClientConfig.resolve(
            base_url,
            api_key,
            api_secret,
            clob_url=clob_url,
            ws_url=ws_url,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            backoff_cap=backoff_cap,
            max_retry_after=max_retry_after,
            fee_rate_ttl=fee_rate_ttl,
            sign_query=sign_query,
            total_timeout=total_timeout,
            max_response_bytes=max_response_bytes,
            landing_time=landing_time,
            **network_options(dict(network), "AsyncClient"),
        )
        self._core = ClientCore(config, signer)
        self._tls = tls_context(config.ssl, config.verify, config.cert) if config.uses_tls else None
        self._start(config)

    @property
    def config(self) -> ClientConfig:
        """The resolved settings (without the secret)."""
        return self._core.config

    # -- events and markets -------------------------------------------------------------

    async def list_events(self, **filters: Unpack[EventFilters]) -> EventPage:
        """``GET /events``: ``limit`` (default 20) events from ``offset`` (default 0)
        matching the filters (``EventFilters``); other keys pass through unchecked."""
        params = event_params(filters, limit=20)
        return await self._run(self._core.list_events(params))

    def iter_events(self, **filters: Unpack[EventFilters]) -> AsyncIterator[Event]:
        """Every event matching the filters (``EventFilters``), fetching ``limit``
        (default 100) per page."""
        return self._iterate(
            self._core.events_pager(event_params(filters, limit=PAGE_SIZE_DEFAULT))
        )

    async def get_event(self, id_or_slug: str) -> Event:
        """``GET /events/:id``: an event (detail shape, with ``markets``) by UUID or slug."""
        return await self._run(self._core.get_event(id_or_slug))

    async def get_event_markets(self, event_id: str) -> list[Market]:
        """``GET /events/:id/markets``: the event's markets (with odds)."""
        return await self._run(self._core.get_event_markets(event_id))

    async def search_markets(self, q: str, limit: int = 20) -> list[Market]:
        """``GET /markets?q=``: markets whose question matches ``q``."""
        return await self._run(self._core.search_markets(q, limit))

    async def get_market(self, market_id: str) -> Market:
        """``GET /markets/:id``: one market (detail shape); caches its tokens."""
        return await self._run(self._core.get_market(market_id))

    async def get_orderbook(self, asset_id: str) -> Orderbook:
        """``GET /orderbooks/:asset_id``; ``OrderBookNotFound`` when the token has no book."""
        return await self._run(self._core.get_orderbook(asset_id))

    # -- orders ------------------------------------------------------------------------

    async def place_order(
        self,
        market_id: str,
        *,
        side: Side | str = "BUY",
        outcome: str | None = None,
        amount: Number | None = None,
        shares: Number | None = None,
        order_type: OrderType | str = "FOK",
        limit_price: Number | None = None,
        token_option: str | None = None,
        expiration: int | datetime | None = None,
        take_profit_price: Number | None = None,
        stop_loss_price: Number | None = None,
    ) -> PlacedOrder:
        """``POST /orders``: ``amount`` USDC (BUY) or ``shares`` (SELL); never retried.

        Limit orders (GTC/GTD) need ``limit_price`` (0.01-0.99) and
        ``token_option`` (``yes``/``no``); GTD needs a future ``expiration``
        (Unix seconds or aware datetime). ``amount`` is capped at 50,000 USDC.
        """
        return await self._run(
            self._core.place_order(
                market_id,
                side=side,
                outcome=outcome,
                amount=amount,
                shares=shares,
                order_type=order_type,
                limit_price=limit_price,
                token_option=token_option,
                expiration=expiration,
                take_profit_price=take_profit_price,
                stop_loss_price=stop_loss_price,
            )
        )

    async def place_raw_order(
        self,
        market_id: str,
        outcome: str,
        side: Side | str | int,
        price: Number,
        size: Number | None = None,
        order_type: OrderType | str = "GTC",
        expiration: int | datetime | None = None,
        client_order_id: str | None = None,
        *,
        amount: Number | None = None,
        salt: int | None = None,
        nonce: int = 0,
        tick_size: Number = "0.01",
        round_price: bool = False,
        signer: AsyncSigner | None = None,
    ) -> RawOrderResult:
        """``POST /orders/raw``: ``size`` shares at ``price`` (0.01-0.99), or ``amount``.

        ``amount`` is USDC for a BUY, shares for a SELL (market-order rounding).

        Uses the cached market tokens and ``neg_risk``, wallet and fee rate,
        draws a salt, precomputes ``clob_order_id`` (V1 wallets; on V2/V3 it is
        read back from the service) and retries safely under ``client_order_id``
        (generated when not given, at most 64 characters). When the outcome stays
        unknown, the error's ``order`` goes to ``resolve_raw_order``. ``signer``: the
        exchange order is signed before anything is sent (``prepare_raw_order``).
        """
        return await self._run(
            self._core.place_raw_order(
                RawOrderSpec(
                    market_id=market_id,
                    outcome=outcome,
                    side=side,
                    price=price,
                    size=size,
                    order_type=order_type,
                    expiration=expiration,
                    client_order_id=client_order_id,
                    amount=amount,
                    salt=salt,
                    nonce=nonce,
                    tick_size=tick_size,
                    round_price=round_price,
                ),
                signer,
            )
        )

    async def place_raw_order_amounts(
        self,
        market_id: str,
        outcome: str,
        side: Side | str | int,
        maker_amount: int | str,
        taker_amount: int | str,
        *,
        order_type: OrderType | str = "GTC",
        expiration: int | datetime | None = None,
        client_order_id: str | None = None,
        salt: int | None = None,
        nonce: int = 0,
        fee_rate_bps: int | None = None,
        signer: AsyncSigner | None = None,
    ) -> RawOrderResult:
        """``POST /orders/raw`` with explicit amounts in 6-decimal units (1 USDC = 1_000_000)."""
        return await self._run(
            self._core.place_raw_order_amounts(
                market_id,
                outcome,
                side,
                maker_amount,
                taker_amount,
                order_type=order_type,
                expiration=expiration,
                client_order_id=client_order_id,
                salt=salt,
                nonce=nonce,
                fee_rate_bps=fee_rate_bps,
                signer=signer,
            )
        )

    async def resolve_raw_order(self, order: RawOrderResult, *, wait: bool = False) -> Order | None:
        """Settle a raw order whose outcome was unknown: the order as the service holds
        it, or ``None`` when it was never placed and no copy of it can land any more.

        ``order`` is ``error.order`` of the error in ``UNKNOWN_OUTCOME`` that
        ``place_raw_order`` raised. Unless its ``order_id`` is known, the very same
        order is sent again under its ``client_order_id``, which the service checks
        first: it answers with the one order holding that key, so nothing is ever
        placed twice (docs/market-making.md). An order that was never placed is
        placed by this call; cancel it if it is no longer wanted. A refusal that
        depends on the service's state (balance, risk control, rate limit) proves
        nothing while an earlier copy may still land (``order.sent_at`` plus the
        client's ``landing_time``, s): it raises ``OutcomeUnknown``, whose
        ``settles_at`` says when asking again settles it; ``wait=True`` sleeps until
        then and asks again. Raises the error again (with ``order``) while the
        outcome stays unknown.
        """
        return await self._run(self._core.resolve_raw_order(order, wait=wait))

    async def cancel_order(self, order_id: str) -> CancelResult:
        """``DELETE /orders/:id``: cancel a live limit order; never retried."""
        return await self._run(self._core.cancel_order(order_id))

    async def cancel_all_orders(
        self, market_id: str | None = None, *, timeout: float = 60.0
    ) -> CancelAllResult:
        """Cancel every open order of the caller (of ``market_id`` alone when given): every
        live one at once, then listing again (failed, refused and not-yet-live ones are
        cancelled in the next round) until a listing shows none, ``timeout`` s at most.
        What was cancelled and what was already gone: ``CancelAllResult`` (``flat``)."""
        return await self._run(self._core.cancel_all_orders(market_id, timeout))

    async def list_orders(
        self, status: str | None = None, page: int = 1, page_size: int = 20
    ) -> OrderPage:
        """``GET /orders``: one page (``page`` from 1, ``page_size`` at most 100)."""
        return await self._run(self._core.list_orders(status, page, page_size))

    def iter_orders(
        self, status: str | None = None, page_size: int = PAGE_SIZE_DEFAULT
    ) -> AsyncIterator[Order]:
        """Every order (optionally of one ``status``), page by page."""
        return self._iterate(self._core.orders_pager(status, page_size))

    async def get_order(self, order_id: str) -> Order:
        """``GET /orders/:id``; ``NotFound`` when unknown or not the caller's."""
        return await self._run(self._core.get_order(order_id))

    async def open_orders(self) -> list[Order]:
        """Orders still trading (pending, signing, submitted, live), read over REST.

        Use it to resynchronise after a stream's ``Reconnected`` marker.
        """
        return await self._run(self._core.open_orders())

    async def wait_for_order(
        self,
        order_id: str,
        statuses: Iterable[str] | str | None = None,
        timeout: float = 30.0,
        *,
        poll_interval: float = 0.5,
    ) -> Order:
        """Wait until the order reaches one of ``statuses`` (default: matched, won, lost,
        cancelled), within ``timeout`` seconds, and return it.

        Listens on an open stream of the owner's order topic when there is one,
        else polls ``GET /orders/:id`` every ``poll_interval`` seconds. Raises
        ``clobkit.errors.TimeoutError`` on timeout.
        """
        op = self._core.wait_for_order(order_id, statuses, timeout, poll_interval, self._listen)
        return await self._run(op)

    # -- account -------------------------------------------------------------------------

    async def get_wallet(self, refresh: bool = False) -> WalletInfo:
        """``GET /wallet``: maker/signer addresses; cached for the client's life."""
        return await self._run(self._core.get_wallet(refresh))

    async def user_id(self) -> str | None:
        """The caller's user id (for ``orders_topic``), read from one of its orders
        (``GET /orders``) and cached once known; ``None`` while it has no order."""
        return await self._run(self._core.user_id())

    async def list_positions(self, page: int = 1, per_page: int = 10) -> PositionPage:
        """``GET /portfolio/positions``: one page (``per_page`` at most 100)."""
        return await self._run(self._core.list_positions(page, per_page))

    def iter_positions(self, per_page: int = PAGE_SIZE_DEFAULT) -> AsyncIterator[Position]:
        """Every open position, page by page."""
        return self._iterate(self._core.positions_pager(per_page))

    async def list_portfolio_orders(
        self, side: Side | str | None = None, page: int = 1, per_page: int = 10
    ) -> PortfolioOrderPage:
        """``GET /portfolio/orders``: one page of history (``side`` BUY/SELL)."""
        return await self._run(self._core.list_portfolio_orders(side, page, per_page))

    def iter_portfolio_orders(
        self, side: Side | str | None = None, per_page: int = PAGE_SIZE_DEFAULT
    ) -> AsyncIterator[PortfolioOrder]:
        """Every portfolio order-history item, page by page."""
        return self._iterate(self._core.portfolio_orders_pager(side, per_page))

    # -- exchange, caches, stream --------------------------------------------------------------

    async def get_fee_rate(self, token_id: str, refresh: bool = False) -> int:
        """The token's ``fee_rate_bps`` (basis points) from ``{clob_url}/fee-rate``; cached, TTL."""
        return await self._run(self._core.fee_rate(token_id, refresh))

    async def prepare(self, market_ids: Iterable[str]) -> None:
        """Warm the wallet, market-token and fee-rate caches concurrently for these markets."""
        await self._run(self._core.prepare(market_ids))

    def clear_caches(self) -> None:
        """Forget cached markets and fee rates (the wallet is kept: it never changes)."""
        self._core.markets.clear()
        self._core.fee_rates.clear()

    # -- the raw-order seam (clobkit.mm's loop is built on these alone) -------------------

    async def prepare_raw_order(
        self,
        market_id: str,
        outcome: str,
        side: Side | str | int,
        price: Number,
        size: Number | None = None,
        order_type: OrderType | str = "GTC",
        expiration: int | datetime | None = None,
        client_order_id: str | None = None,
        *,
        amount: Number | None = None,
        salt: int | None = None,
        nonce: int = 0,
        tick_size: Number = "0.01",
        round_price: bool = False,
        signer: AsyncSigner | None = None,
    ) -> PreparedRawOrder:
        """Everything of ``place_raw_order`` but the POST: the order's amounts (6-decimal
        units), salt, ``client_order_id`` and, on a V1 wallet, its ``clob_order_id``
        (``result``), and the body to send (``post_raw_order``). No request once
        ``prepare([market_id])`` warmed the wallet, market and fee-rate caches.

        ``signer`` (the wallet's signer; a KMS signer's call is a request of its own):
        the exchange order is signed before the call returns, and a signer that
        fails raises here, so nothing unsigned is ever sent. The API's raw order has
        no field for the signature: it is kept in ``result.signature`` with the id it
        signs (``result.signed_order_id``; on V2/V3 the order stamped with this
        client's clock, ``result.timestamp`` ms, not the id the service stores)."""
        return await self._run(
            self._core.prepare_raw_order(
                RawOrderSpec(
                    market_id=market_id,
                    outcome=outcome,
                    side=side,
                    price=price,
                    size=size,
                    order_type=order_type,
                    expiration=expiration,
                    client_order_id=client_order_id,
                    amount=amount,
                    salt=salt,
                    nonce=nonce,
                    tick_size=tick_size,
                    round_price=round_price,
                ),
                signer,
            )
        )

    async def prepare_raw_order_amounts(
        self,
        market_id: str,
        outcome: str,
        side: Side | str | int,
        maker_amount: int | str,
        taker_amount: int | str,
        *,
        order_type: OrderType | str = "GTC",
        expiration: int | datetime | None = None,
        client_order_id: str | None = None,
        salt: int | None = None,
        nonce: int = 0,
        fee_rate_bps: int | None = None,
        signer: AsyncSigner | None = None,
    ) -> PreparedRawOrder:
        """``prepare_raw_order`` with explicit amounts in 6-decimal units (1 USDC =
        1_000_000): the order built and hashed, not sent; no request once the caches
        are warm. ``result.clob_order_id`` is precomputed on a V1 wallet, empty on
        V2/V3 (the service signs its own timestamp: read it from the order's record).
        ``signer`` as for ``prepare_raw_order``."""
        return await self._run(
            self._core.prepare_raw_order_amounts(
                market_id,
                outcome,
                side,
                maker_amount,
                taker_amount,
                order_type=order_type,
                expiration=expiration,
                client_order_id=client_order_id,
                salt=salt,
                nonce=nonce,
                fee_rate_bps=fee_rate_bps,
                signer=signer,
            )
        )

    async def post_raw_order(self, prepared: PreparedRawOrder) -> PlacedOrder:
        """``POST /orders/raw`` of a prepared order, once: the service's answer
        (``order_id``). Safe to send again (the very same body, under its
        ``client_order_id``); a failure of unknown outcome (``UNKNOWN_OUTCOME``)
        carries the order as ``error.order``. A V2/V3 order's ``clob_order_id`` is
        not read back (``send_raw_order`` does)."""
        return await self._run(self._core.post_raw_order(prepared))

    async def send_raw_order(self, prepared: PreparedRawOrder) -> RawOrderResult:
        """``post_raw_order`` with retries, and on a V2/V3 wallet the read of the
        ``clob_order_id`` the service stored: ``place_raw_order`` of a prepared order."""
        return await self._run(self._core.send_raw_order(prepared))

    async def market_info(self, market_id: str) -> MarketInfo:
        """The market's two token ids and ``neg_risk``, as orders are signed with them
        (``GET /markets/:id`` once; cached for the client's life)."""
        return await self._run(self._core.market_info(market_id))

    async def exchange_version(self) -> int:
        """The wallet's exchange version (1, 2 or 3), which fixes how order ids are
        computed (``GET /wallet`` once; cached for the client's life)."""
        hasher = await self._run(self._core.ensure_hasher())
        return hasher.version

    async def check_signer(self, signer: AsyncSigner) -> str:
        """``signer``'s address, checked against the wallet's signer (signature types
        0-2 need the signer's own key: ``OrderFieldError`` naming both else). ``GET
        /wallet`` once; the ``Quoter`` and ``Desk`` check theirs on enter."""
        return await self._run(self._core.signer_address(signer))
