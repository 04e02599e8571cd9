"""The sentinel's ear: a Starlette app served by uvicorn (the ``sentinel`` extra, the
sandbox's dependencies) that accepts the desks' signed heartbeats and refuses
everything else, bounded.

It runs in a process of its own (``python -m clobkit.sentinel.listener``, started by
``clobkit sentinel``), writing each accepted heartbeat as one JSON line on its stdout
for the watching process, so that nothing a client sends it (a flood of connections
that uses up its file descriptors, odd bytes) can reach the process that cancels: a
listener that hears nothing makes the sentinel fire, never the reverse. It leaves when
its stdin closes (the watching process is gone).

Bounds: ``limit_concurrency`` connections and requests at once (503 past them), the
head's size (``h11_max_incomplete_event_size``), a body of ``BODY_MAX`` bytes (413),
idle keep-alive connections closed after ``timeout_keep_alive`` s.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import socket
import sys
import threading
import time
from collections.abc import Callable

import msgspec
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .wire import (
    BODY_MAX,
    HEALTH_PATH,
    PATH,
    SIGNATURE_HEADER,
    SKEW_SECONDS,
    TIMESTAMP_HEADER,
    Heartbeat,
    Reply,
    read_token,
    sign,
)

__all__ = ["CONNECTIONS_MAX", "Guard", "listener_app", "listener_config", "main"]

#: Connections and requests served at once; past it uvicorn answers 503.
CONNECTIONS_MAX = 64
_SESSIONS_MAX = 256  # sessions whose last seq is remembered (the oldest forgotten)
_decoder = msgspec.json.Decoder(Heartbeat)
_reply = msgspec.json.Encoder()


class Refused(Exception):
    """A heartbeat refused: ``status`` and why (the reason also counts it)."""

    def __init__(self, status: int, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.reason = reason


class Guard:
    """Checks one heartbeat (signature, time, body, replay) and counts what it refused by
    reason: ``accepted``, ``refused``."""

    def __init__(self, token: bytes, clock: Callable[[], float] = time.time) -> None:
        self.token = token
        self.clock = clock
        self.accepted = 0
        self.refused: dict[str, int] = {}
        self._last_seq: dict[str, int] = {}

    def count(self, reason: str) -> None:
        self.refused[reason] = self.refused.get(reason, 0) + 1

    def check(self, stamp: str | None, signature: str | None, body: bytes) -> Heartbeat:
        """The heartbeat of ``body``, or ``Refused``."""
        if not stamp or not signature or not stamp.isdigit() or len(stamp) > 16:
            raise Refused(401, "token", "signed heartbeats only (timestamp and signature)")
        expected = sign(self.token, int(stamp), body)
        if not hmac.compare_digest(expected, signature.strip().lower()):
            raise Refused(401, "token", "bad signature: not signed with this sentinel's token")
        if abs(int(stamp) / 1000 - self.clock()) > SKEW_SECONDS:
            raise Refused(401, "stale", f"timestamp more than {SKEW_SECONDS:g} s off")
        try:
            beat = _decoder.decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise Refused(400, "malformed", f"malformed heartbeat: {exc}") from None
        last = self._last_seq.pop(beat.session, 0)
        self._last_seq[beat.session] = max(last, beat.seq)
        while len(self._last_seq) > _SESSIONS_MAX:
            del self._last_seq[next(iter(self._last_seq))]
        if beat.seq <= last:
            raise Refused(409, "replayed", f"seq {beat.seq} is not above {last}: a replay")
        self.accepted += 1
        return beat


def listener_app(
    token: bytes,
    hear: Callable[[Heartbeat], None],
    timeout: float,
    clock: Callable[[], float] = time.time,
) -> Starlette:
    """``POST /heartbeat`` (signed; ``hear(beat)`` for each accepted one, answered with
    the sentinel's ``timeout``) and ``GET /health`` (counts, no secret)."""
    guard = Guard(token, clock)
    accepted = _reply.encode(Reply(ok=True, timeout=timeout))

    async def heartbeat(request: Request) -> Response:
        try:
            body = await _body(request)
            beat = guard.check(
                request.headers.get(TIMESTAMP_HEADER), request.headers.get(SIGNATURE_HEADER), body
            )
        except Refused as refusal:
            guard.count(refusal.reason)
            return JSONResponse({"ok": False, "error": str(refusal)}, refusal.status)
        hear(beat)
        return Response(accepted, media_type="application/json")

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, "accepted": guard.accepted, "refused": guard.refused})

    app = Starlette(routes=[Route(PATH, heartbeat, methods=["POST"]), Route(HEALTH_PATH, health)])
    app.state.guard = guard
    return app


async def _body(request: Request) -> bytes:
    """The body, at most ``BODY_MAX`` bytes (413 past it, the rest unread)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > BODY_MAX):
        raise Refused(413, "too large", f"a heartbeat has {BODY_MAX} bytes at most")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > BODY_MAX:
            raise Refused(413, "too large", f"a heartbeat has {BODY_MAX} bytes at most")
        chunks.append(chunk)
    return b"".join(chunks)


def listener_config(app: Starlette) -> uvicorn.Config:
    """uvicorn's settings of the listener: its bounds, no access log, no WebSocket."""
    return uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ws="none",
        http="h11",
        limit_concurrency=CONNECTIONS_MAX,
        backlog=2 * CONNECTIONS_MAX,
        timeout_keep_alive=5,
        h11_max_incomplete_event_size=8 * 1024,
        server_header=False,
        date_header=False,
    )


def bind(listen: str) -> socket.socket:
    """A listening socket on ``HOST:PORT`` (port 0: a free one)."""
    host, port = split_listen(listen)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def split_listen(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as (host, port); ``ValueError`` else."""
    host, sep, port = listen.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen must be HOST:PORT, got {listen!r}")
    return host, int(port)


def main(argv: list[str] | None = None) -> int:
    """The listener's process: serve until stdin closes, each accepted heartbeat a JSON
    line on stdout (after a first line ``listening on http://HOST:PORT``)."""
    parser = argparse.ArgumentParser(prog="python -m clobkit.sentinel.listener")
    parser.add_argument("--listen", required=True)
    parser.add_argument("--timeout", type=float, required=True)
    args = parser.parse_args(argv)
    try:
        token = read_token()
        sock = bind(args.listen)
    except (ValueError, OSError) as exc:  # a ValidationError is a ValueError
        print(f"clobkit sentinel: cannot listen on {args.listen}: {exc}", file=sys.stderr)
        return 2
    out = sys.stdout.buffer
    host, port = sock.getsockname()[:2]
    server: uvicorn.Server | None = None

    def hear(beat: Heartbeat) -> None:
        try:
            out.write(msgspec.json.encode(beat) + b"\n")
            out.flush()
        except (BrokenPipeError, ValueError):  # the watching process is gone
            if server is not None:
                server.should_exit = True

    server = uvicorn.Server(listener_config(listener_app(token, hear, args.timeout)))
    shown = f"[{host}]" if ":" in host else host
    out.write(f"listening on http://{shown}:{port}\n".encode())
    out.flush()
    threading.Thread(target=_leave_with_parent, args=(server,), daemon=True).start()
    asyncio.run(server.serve(sockets=[sock]))
    return 0


def _leave_with_parent(server: uvicorn.Server) -> None:
    """Stop serving once stdin closes: the watching process is gone, and a listener that
    keeps answering heartbeats with nobody to fire would be worse than none."""
    while sys.stdin.buffer.read(4096):
        pass
    server.should_exit = True


if __name__ == "__main__":
    sys.exit(main())
