"""The sandbox's HTTP and WebSocket routes (Starlette), over one :class:`~.engine.Engine`.

* ``/api/ext/v1/...`` — every endpoint of the API text, signed-request auth,
  envelopes and the error table;
* ``/api/ext/v1/ws`` — the WebSocket channel (signed handshake);
* ``/fee-rate?token_id=`` — the CLOB fee-rate query (the sandbox is its own
  ``clob_url``; unauthenticated, answers ``{"base_fee": N}``);
* ``/admin/...`` — loopback-only test controls: settle a market, let the house
  fill a resting order, move a market's price, deposit, check invariants,
  drop every stream (``faults.py`` also fails requests on purpose when configured).

Handlers are thin: parse the query, call the engine (which validates bodies
and raises ``Rejected``), wrap the result in the envelope.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket

from ..core.spec import (
    ERROR_BOOK_NOT_FOUND,
    ERROR_INTERNAL,
    ERROR_NOT_FOUND,
    LIST_STATUSES,
    PAGE_SIZE_MAX,
    SIDES,
)
from . import views
from .admin import admin_routes
from .auth import Authenticator
from .config import SandboxConfig, UserConfig, load_config
from .context import SandboxState
from .engine import Engine
from .errors import Rejected, bad_body, bad_params
from .faults import Faults, quiet_server_log
from .guard import Guard, crashed, not_found, not_routed
from .queries import SORT_FIELDS
from .store import StateStore
from .wire import (
    PREFIX,
    client_ip,
    crash_answer,
    decode_body,
    failure,
    header_map,
    injected_500,
    json_response,
    log,
    q_bool,
    q_choice,
    q_int,
    q_text,
    query_text,
    raw_path,
)
from .ws import Connection, Hub

__all__ = ["PREFIX", "SandboxState", "create_app"]


# -- endpoints ------------------------------------------------------------------

Handler = Callable[[SandboxState, UserConfig, Request, bytes], Any]


def api(
    scope_name: str, handler: Handler, *, status: int = 200, route: str = ""
) -> Callable[[Request], Awaitable[Response]]:
    """An authenticated endpoint: verify, check scope, run ``handler``, wrap in the envelope.
    Its faults are the sandbox's, or those of its ``route`` ("GET /orders": ``faults.routes``)."""

    async def endpoint(request: Request) -> Response:
        st: SandboxState = request.app.state.sandbox
        try:
            body = await request.body()
            user = st.auth.authenticate(
                method=request.method,
                path=raw_path(request.scope),
                query=query_text(request.scope),
                headers=header_map(request.scope),
                body=body,
                client_ip=client_ip(request.scope),
            )
            st.auth.require_scope(user, scope_name)

            async def handle() -> Response:
                data = handler(st, user, request, body)
                return json_response({"success": True, "data": data}, status)

            response: Response = await st.faults.run(handle, injected_500, route)
            return response
        except Rejected as rejected:
            return failure(rejected)
        except ClientDisconnect:  # nobody is left to answer
            return Response(status_code=400)
        except Exception as exc:
            return crash_answer(request.method, request.url.path, exc)

    return endpoint


def _events(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    p = request.query_params
    page = st.engine.list_events(
        league=q_text(p, "league"),
        sport=q_text(p, "sport"),
        category=q_text(p, "category"),
        subcategory=q_text(p, "subcategory"),
        live=q_bool(p, "live"),
        ended=q_bool(p, "ended"),
        is_featured=q_bool(p, "is_featured"),
        is_future=q_bool(p, "is_future"),
        status=q_choice(p, "status", ("active", "ended")),
        sort_by=q_choice(p, "sort_by", tuple(SORT_FIELDS)),
        limit=q_int(p, "limit", 20, 1, PAGE_SIZE_MAX),
        offset=q_int(p, "offset", 0, 0),
    )
    with st.engine.reading():
        return views.event_page(st.engine, page)


def _event(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    event = st.engine.event(request.path_params["id"])
    with st.engine.reading():
        return {"event": views.event_detail(st.engine, event)}


def _event_markets(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    markets = st.engine.event_markets(request.path_params["id"])
    with st.engine.reading():
        return views.event_markets(st.engine, markets)


def _markets(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    p = request.query_params
    q = q_text(p, "q")
    if q is None:
        raise bad_params("q (search keyword) is required")
    found = st.engine.search_markets(q, q_int(p, "limit", 20, 1, PAGE_SIZE_MAX))
    with st.engine.reading():
        return views.market_list(found)


def _market(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    market = st.engine.market(request.path_params["id"])
    with st.engine.reading():
        return {"market": views.market_detail(st.engine, market)}


def _orderbook(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    book = st.engine.orderbook(request.path_params["id"])
    if book is None:
        raise Rejected(200, ERROR_BOOK_NOT_FOUND)
    return views.orderbook(book)


def _place(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    _check_content_type(request, body)
    return views.fields(st.engine.place_order(user.user_id, decode_body(body)))


def _place_raw(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    _check_content_type(request, body)
    return views.fields(st.engine.place_raw_order(user.user_id, decode_body(body)))


def _check_content_type(request: Request, body: bytes) -> None:
    """A body's ``Content-Type`` is ``application/json`` (section 5: a required header on a
    request with a body); its parameters (``; charset=utf-8``) are free, case is not read."""
    if not body:
        return  # no body: decode_body says what is missing
    kind = request.headers.get("content-type")
    media = (kind or "").partition(";")[0].strip().lower()
    if media != "application/json":
        got = "no Content-Type header" if kind is None else f"Content-Type {kind[:64]!r}"
        raise bad_body(f"Content-Type must be application/json, got {got}")


def _cancel(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    return views.fields(st.engine.cancel_order(user.user_id, request.path_params["id"]))


def _orders(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    p = request.query_params
    page = st.engine.list_orders(
        user.user_id,
        status=q_choice(p, "status", LIST_STATUSES),
        page=q_int(p, "page", 1, 1),
        page_size=q_int(p, "page_size", 20, 1, PAGE_SIZE_MAX),
    )
    return views.order_page(page)


def _order(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    order = st.engine.order_detail(user.user_id, request.path_params["id"])
    return {"order": views.order_record(order)}


def _wallet(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    return views.fields(st.engine.wallet(user.user_id))


def _positions(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    p = request.query_params
    page = st.engine.positions(
        user.user_id,
        page=q_int(p, "page", 1, 1),
        per_page=q_int(p, "per_page", 10, 1, PAGE_SIZE_MAX),
    )
    with st.engine.reading():
        return views.position_page(st.engine, page)


def _portfolio_orders(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    p = request.query_params
    page = st.engine.portfolio_orders(
        user.user_id,
        side=q_choice(p, "side", SIDES),
        page=q_int(p, "page", 1, 1),
        per_page=q_int(p, "per_page", 10, 1, PAGE_SIZE_MAX),
    )
    return views.portfolio_page(st.engine, page)


async def fee_rate(request: Request) -> Response:
    """The CLOB's fee-rate query: ``{"base_fee": N}`` (basis points) for a token."""
    st: SandboxState = request.app.state.sandbox
    token = request.query_params.get("token_id")
    if not token:
        return json_response({"error": "token_id is required"}, 400)
    fee = st.engine.fee_rate(token)
    if fee is None:
        return json_response({"error": f"no market for token_id {token}"}, 404)
    return json_response({"base_fee": fee})


async def _deny(websocket: WebSocket, rejected: Rejected) -> None:
    """Refuse a WebSocket handshake with an HTTP answer in the envelope."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(failure(rejected))
    else:  # pragma: no cover - every server we run supports denial responses
        await websocket.close(code=1008, reason=rejected.error)


async def stray_websocket(websocket: WebSocket) -> None:
    """A handshake on any other path: 404 in the envelope (Starlette's own is a bare 403)."""
    await _deny(websocket, Rejected(404, ERROR_NOT_FOUND))


async def websocket_endpoint(websocket: WebSocket) -> None:
    st: SandboxState = websocket.app.state.sandbox
    try:
        user = st.auth.authenticate(
            method="GET",
            path=raw_path(websocket.scope),
            query=query_text(websocket.scope),
            headers=websocket.headers,
            body=b"",
            client_ip=client_ip(websocket.scope),
        )
    except Rejected as rejected:
        await _deny(websocket, rejected)
        return
    await websocket.accept()
    conn = Connection(websocket, user, st.config.limits.ws_max_queue_bytes)
    st.streams.add(conn)
    pump = asyncio.create_task(conn.pump())
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            text = message.get("text")
            if text is None:
                raw = message.get("bytes") or b""
                text = raw.decode("utf-8", errors="replace")
            st.hub.handle(conn, text)
            if pump.done():
                break
            # frames already queued would be handled back to back without a
            # suspension: let the HTTP requests waiting on the loop run between them
            await asyncio.sleep(0)
    finally:
        st.streams.discard(conn)
        st.hub.drop(conn)
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await pump


# -- the app ----------------------------------------------------------------------------------

Endpoint = Callable[[Request], Awaitable[Response]]


class SandboxApp(Starlette):
    """Starlette, with the signed API endpoints dispatched directly.

    A request to one of ``direct``'s exact (method, path) pairs, or to
    ``{PREFIX}/orders/{order_id}`` / ``{PREFIX}/orderbooks/{asset_id}``, skips
    Starlette's router (a regular expression per route), its two exception
    middlewares and the request/response wrappers: the same guard checks run
    (``Guard.refusal`` and the bounded body), then the same endpoint. Every
    other request (the other API routes, ``/fee-rate``, the admin routes,
    unknown paths, other methods, the WebSocket, the lifespan) goes through
    Starlette as before. The endpoints catch every exception themselves.
    """

    def __init__(
        self,
        *args: Any,
        direct: dict[tuple[str, str], Endpoint],
        by_id: dict[tuple[str, str], Endpoint],
        guard: Guard,
        store: StateStore | None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._direct = direct
        self._by_id = by_id  # (method, path prefix ending in "/") -> endpoint of {id}
        self._guard = guard
        self._store = store

    def _route(self, method: str, path: str) -> tuple[Endpoint, dict[str, str]] | None:
        endpoint = self._direct.get((method, path))
        if endpoint is not None:
            return endpoint, {}
        head, slash, tail = path.rpartition("/")
        if tail:  # Starlette's {param} is one non-empty segment ([^/]+)
            endpoint = self._by_id.get((method, head + slash))
            if endpoint is not None:
                return endpoint, {"id": tail}
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = None
        if scope["type"] == "http" and not scope.get("root_path"):
            found = self._route(scope["method"], scope["path"])
        if found is None:
            await super().__call__(scope, receive, send)
            return
        endpoint, params = found
        scope["app"] = self
        scope["path_params"] = params
        if self._store is not None:
            send = CommitBeforeAnswer.committed(send, self._store)
        refusal = self._guard.refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        response = await endpoint(Request(scope, self._guard.bounded(receive)))
        await response(scope, receive, send)


class CommitBeforeAnswer:
    """ASGI middleware: commit buffered nonces before a response or WebSocket accept starts."""

    _STARTS = frozenset(
        ("http.response.start", "websocket.accept", "websocket.http.response.start")
    )

    def __init__(self, app: ASGIApp, store: StateStore) -> None:
        self.app = app
        self.store = store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, self.committed(send, self.store))

    @classmethod
    def committed(cls, send: Send, store: StateStore) -> Send:
        """``send`` that commits the store's buffered nonces before a response starts.

        When the commit fails (a full disk, a broken file) the answer must not
        leave, since its nonce is not on disk: a 500 in the envelope goes
        instead (a WebSocket is closed, 1011), and the rest of it is dropped.
        """
        failed = False

        async def committed_send(message: Message) -> None:
            nonlocal failed
            if failed:
                return
            kind = message["type"]
            if kind in cls._STARTS:
                try:
                    store.flush()
                except Exception as exc:
                    failed = True
                    await _instead(send, kind, exc)
                    return
            await send(message)

        return committed_send


async def _instead(send: Send, kind: str, exc: Exception) -> None:
    """The answer in place of one whose commit failed (``kind``: the message it started with)."""
    log.error("the state file's commit failed; answering 500", exc_info=exc)
    if kind == "websocket.accept":
        await send({"type": "websocket.close", "code": 1011})
        return
    answer = json_response({"success": False, "error": ERROR_INTERNAL}, 500)
    prefix = "http.response" if kind == "http.response.start" else "websocket.http.response"
    start = {"status": answer.status_code, "headers": answer.raw_headers}
    await send({"type": f"{prefix}.start", **start})
    await send({"type": f"{prefix}.body", "body": answer.body})


def _signed(
    method: str, path: str, scope_name: str, handler: Handler, status: int = 200
) -> tuple[str, str, Endpoint]:
    return method, path, api(scope_name, handler, status=status, route=f"{method} {path}")


# The API's signed endpoints: (method, path under PREFIX, endpoint); "{id}" is the last segment.
_ENDPOINTS: tuple[tuple[str, str, Endpoint], ...] = (
    _signed("GET", "/events", "markets:read", _events),
    _signed("GET", "/events/{id}", "markets:read", _event),
    _signed("GET", "/events/{id}/markets", "markets:read", _event_markets),
    _signed("GET", "/markets", "markets:read", _markets),
    _signed("GET", "/markets/{id}", "markets:read", _market),
    _signed("GET", "/orderbooks/{id}", "markets:read", _orderbook),
    _signed("POST", "/orders/raw", "orders:write", _place_raw, 201),
    _signed("POST", "/orders", "orders:write", _place, 201),
    _signed("GET", "/orders", "orders:read", _orders),
    _signed("GET", "/orders/{id}", "orders:read", _order),
    _signed("DELETE", "/orders/{id}", "orders:write", _cancel),
    _signed("GET", "/wallet", "orders:read", _wallet),
    _signed("GET", "/portfolio/positions", "portfolio:read", _positions),
    _signed("GET", "/portfolio/orders", "portfolio:read", _portfolio_orders),
)
#: The endpoints ``faults.routes`` may name ("GET /orders/{id}").
ROUTES = frozenset(f"{method} {path}" for method, path, _ in _ENDPOINTS)


def create_app(
    config: SandboxConfig | Mapping[str, Any] | None = None,
    *,
    strict_query_signing: bool = False,
    engine: Engine | None = None,
    clock: Callable[[], float] = time.time,
    state: str | os.PathLike[str] | None = None,
) -> Starlette:
    """A Starlette app serving one sandbox (its own engine, keys, nonces and limits).

    ``state``: an SQLite state file to restore from and commit every change to
    (docs/sandbox.md, "State file"); ``None`` keeps everything in memory.
    """
    cfg = load_config(config)
    if strict_query_signing:
        cfg = cfg.with_strict_query_signing(True)
    store = _open_store(state, engine, clock)
    try:
        engine = engine if engine is not None else Engine(cfg, clock=clock, store=store)
        auth = Authenticator(cfg, clock=clock, on_nonce=None if store is None else store.note_nonce)
        if store is not None:
            auth.restore_nonces(store.nonces())
    except BaseException:
        if store is not None:
            store.close()
        raise
    hub = Hub(engine, cfg.limits.ws_max_topics)
    sandbox = SandboxState(
        config=cfg,
        engine=engine,
        auth=auth,
        hub=hub,
        faults=Faults(cfg.faults, ROUTES),
        streams=set(),
        store=store,
    )
    quiet_server_log()  # faults may be switched on while running (Faults.configure)
    app = _app(cfg, _lifespan(engine, hub), store)
    app.state.sandbox = sandbox
    if store is not None:
        app.add_middleware(CommitBeforeAnswer, store=store)
    return app


_TICK = 0.1  # s: the longest the ticker sleeps
_TICK_MIN = 0.001  # s: and the shortest (a failing tick never spins the loop)


def _lifespan(engine: Engine, hub: Hub) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """While serving: the hub's publisher runs, the engine ticks every 0.1 s and, unless
    the config's ``walk`` is ``null``, the house's prices walk."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        hub.start(asyncio.get_running_loop())
        tasks = [asyncio.create_task(_ticker(engine))]
        walk = engine.config.walk
        if walk is not None:
            tasks.append(asyncio.create_task(_walker(engine, walk.every_seconds)))
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            hub.stop()

    return lifespan


async def _ticker(engine: Engine) -> None:
    """Run the engine's due steps and expiries when no request does: at the moment the
    next one falls due (a GTD order's expiry published on the stream to the
    millisecond), and every 0.1 s at least. A request ticks the engine first, so a
    read never shows an order past its expiry as live."""
    while True:
        due = engine.next_due()
        await asyncio.sleep(_TICK if due is None else min(_TICK, max(_TICK_MIN, due)))
        try:
            engine.tick()
        except Exception:  # pragma: no cover - keep ticking
            log.exception("engine tick failed")


async def _walker(engine: Engine, every: float) -> None:
    """A step of the house's price walk every ``every`` seconds (walk.py)."""
    while True:
        await asyncio.sleep(every)
        try:
            engine.walk()
        except Exception:  # pragma: no cover - keep walking
            log.exception("price walk failed")


def _app(
    cfg: SandboxConfig,
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[None]],
    store: StateStore | None,
) -> SandboxApp:
    """The routes (the API's, the WebSocket, /fee-rate, the admin's) in a SandboxApp."""
    endpoints = [(method, PREFIX + path, e) for method, path, e in _ENDPOINTS]
    routes = [
        *(Route(path, endpoint, methods=[method]) for method, path, endpoint in endpoints),
        WebSocketRoute(f"{PREFIX}/ws", websocket_endpoint),
        Route("/fee-rate", fee_rate, methods=["GET"]),
        *admin_routes(),
        WebSocketRoute("/{path:path}", stray_websocket),  # last: what no route above took
    ]
    direct = {(m, path): e for m, path, e in endpoints if "{" not in path}
    by_id = {(m, path[: -len("{id}")]): e for m, path, e in endpoints if path.endswith("/{id}")}
    app = SandboxApp(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: not_found, Exception: crashed},
        middleware=[Middleware(Guard, limits=cfg.limits)],
        direct=direct,
        by_id=by_id,
        guard=Guard(not_routed, cfg.limits),
        store=store,
    )
    # "/events/" is not "/events": answer 404 in the envelope, not a bare 307 redirect.
    app.router.redirect_slashes = False
    return app


def _open_store(
    path: str | os.PathLike[str] | None, engine: Engine | None, clock: Callable[[], float]
) -> StateStore | None:
    if path is None:
        return None
    if engine is not None:
        raise ValueError("create_app: pass either engine or state, not both")
    return StateStore(path, clock=clock)
