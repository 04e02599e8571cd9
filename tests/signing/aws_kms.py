"""AWS KMS on loopback for the signer's tests: ministack's KMS (a process of its own,
its real HTTP API on a free port; its ``Sign`` honours ``MessageType=DIGEST`` and,
like AWS, returns a high ``s`` about half of the time), and a misbehaving stand-in
in front of it (aiohttp's server) for what ministack cannot be told to do:
throttle (``ThrottlingException``, as KMS answers it), hang, or tamper (every
``Sign`` forwarded with another key's id: a signature of the right digest by the
wrong key). The real aiobotocore / botocore clients talk to both.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp
from aiohttp import web

#: The credentials every test process sees (the usual chain: the environment).
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def ministack() -> Iterator[str]:
    """ministack's KMS in a child process on loopback; its URL."""
    port = free_port()
    env = dict(os.environ, SERVICES="kms", LOG_LEVEL="ERROR", GATEWAY_PORT=str(port))
    command = [sys.executable, "-m", "hypercorn", "ministack.app:app"]
    command += ["--bind", f"127.0.0.1:{port}", "--log-level", "ERROR"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"ministack did not start: {proc.stderr}") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@functools.cache
def kms_client(url: str) -> Any:
    """botocore's KMS client on ``url`` (to create and change keys): one a process, as
    making one reads the service's model anew (half a second)."""
    import botocore.session

    return botocore.session.Session().create_client("kms", endpoint_url=url)


def _error(kind: str, message: str) -> web.Response:
    """An error answer of KMS's JSON protocol."""
    body = json.dumps({"__type": kind, "message": message}).encode()
    return web.Response(status=400, body=body, content_type="application/x-amz-json-1.1")


class Misbehaving:
    """A KMS stand-in forwarding to ``upstream`` unless told otherwise: ``throttle`` the
    next N ``Sign`` calls, ``hang`` every call, hold every ``Sign`` past the first
    ``hold_from`` until ``let_go()`` (or ``reset()``: 503), ``tamper`` (sign with another key id)
    or ``deny`` (AccessDeniedException, as a policy without ``kms:Sign`` answers)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.throttle = 0
        self.hang = False
        self.tamper: str | None = None
        self.deny = False
        self.signs = 0  # Sign calls that reached the stand-in
        self.agents: set[str] = set()  # their User-Agent headers
        self.hold_from: int | None = None  # Sign calls past this many wait to be let go
        self._forward_held = False  # let go by let_go() (forwarded), else by reset() (503)
        self.url = ""
        self._released = asyncio.Event()  # set to answer the calls hung so far
        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._ready = threading.Event()

    def _serve(self) -> None:
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        app = web.Application()
        app.router.add_post("/", self._handle)
        runner = web.AppRunner(app, shutdown_timeout=0.1)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as self._session:
            self._ready.set()
            await self._stop.wait()
        await runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        target = request.headers.get("X-Amz-Target", "")
        body = await request.read()
        if target.endswith(".Sign"):
            self.signs += 1
            self.agents.add(request.headers.get("User-Agent", ""))
            if self.deny:
                return _error("AccessDeniedException", "not authorized to perform: kms:Sign")
            if self.hang:
                await self._released.wait()  # until the next test, then no answer
                return web.Response(status=503)
            if self.hold_from is not None and self.signs > self.hold_from:
                await self._released.wait()
                if not self._forward_held:
                    return web.Response(status=503)
            if self.throttle:
                self.throttle -= 1
                return _error("ThrottlingException", "Rate exceeded")
            if self.tamper is not None:
                call = json.loads(body)
                call["KeyId"] = self.tamper
                body = json.dumps(call).encode()
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        async with self._session.post(self.upstream, data=body, headers=headers) as answer:
            data = await answer.read()
            kind = answer.headers.get("Content-Type", "application/x-amz-json-1.1")
            return web.Response(status=answer.status, body=data, headers={"Content-Type": kind})

    def reset(self) -> None:
        """Back to forwarding (one stand-in serves a module's tests): the hung calls let go."""
        done = threading.Event()

        def reset() -> None:
            self.throttle, self.hang, self.tamper, self.signs, self.deny = 0, False, None, 0, False
            self.agents, self.hold_from, self._forward_held = set(), None, False
            self._released.set()
            self._released = asyncio.Event()
            done.set()

        self._loop.call_soon_threadsafe(reset)
        done.wait(10)

    def let_go(self) -> None:
        """The ``Sign`` calls held (``hold_from``) forwarded now; later ones go at once."""
        done = threading.Event()

        def let_go() -> None:
            self.hold_from, self._forward_held = None, True
            self._released.set()
            self._released = asyncio.Event()
            done.set()

        self._loop.call_soon_threadsafe(let_go)
        done.wait(10)

    def __enter__(self) -> Misbehaving:
        self._thread.start()
        self._ready.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        self.reset()
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
