"""The admin routes: loopback-only test controls (settle, house fill, price, deposit, checks,
the replay's clock).

No request signature: only a loopback client may call them, naming a loopback
``Host`` (no DNS rebinding), never cross-origin, POSTs only as
``application/json`` (a page cannot send that without a preflight), and with
``admin_token`` configured only with ``X-Admin-Token``.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Scope

from ..core.spec import ERROR_UNAUTHORIZED
from ..errors import ValidationError
from . import views
from .context import SandboxState
from .errors import Rejected, bad_body
from .faults import drop_streams
from .replay import Replay
from .wire import client_ip, crash_answer, decode_body, failure, json_response

__all__ = ["admin_routes"]


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
            ip = client_ip(request.scope)
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
            return failure(rejected)
        except ClientDisconnect:  # nobody is left to answer
            return Response(status_code=400)
        except Exception as exc:
            return crash_answer(request.method, request.url.path, exc)

    return endpoint


def _own_origins(scope: Scope) -> set[str]:
    """The origins a browser gives pages served by this sandbox (loopback names, our port)."""
    server = scope.get("server")
    if not server or server[1] is None:
        return set()
    host, port = str(server[0]), server[1]
    hosts = {"127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host}
    return {f"http://{h}:{port}" for h in hosts}


def _loopback_host(host: str) -> bool:
    """A ``Host`` header naming this machine's loopback: ``localhost`` or a loopback
    address (``127.0.0.1``, ``[::1]``), with or without a port."""
    name = host.lower()
    if name.startswith("["):  # [::1] or [::1]:8080
        name = name[1 : name.find("]")] if "]" in name else ""
    elif name.count(":") == 1:
        name, _, port = name.partition(":")
        if not port.isdigit():
            return False
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _check_admin_request(st: SandboxState, request: Request) -> None:
    """Refuse what a web page could send: cross-origin requests and non-JSON POSTs.

    A browser sends ``Origin`` on cross-origin requests, and a page can POST
    ``text/plain`` without a preflight; requiring ``application/json`` forces
    one, which the sandbox never grants. With ``admin_token`` configured the
    ``X-Admin-Token`` header must carry it.
    """
    host = request.headers.get("host")
    if host is not None and not _loopback_host(host):
        # DNS rebinding: a page of evil.example whose name now points at 127.0.0.1
        # is same-origin to itself (no Origin header), but its Host names it
        raise Rejected(
            403, "forbidden: admin routes answer a loopback Host only", detail=f"Host {host}"
        )
    origin = request.headers.get("origin")
    if origin is not None and origin not in _own_origins(request.scope):
        raise Rejected(403, "forbidden: cross-origin admin request", detail=f"Origin {origin}")
    token = st.config.admin_token
    if token is not None:
        given = request.headers.get("x-admin-token", "")
        if not hmac.compare_digest(given.encode("latin-1"), token.encode("latin-1")):
            raise Rejected(401, ERROR_UNAUTHORIZED, detail="X-Admin-Token missing or wrong")
    if request.method == "POST":
        kind = request.headers.get("content-type", "")
        if kind.split(";")[0].strip().lower() != "application/json":
            raise Rejected(
                415, "unsupported media type", detail="admin routes take application/json"
            )


def _admin_settle(st: SandboxState, request: Request, body: Any) -> Any:
    return views.fields(st.engine.settle(request.path_params["market_id"], body.get("winner")))


def _admin_fill(st: SandboxState, request: Request, body: Any) -> Any:
    return views.order_record(
        st.engine.house_fill(request.path_params["order_id"], body.get("shares"))
    )


def _admin_price(st: SandboxState, request: Request, body: Any) -> Any:
    market = st.engine.set_price(request.path_params["market_id"], body.get("price"))
    with st.engine.reading():
        return views.market_detail(st.engine, market)


def _admin_deposit(st: SandboxState, request: Request, body: Any) -> Any:
    bonus = body.get("bonus", False)
    if not isinstance(bonus, bool):
        raise bad_body("bonus must be true or false")
    balances = st.engine.deposit(request.path_params["user_id"], body.get("amount"), bonus=bonus)
    return views.fields(balances)


def _admin_balances(st: SandboxState, request: Request, body: Any) -> Any:
    return views.fields(st.engine.balances(request.path_params["user_id"]))


async def _admin_drop_streams(st: SandboxState, request: Request, body: Any) -> Any:
    return {"dropped": await drop_streams(st.streams)}


def _admin_invariants(st: SandboxState, request: Request, body: Any) -> Any:
    return {
        "violations": st.engine.check_invariants(),
        "totals": views.fields(st.engine.totals()),
        "stats": dict(st.engine.stats),
    }


def _replay(st: SandboxState) -> Replay:
    if st.replay is None:
        raise Rejected(404, "no replay: start the sandbox with --replay DIR")
    return st.replay


def _admin_replay(st: SandboxState, request: Request, body: Any) -> Any:
    return _replay(st).status()


_STEP_KEYS = ("updates", "ms")


async def _admin_replay_step(st: SandboxState, request: Request, body: Any) -> Any:
    replay = _replay(st)
    if replay.running:
        raise bad_body("the replay's clock runs (--speed): start with --step to move it by hand")
    for key in body:  # a misspelt key would be a step of nothing, or of the other one
        if key not in _STEP_KEYS:
            raise bad_body(f"unknown key {_as_sent(key)}: a step takes updates or ms")
    try:
        target = replay.target(updates=body.get("updates"), ms=body.get("ms"))
    except ValidationError as exc:
        raise bad_body(f"{exc.field}: {exc.reason} (got {_as_sent(exc.value)})") from None
    await replay.advance(target)
    return replay.status()


_SENT = msgspec.json.Encoder(decimal_format="number")  # 1.50 as sent, not Decimal('1.50')


def _as_sent(value: object, limit: int = 80) -> str:
    """A value of a request body as JSON, the way it was sent (cut to ``limit`` chars)."""
    try:
        text = _SENT.encode(value).decode()
    except (TypeError, OverflowError):  # not from a JSON body: its text
        text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def admin_routes() -> list[Route]:
    """The ``/admin/...`` routes."""
    return [
        Route("/admin/markets/{market_id}/settle", admin(_admin_settle), methods=["POST"]),
        Route("/admin/markets/{market_id}/price", admin(_admin_price), methods=["POST"]),
        Route("/admin/orders/{order_id}/fill", admin(_admin_fill), methods=["POST"]),
        Route("/admin/users/{user_id}/deposit", admin(_admin_deposit), methods=["POST"]),
        Route("/admin/users/{user_id}/balances", admin(_admin_balances), methods=["GET"]),
        Route("/admin/invariants", admin(_admin_invariants), methods=["GET"]),
        Route("/admin/streams/drop", admin_async(_admin_drop_streams), methods=["POST"]),
        Route("/admin/replay", admin(_admin_replay), methods=["GET"]),
        Route("/admin/replay/step", admin_async(_admin_replay_step), methods=["POST"]),
    ]
