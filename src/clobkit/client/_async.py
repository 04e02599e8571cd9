"""``AsyncClient``: the asyncio I/O shell over ``ClientCore``, sending through one
aiohttp ``ClientSession`` (``_session.py``)."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from decimal import Decimal
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.spec import PAGE_SIZE_DEFAULT
from ..core.types import OrderType, Side
from ..errors import TransportError
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
from ..signing.protocol import AsyncSigner, as_async_signer
from ._aio import pace, within
from ._cancel_all import CancelAllResult
from ._config import ClientConfig
from ._core import ClientCore, OrderFeed
from ._errors import Reply
from ._net import NetworkOptions, network_options, tls_context
from ._ops import Gather, Operation, Receive, Send, Sign, Sleep
from ._paging import Pager
from ._seam_async import AsyncRawOrderSeam
from ._session import SessionTransport
from ._stream import Stream, StreamItem
from ._validate import EventFilters, event_params
from ._wire import attempt_timeout_error

if TYPE_CHECKING:
    from typing import Unpack

__all__ = ["AsyncClient"]

T = TypeVar("T")
Number = Decimal | str | int | float


class AsyncClient(AsyncRawOrderSeam):
    """Asyncio client of the External Trading API; the twin of ``Client``.

    ``base_url``, ``api_key``, ``api_secret`` and ``clob_url`` default to the
    ``CLOBKIT_BASE_URL`` / ``CLOBKIT_API_KEY`` / ``CLOBKIT_API_SECRET`` /
    ``CLOBKIT_CLOB_URL`` environment variables (``clob_url``, the exchange
    host of the fee-rate query, falls back to ``base_url``). Times are in
    seconds: ``timeout`` bounds one attempt as a whole (a trickling server
    cannot stretch it), ``total_timeout`` a call with its retries (default
    ``(max_retries + 1) * timeout + max_retry_after``); a body over
    ``max_response_bytes`` is refused with ``ServerError``; ``landing_time`` is how long
    a raw order's copy without an answer may still land (``OutcomeUnknown``). GETs retry on 429,
    5xx and transport errors; ``place_order`` is never retried;
    ``place_raw_order`` always carries a ``client_order_id`` and is retried
    safely. The secret is held only by the request signer and never
    appears in a repr, log line or exception.

    The network (docs/going-live.md): at most ``max_connections`` connections at
    once; ``proxy`` (an ``http://`` or ``https://`` URL; default: the environment's,
    ``NO_PROXY`` honoured); TLS with the ``ssl`` context given, else ``verify`` (the
    system's roots; a CA bundle's path; ``False``) and ``cert`` (a client
    certificate's PEM file, or ``(certificate, key)``).
    """

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
        self._http = SessionTransport(config, self._tls)
        self._streams: weakref.WeakSet[Stream] = weakref.WeakSet()
        self._closed = False

    def __repr__(self) -> str:
        config = self._core.config
        return f"AsyncClient(base_url={config.base_url!r}, api_key={config.api_key!r})"

    @property
    def config(self) -> ClientConfig:
        """The resolved settings (without the secret)."""
        return self._core.config

    # -- I/O driver ------------------------------------------------------------------

    async def _run(self, op: Operation[T]) -> T:
        send = self._send
        try:
            effect = op.send(None)
            while True:
                result: Any
                if self._closed:  # raised where the operation waits (a raw order's carries it)
                    effect = op.throw(TransportError("the AsyncClient is closed"))
                    continue
                if type(effect) is Send:
                    result = await send(effect)
                elif type(effect) is Sleep:
                    await asyncio.sleep(effect.seconds)
                    await pace()  # what follows a wait is a request sent again
                    result = None
                elif type(effect) is Gather:
                    result = await self._gather(effect.operations)
                elif type(effect) is Sign:
                    result = await as_async_signer(effect.signer).sign_digests(effect.digests)
                else:
                    assert type(effect) is Receive
                    try:
                        result = await within(effect.inbox.get(), effect.seconds)
                    except TimeoutError:
                        result = None
                effect = op.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        except BaseException:
            op.close()  # the operation's cleanup (a stream listener) runs at once
            raise

    async def _send(self, effect: Send) -> Reply | BaseException:
        """One attempt: the complete response within ``effect.timeout`` s, or the error."""
        outgoing, timeout, limit = effect
        if timeout is not None and timeout <= 0:
            return attempt_timeout_error(outgoing, timeout)
        return await self._http.exchange(outgoing, limit, timeout)

    async def _gather(self, ops: list[Operation[Any]]) -> list[Any]:
        return list(await asyncio.gather(*(self._run(op) for op in ops)))

    async def _iterate(self, pager: Pager[Any, T]) -> AsyncIterator[T]:
        further = False
        while pager.params is not None:
            if further:
                await pace()  # a further page: a request beyond the walk's first
            further = True
            for item in pager.advance(await self._run(self._core.page(pager))):
                yield item

    # -- lifecycle --------------------------------------------------------------------

    async def close(self) -> None:
        """Close open streams and the HTTP connection pool; later calls are refused
        (``TransportError``)."""
        self._closed = True
        for stream in list(self._streams):
            await stream.close()
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

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
                market_id,
                outcome,
                side,
                price,
                size,
                order_type,
                expiration,
                client_order_id,
                amount=amount,
                salt=salt,
                nonce=nonce,
                tick_size=tick_size,
                round_price=round_price,
                signer=signer,
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

    def _listen(self, order: Order) -> OrderFeed | None:
        stream = self._core.order_stream(order, list(self._streams))
        if stream is None:
            return None
        inbox: asyncio.Queue[StreamItem] = asyncio.Queue()
        return OrderFeed(stream, inbox, inbox.put_nowait)

    # -- account -------------------------------------------------------------------------

    async def get_wallet(self, refresh: bool = False) -> WalletInfo:
        """``GET /wallet``: maker/signer addresses; cached for the client's life."""
        return await self._run(self._core.get_wallet(refresh))

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

    def stream(
        self,
        topics: Iterable[str] | str,
        *,
        backoff: float = 0.1,
        backoff_cap: float = 5.0,
        open_timeout: float = 10.0,
        ping_interval: float | None = 20.0,
        ack_timeout: float = 1.0,
        max_queue: int = 10_000,
    ) -> Stream:
        """A WebSocket stream of ``topics`` (``user:<id>:orders``, ``market:<token>:book``).

        Connects on ``start()``, ``async with`` or first iteration (returning once
        the server acknowledged, or after ``ack_timeout`` s); reconnects with
        backoff (seconds), resubscribes and yields ``Reconnected``. Frames that are not JSON are
        skipped (counted in ``bad_frames``); at most ``max_queue`` items wait unread.
        ``TransportError`` once the client is closed.
        """
        if self._closed:
            raise TransportError("the AsyncClient is closed")
        stream = Stream(
            self._core,
            topics,
            tls=self._tls,
            backoff=backoff,
            backoff_cap=backoff_cap,
            open_timeout=open_timeout,
            ping_interval=ping_interval,
            ack_timeout=ack_timeout,
            max_queue=max_queue,
        )
        self._streams.add(stream)
        return stream
