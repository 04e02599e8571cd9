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
import hmac
import ipaddress
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket

from .auth import Authenticator
from .config import LimitsConfig, SandboxConfig, UserConfig, load_config
from .engine import LIST_STATUSES, Engine, EngineEvent
from .errors import Rejected, bad_body, bad_params
from .faults import Faults, drop_streams, quiet_server_log
from .store import CommitBeforeAnswer, StateStore
from .views import SORT_FIELDS

__all__ = ["PREFIX", "SandboxState", "create_app"]

PREFIX = "/api/ext/v1"
log = logging.getLogger("clobkit.sandbox")
_ENCODER = msgspec.json.Encoder(decimal_format="number")
_DECODER = msgspec.json.Decoder(float_hook=Decimal)


def encode(payload: object) -> bytes:
    return _ENCODER.encode(payload)


def json_response(
    payload: object, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(
        encode(payload),
        status_code=status,
        headers=dict(headers or {}),
        media_type="application/json",
    )


def _injected_500() -> Response:
    return json_response({"success": False, "error": "internal error (injected fault)"}, 500)


def _failure(rejected: Rejected) -> Response:
    return json_response(rejected.body(), rejected.status, rejected.headers)


@dataclass
class SandboxState:
    """Everything one app instance owns (no module-level state)."""

    config: SandboxConfig
    engine: Engine
    auth: Authenticator
    hub: Hub
    faults: Faults
    streams: set[_Connection]
    store: StateStore | None = None


def _raw_path(scope: Scope) -> str:
    raw = scope.get("raw_path")
    if isinstance(raw, bytes) and raw:
        return raw.decode("latin-1").partition("?")[0]
    return str(scope.get("path", ""))


def _query(scope: Scope) -> str:
    qs = scope.get("query_string", b"")
    return qs.decode("latin-1") if isinstance(qs, bytes) else ""


def _client_ip(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


# -- query parameters ---------------------------------------------------------


def q_int(
    params: Mapping[str, str], name: str, default: int, low: int, high: int | None = None
) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    text = raw.strip()
    if not (text.isascii() and text.lstrip("-").isdigit()) or len(text) > 12:
        raise bad_params(f"{name} must be an integer")
    value = int(text)
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise bad_params(f"{name} must be {bound}")
    return value


def q_bool(params: Mapping[str, str], name: str) -> bool | None:
    raw = params.get(name)
    if raw is None:
        return None
    value = raw.strip().lower()
    if value in ("true", "1"):
        return True
    if value in ("false", "0"):
        return False
    raise bad_params(f"{name} must be true or false")


def q_choice(params: Mapping[str, str], name: str, allowed: tuple[str, ...]) -> str | None:
    raw = params.get(name)
    if raw is None:
        return None
    if raw not in allowed:
        raise bad_params(f"{name} must be one of {', '.join(allowed)}")
    return raw


def q_text(params: Mapping[str, str], name: str) -> str | None:
    raw = params.get(name)
    if raw is None:
        return None
    if not raw.strip():
        raise bad_params(f"{name} must not be empty")
    return raw.strip()


def decode_json(raw: bytes | str) -> Any:
    """JSON with floats as ``Decimal``; ``ValueError`` naming the fault (deep nesting included)."""
    try:
        return _DECODER.decode(raw)
    except msgspec.DecodeError as exc:
        raise ValueError(f"malformed JSON: {exc}") from None
    except RecursionError:  # msgspec's own depth guard, not a stack overflow
        raise ValueError("malformed JSON: nested too deeply") from None


def decode_body(body: bytes) -> Any:
    if not body.strip():
        raise bad_body("the body must be a JSON object")
    try:
        data = decode_json(body)
    except ValueError as exc:
        raise bad_body(str(exc)) from None
    if not isinstance(data, dict):
        raise bad_body("the body must be a JSON object")
    return data


# -- endpoints ------------------------------------------------------------------

Handler = Callable[[SandboxState, UserConfig, Request, bytes], Any]


def api(
    scope_name: str, handler: Handler, *, status: int = 200
) -> Callable[[Request], Awaitable[Response]]:
    """An authenticated endpoint: verify, check scope, run ``handler``, wrap in the envelope."""

    async def endpoint(request: Request) -> Response:
        st: SandboxState = request.app.state.sandbox
        try:
            body = await request.body()
            user = st.auth.authenticate(
                method=request.method,
                path=_raw_path(request.scope),
                query=_query(request.scope),
                headers=request.headers,
                body=body,
                client_ip=_client_ip(request.scope),
            )
            st.auth.require_scope(user, scope_name)

            async def handle() -> Response:
                data = handler(st, user, request, body)
                return json_response({"success": True, "data": data}, status)

            response: Response = await st.faults.run(handle, _injected_500)
            return response
        except Rejected as rejected:
            return _failure(rejected)
        except ClientDisconnect:  # nobody is left to answer
            return Response(status_code=400)
        except Exception:
            log.exception("internal error on %s %s", request.method, request.url.path)
            return json_response({"success": False, "error": "internal error"}, 500)

    return endpoint


def _events(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    p = request.query_params
    return st.engine.list_events(
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
        limit=q_int(p, "limit", 20, 1, 100),
        offset=q_int(p, "offset", 0, 0),
    )


def _event(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    return st.engine.event_detail(request.path_params["event_id"])


def _event_markets(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    return st.engine.event_markets(request.path_params["event_id"])


def _markets(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    p = request.query_params
    q = q_text(p, "q")
    if q is None:
        raise bad_params("q (search keyword) is required")
    return st.engine.search_markets(q, q_int(p, "limit", 20, 1, 100))


def _market(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    return st.engine.market_detail(request.path_params["market_id"])


def _orderbook(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    book = st.engine.orderbook(request.path_params["asset_id"])
    if book is None:
        raise Rejected(200, "Order book not found")
    return book


def _place(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    _check_content_type(request)
    return st.engine.place_order(user.user_id, decode_body(body))


def _place_raw(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    _check_content_type(request)
    return st.engine.place_raw_order(user.user_id, decode_body(body))


def _check_content_type(request: Request) -> None:
    kind = request.headers.get("content-type")
    if kind is not None and "json" not in kind.lower():
        raise bad_body("Content-Type must be application/json")


def _cancel(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    return st.engine.cancel_order(user.user_id, request.path_params["order_id"])


def _orders(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    p = request.query_params
    return st.engine.list_orders(
        user.user_id,
        status=q_choice(p, "status", LIST_STATUSES),
        page=q_int(p, "page", 1, 1),
        page_size=q_int(p, "page_size", 20, 1, 100),
    )


def _order(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    return st.engine.order_detail(user.user_id, request.path_params["order_id"])


def _wallet(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    return st.engine.wallet(user.user_id)


def _positions(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    p = request.query_params
    return st.engine.positions(
        user.user_id, page=q_int(p, "page", 1, 1), per_page=q_int(p, "per_page", 10, 1, 100)
    )


def _portfolio_orders(st: SandboxState, user: UserConfig, request: Request, body: bytes) -> Any:
    p = request.query_params
    return st.engine.portfolio_orders(
        user.user_id,
        side=q_choice(p, "side", ("BUY", "SELL")),
        page=q_int(p, "page", 1, 1),
        per_page=q_int(p, "per_page", 10, 1, 100),
    )


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


# -- admin (loopback only) ------------------------------------------------------------


def admin(
    handler: Callable[[SandboxState, Request, Any], Any],
) -> Callable[[Request], Awaitable[Response]]:
    async def run(st: SandboxState, request: Request, body: Any) -> Any:
        return handler(st, request, body)

    return admin_async(run)


def admin_async(
    handler: Callable[[SandboxState, Request, Any], Awaitable[Any]],
) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        st: SandboxState = request.app.state.sandbox
        try:
            ip = _client_ip(request.scope)
            try:
                loopback = ip is not None and ipaddress.ip_address(ip).is_loopback
            except ValueError:
                loopback = False
            if not loopback:
                raise Rejected(403, "forbidden: admin routes are loopback-only")
            _check_admin_request(st, request)
            body = await request.body()
            parsed = None
            if request.method == "POST":  # an empty body reads as {} (POST /admin/streams/drop)
                parsed = decode_body(body) if body.strip() else {}
            data = await handler(st, request, parsed)
            return json_response({"success": True, "data": data})
        except Rejected as rejected:
            return _failure(rejected)
        except ClientDisconnect:  # nobody is left to answer
            return Response(status_code=400)
        except Exception:
            log.exception("internal error on %s %s", request.method, request.url.path)
            return json_response({"success": False, "error": "internal error"}, 500)

    return endpoint


def _own_origins(scope: Scope) -> set[str]:
    """The origins a browser gives pages served by this sandbox (loopback names, our port)."""
    server = scope.get("server")
    if not server or server[1] is None:
        return set()
    host, port = str(server[0]), server[1]
    hosts = {"127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host}
    return {f"http://{h}:{port}" for h in hosts}


def _check_admin_request(st: SandboxState, request: Request) -> None:
    """Refuse what a web page could send: cross-origin requests and non-JSON POSTs.

    A browser sends ``Origin`` on cross-origin requests, and a page can POST
    ``text/plain`` without a preflight; requiring ``application/json`` forces
    one, which the sandbox never grants. With ``admin_token`` configured the
    ``X-Admin-Token`` header must carry it.
    """
    origin = request.headers.get("origin")
    if origin is not None and origin not in _own_origins(request.scope):
        raise Rejected(403, "forbidden: cross-origin admin request", detail=f"Origin {origin}")
    token = st.config.admin_token
    if token is not None:
        given = request.headers.get("x-admin-token", "")
        if not hmac.compare_digest(given.encode("latin-1"), token.encode("latin-1")):
            raise Rejected(401, "unauthorized", detail="X-Admin-Token missing or wrong")
    if request.method == "POST":
        kind = request.headers.get("content-type", "")
        if kind.split(";")[0].strip().lower() != "application/json":
            raise Rejected(
                415, "unsupported media type", detail="admin routes take application/json"
            )


def _admin_settle(st: SandboxState, request: Request, body: Any) -> Any:
    return st.engine.settle(request.path_params["market_id"], body.get("winner"))


def _admin_fill(st: SandboxState, request: Request, body: Any) -> Any:
    return st.engine.house_fill(request.path_params["order_id"], body.get("shares"))


def _admin_price(st: SandboxState, request: Request, body: Any) -> Any:
    return st.engine.set_price(request.path_params["market_id"], body.get("price"))


def _admin_deposit(st: SandboxState, request: Request, body: Any) -> Any:
    bonus = body.get("bonus", False)
    if not isinstance(bonus, bool):
        raise bad_body("bonus must be true or false")
    return st.engine.deposit(request.path_params["user_id"], body.get("amount"), bonus=bonus)


def _admin_balances(st: SandboxState, request: Request, body: Any) -> Any:
    return st.engine.balances(request.path_params["user_id"])


async def _admin_drop_streams(st: SandboxState, request: Request, body: Any) -> Any:
    return {"dropped": await drop_streams(st.streams)}


def _admin_invariants(st: SandboxState, request: Request, body: Any) -> Any:
    return {
        "violations": st.engine.check_invariants(),
        "totals": st.engine.totals(),
        "stats": dict(st.engine.stats),
    }


# -- WebSocket ------------------------------------------------------------------------------


class _Connection:
    """One WebSocket subscriber: its topics and the messages waiting to be written.

    ``queued_bytes`` counts the encoded messages in ``queue`` exactly; past
    ``max_queue_bytes`` the subscriber is dropped (close code 1008) and its
    queue freed, so a client that never reads costs a bounded amount of memory.
    """

    def __init__(self, websocket: WebSocket, user: UserConfig, max_queue_bytes: int) -> None:
        self.websocket = websocket
        self.user = user
        self.topics: set[str] = set()
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.queued_bytes = 0
        self.max_queue_bytes = max_queue_bytes
        self.closing = False

    def send(self, message: object) -> None:
        if self.closing:
            return
        data = encode(message)
        if self.queued_bytes + len(data) > self.max_queue_bytes:  # a consumer this slow is dropped
            self.closing = True
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queued_bytes = 0
            self.queue.put_nowait(None)
            return
        self.queued_bytes += len(data)
        self.queue.put_nowait(data)

    async def pump(self) -> None:
        while True:
            item = await self.queue.get()
            if item is None:
                await self.websocket.close(code=1008, reason="slow consumer")
                return
            self.queued_bytes -= len(item)
            await self.websocket.send_text(item.decode("utf-8"))


class Hub:
    """Topic subscriptions and delivery of engine events to WebSocket connections."""

    def __init__(self, engine: Engine, max_topics: int = LimitsConfig.ws_max_topics) -> None:
        self.engine = engine
        self.max_topics = max_topics
        self.loop: asyncio.AbstractEventLoop | None = None
        self.subscribers: dict[str, set[_Connection]] = {}
        self._last: dict[str, object] = {}

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.engine.add_listener(self._from_engine)

    def stop(self) -> None:
        self.engine.remove_listener(self._from_engine)
        self.loop = None

    def _from_engine(self, events: list[EngineEvent]) -> None:
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # loop shutting down
            loop.call_soon_threadsafe(self._dispatch, events)

    def _dispatch(self, events: list[EngineEvent]) -> None:
        markets: dict[str, None] = {}
        for event in events:
            if event.kind == "order":
                topic = f"user:{event.key}:orders"
                for conn in list(self.subscribers.get(topic, ())):
                    conn.send({"type": "data", "topic": topic, "data": event.data})
            else:
                markets[event.key] = None
        for market_id in markets:
            market = self.engine.markets.get(market_id)
            if market is None:
                continue
            for token in (market.fx.token_id_a, market.fx.token_id_b):
                for kind in ("book", "price"):
                    topic = f"market:{token}:{kind}"
                    if self.subscribers.get(topic):
                        self._publish(topic, token, kind)

    def _payload(self, token: str, kind: str) -> tuple[object, object] | None:
        if kind == "book":
            book = self.engine.orderbook(token, allow_empty=True)
            return None if book is None else (book, (book["bids"], book["asks"]))
        snap = self.engine.price_snapshot(token)
        if snap is None:
            return None
        return snap, {k: v for k, v in snap.items() if k != "timestamp"}

    def _publish(self, topic: str, token: str, kind: str) -> None:
        found = self._payload(token, kind)
        if found is None:
            return
        data, key = found
        if self._last.get(topic) == key:
            return
        self._last[topic] = key
        for conn in list(self.subscribers.get(topic, ())):
            conn.send({"type": "data", "topic": topic, "data": data})

    def _refusal(self, conn: _Connection, topic: object) -> str | None:
        if not isinstance(topic, str):
            return "topics must be strings"
        parts = topic.split(":")
        if len(parts) == 3 and parts[0] == "market" and parts[2] in ("book", "price"):
            if "markets:read" not in conn.user.scopes:
                return "forbidden: missing scope markets:read"
            if not self.engine.has_token(parts[1]):
                return "unknown token"
            return None
        if len(parts) == 3 and parts[0] == "user" and parts[2] == "orders":
            if parts[1] != conn.user.user_id:
                return "forbidden: cannot subscribe to another user's orders"
            if "orders:read" not in conn.user.scopes:
                return "forbidden: missing scope orders:read"
            return None
        return "unknown topic"

    def handle(self, conn: _Connection, text: str) -> None:
        try:
            message = decode_json(text)
        except ValueError as exc:
            conn.send({"type": "error", "error": f"invalid message: {exc}"})
            return
        if not isinstance(message, dict):
            conn.send({"type": "error", "error": "invalid message: expected a JSON object"})
            return
        action = message.get("action")
        if action == "ping":
            conn.send({"type": "pong"})
            return
        if action not in ("subscribe", "unsubscribe"):
            conn.send({"type": "error", "error": "unknown action (subscribe, unsubscribe or ping)"})
            return
        raw_topics = message.get("topics")
        if not isinstance(raw_topics, list) or not raw_topics:
            conn.send({"type": "error", "error": "topics must be a non-empty array of strings"})
            return
        if len(raw_topics) > self.max_topics:  # checked before any work on them
            conn.send({"type": "error", "error": f"at most {self.max_topics} topics per message"})
            return
        # De-duplicated in order: a topic listed twice is one subscription (and one watch).
        unique = {(isinstance(t, str), t if isinstance(t, str) else repr(t)): t for t in raw_topics}
        topics: list[object] = list(unique.values())
        if action == "unsubscribe":
            gone = [t for t in topics if isinstance(t, str) and t in conn.topics]
            for topic in gone:
                self._unsubscribe(conn, topic)
            conn.send({"type": "unsubscribed", "topics": gone})
            return
        accepted: list[str] = []
        for item in topics:
            refusal = self._refusal(conn, item)
            if refusal is not None:
                conn.send({"type": "error", "error": refusal, "topic": item})
                continue
            topic = str(item)
            if topic in conn.topics:
                continue
            if len(conn.topics) + len(accepted) >= self.max_topics:
                refusal = f"at most {self.max_topics} topics per connection"
                conn.send({"type": "error", "error": refusal, "topic": topic})
                continue
            accepted.append(topic)
        for topic in accepted:
            conn.topics.add(topic)
            self.subscribers.setdefault(topic, set()).add(conn)
            if topic.startswith("user:"):
                self.engine.watch_user(conn.user.user_id, +1)
        conn.send({"type": "subscribed", "topics": accepted})
        for topic in accepted:
            _, token, kind = topic.split(":")
            if topic.startswith("market:"):
                found = self._payload(token, kind)
                if found is not None:
                    conn.send({"type": "snapshot", "topic": topic, "data": found[0]})

    def _unsubscribe(self, conn: _Connection, topic: str) -> None:
        conn.topics.discard(topic)
        subs = self.subscribers.get(topic)
        if subs is not None:
            subs.discard(conn)
            if not subs:
                del self.subscribers[topic]
                self._last.pop(topic, None)
        if topic.startswith("user:"):
            self.engine.watch_user(conn.user.user_id, -1)

    def drop(self, conn: _Connection) -> None:
        for topic in list(conn.topics):
            self._unsubscribe(conn, topic)


async def websocket_endpoint(websocket: WebSocket) -> None:
    st: SandboxState = websocket.app.state.sandbox
    try:
        user = st.auth.authenticate(
            method="GET",
            path=_raw_path(websocket.scope),
            query=_query(websocket.scope),
            headers=websocket.headers,
            body=b"",
            client_ip=_client_ip(websocket.scope),
        )
    except Rejected as rejected:
        if "websocket.http.response" in websocket.scope.get("extensions", {}):
            await websocket.send_denial_response(_failure(rejected))
        else:  # pragma: no cover - every server we run supports denial responses
            await websocket.close(code=1008, reason=rejected.error)
        return
    await websocket.accept()
    conn = _Connection(websocket, user, st.config.limits.ws_max_queue_bytes)
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
    finally:
        st.streams.discard(conn)
        st.hub.drop(conn)
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await pump


# -- the app ----------------------------------------------------------------------------------


async def _not_found(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    message = {404: "not found", 405: "method not allowed"}.get(status, "error")
    return json_response({"success": False, "error": message}, status)


async def _crashed(request: Request, exc: Exception) -> Response:
    """Whatever escaped a route still answers in the envelope (Starlette's default is text)."""
    log.error("internal error on %s %s", request.method, request.url.path, exc_info=exc)
    return json_response({"success": False, "error": "internal error"}, 500)


class _BodyTooLarge(Rejected):
    def __init__(self, limit: int) -> None:
        super().__init__(
            413,
            "request body too large",
            detail=f"at most {limit} bytes",
            headers={"Connection": "close"},  # the rest of the body is never read
        )


class _Guard:
    """ASGI middleware bounding each HTTP request before a route sees it.

    A head (request line and headers) over ``max_header_bytes`` answers 431;
    a ``Content-Length`` over ``max_body_bytes`` answers 413 at once, and a
    body streamed past it (chunked) raises ``_BodyTooLarge`` from
    ``receive``, which the routes answer as a 413, so at most the limit (plus
    one network read) is ever buffered.
    """

    def __init__(self, app: ASGIApp, limits: LimitsConfig) -> None:
        self.app = app
        self.max_body = limits.max_body_bytes
        self.max_head = limits.max_header_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
        head = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
        head += sum(len(k) + len(v) + 4 for k, v in headers)
        if head > self.max_head:
            refusal = Rejected(
                431,
                "request header fields too large",
                detail=f"at most {self.max_head} bytes of request line and headers",
                headers={"Connection": "close"},
            )
            await _failure(refusal)(scope, receive, send)
            return
        for name, value in headers:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body:
                await _failure(_BodyTooLarge(self.max_body))(scope, receive, send)
                return
        seen = 0
        limit = self.max_body

        async def bounded_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _BodyTooLarge(limit)
            return message

        await self.app(scope, bounded_receive, send)


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
        faults=Faults(cfg.faults),
        streams=set(),
        store=store,
    )
    quiet_server_log()  # faults may be switched on while running (Faults.configure)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        hub.start(asyncio.get_running_loop())

        async def ticker() -> None:
            while True:
                await asyncio.sleep(0.1)
                try:
                    engine.tick()
                except Exception:  # pragma: no cover - keep ticking
                    log.exception("engine tick failed")

        task = asyncio.create_task(ticker())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            hub.stop()

    p = PREFIX
    routes = [
        Route(f"{p}/events", api("markets:read", _events), methods=["GET"]),
        Route(f"{p}/events/{{event_id}}", api("markets:read", _event), methods=["GET"]),
        Route(
            f"{p}/events/{{event_id}}/markets", api("markets:read", _event_markets), methods=["GET"]
        ),
        Route(f"{p}/markets", api("markets:read", _markets), methods=["GET"]),
        Route(f"{p}/markets/{{market_id}}", api("markets:read", _market), methods=["GET"]),
        Route(f"{p}/orderbooks/{{asset_id}}", api("markets:read", _orderbook), methods=["GET"]),
        Route(f"{p}/orders/raw", api("orders:write", _place_raw, status=201), methods=["POST"]),
        Route(f"{p}/orders", api("orders:write", _place, status=201), methods=["POST"]),
        Route(f"{p}/orders", api("orders:read", _orders), methods=["GET"]),
        Route(f"{p}/orders/{{order_id}}", api("orders:read", _order), methods=["GET"]),
        Route(f"{p}/orders/{{order_id}}", api("orders:write", _cancel), methods=["DELETE"]),
        Route(f"{p}/wallet", api("orders:read", _wallet), methods=["GET"]),
        Route(f"{p}/portfolio/positions", api("portfolio:read", _positions), methods=["GET"]),
        Route(f"{p}/portfolio/orders", api("portfolio:read", _portfolio_orders), methods=["GET"]),
        WebSocketRoute(f"{p}/ws", websocket_endpoint),
        Route("/fee-rate", fee_rate, methods=["GET"]),
        Route("/admin/markets/{market_id}/settle", admin(_admin_settle), methods=["POST"]),
        Route("/admin/markets/{market_id}/price", admin(_admin_price), methods=["POST"]),
        Route("/admin/orders/{order_id}/fill", admin(_admin_fill), methods=["POST"]),
        Route("/admin/users/{user_id}/deposit", admin(_admin_deposit), methods=["POST"]),
        Route("/admin/users/{user_id}/balances", admin(_admin_balances), methods=["GET"]),
        Route("/admin/invariants", admin(_admin_invariants), methods=["GET"]),
        Route("/admin/streams/drop", admin_async(_admin_drop_streams), methods=["POST"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: _not_found, Exception: _crashed},
        middleware=[Middleware(_Guard, limits=cfg.limits)],
    )
    # "/events/" is not "/events": answer 404 in the envelope, not a bare 307 redirect.
    app.router.redirect_slashes = False
    app.state.sandbox = sandbox
    if store is not None:
        app.add_middleware(CommitBeforeAnswer, store=store)
    return app


def _open_store(
    path: str | os.PathLike[str] | None, engine: Engine | None, clock: Callable[[], float]
) -> StateStore | None:
    if path is None:
        return None
    if engine is not None:
        raise ValueError("create_app: pass either engine or state, not both")
    return StateStore(path, clock=clock)
