"""The request guard: bounds on each HTTP request's head and body, and envelopes for strays.

``Guard`` (ASGI middleware) answers 431 / 413 before a route reads anything;
``not_found`` and ``crashed`` answer what no route handled in the JSON
envelope instead of Starlette's plain text.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..core.spec import ERROR_METHOD_NOT_ALLOWED, ERROR_NOT_FOUND
from .config import LimitsConfig
from .errors import Rejected
from .wire import crash_answer, failure, json_response

__all__ = ["BodyTooLarge", "Guard", "crashed", "not_found", "not_routed"]


async def not_found(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    message = {404: ERROR_NOT_FOUND, 405: ERROR_METHOD_NOT_ALLOWED}.get(status, "error")
    return json_response({"success": False, "error": message}, status)


async def crashed(request: Request, exc: Exception) -> Response:
    """Whatever escaped a route still answers in the envelope (Starlette's default is text)."""
    return crash_answer(request.method, request.url.path, exc)


async def not_routed(scope: Scope, receive: Receive, send: Send) -> None:
    """The app of a guard used only for its checks (``Guard.refusal``, ``Guard.bounded``)."""
    raise RuntimeError("this guard only checks requests")


class BodyTooLarge(Rejected):
    def __init__(self, limit: int) -> None:
        super().__init__(
            413,
            "request body too large",
            detail=f"at most {limit} bytes",
            headers={"Connection": "close"},  # the rest of the body is never read
        )


class Guard:
    """ASGI middleware bounding each HTTP request before a route sees it.

    A head (request line and headers) over ``max_header_bytes`` answers 431;
    a ``Content-Length`` over ``max_body_bytes`` answers 413 at once, and a
    body streamed past it (chunked) raises ``BodyTooLarge`` from
    ``receive``, which the routes answer as a 413, so at most the limit (plus
    one network read) is ever buffered.
    """

    def __init__(self, app: ASGIApp, limits: LimitsConfig) -> None:
        self.app = app
        self.max_body = limits.max_body_bytes
        self.max_head = limits.max_header_bytes

    def refusal(self, scope: Scope) -> Response | None:
        """The 431 / 413 answer to a request whose head or declared body is too large."""
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
            return failure(refusal)
        for name, value in headers:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body:
                return failure(BodyTooLarge(self.max_body))
        return None

    def bounded(self, receive: Receive) -> Receive:
        """``receive`` raising ``BodyTooLarge`` once the body passes the limit."""
        seen = 0
        limit = self.max_body

        async def bounded_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        return bounded_receive

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, self.bounded(receive), send)
