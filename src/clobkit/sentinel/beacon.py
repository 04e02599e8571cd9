"""The desk's side of the sentinel: a signed heartbeat every fraction of the sentinel's
timeout, sent from the desk's own event loop (so that a loop blocked by a long call
stops them as surely as a dead process does), saying what the desk is doing
(quoting, halted and why, leaving).

The beacon also watches its own acknowledgements: when none came for longer than the
sentinel's timeout (the loop was blocked, the network to the sentinel cut, the
sentinel down), the sentinel has cancelled, or is cancelling, every order of the
account, so ``on_lapse`` is told (the desk halts: quoting on would only fight it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import aiohttp
import msgspec

from ..errors import ClobkitError, TransportError, ValidationError
from .wire import PATH, SIGNATURE_HEADER, TIMESTAMP_HEADER, Heartbeat, Reply, sign

__all__ = ["Beacon"]

log = logging.getLogger("clobkit.mm")

_reply = msgspec.json.Decoder(Reply)
#: How often a heartbeat goes: a quarter of the sentinel's timeout, within these (s).
INTERVAL_MIN, INTERVAL_MAX = 0.05, 1.0
_REPLY_MAX = 4096  # bytes of the sentinel's answer read at most
_CONFLICT = 409  # a heartbeat overtaken by a later one: not an answer, not a failure


class Beacon:
    """Heartbeats to the sentinel at ``url`` (``http://HOST:PORT``), signed with ``token``.

    ``status()`` gives what each heartbeat says: (state, reason, open orders);
    ``on_lapse(reason)`` is called when no heartbeat was acknowledged for longer than
    the sentinel's timeout (``timeout``, learnt from its first answer).
    """

    def __init__(
        self,
        url: str,
        token: bytes,
        desk: str,
        status: Callable[[], tuple[str, str | None, int]],
        on_lapse: Callable[[str], None],
    ) -> None:
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValidationError("sentinel", url, "must be the sentinel's http://HOST:PORT")
        self.url = url.rstrip("/") + PATH
        self.token = token
        self.desk = desk
        self.status = status
        self.on_lapse = on_lapse
        self.session = secrets.token_hex(8)
        self.timeout: float | None = None
        #: ``time.monotonic()`` when the last acknowledged heartbeat was sent (its
        #: answer may be read much later: a loop blocked meanwhile).
        self.acked: float | None = None
        #: Heartbeats sent, acknowledged, and refused or unanswered.
        self.sent = self.acks = self.failures = 0
        self._seq = 0
        self._http: aiohttp.ClientSession | None = None  # the async client's stack
        self._task: asyncio.Task[None] | None = None
        self._told: set[asyncio.Task[None]] = set()
        self._lapsed = False

    @property
    def interval(self) -> float:
        """Seconds between two heartbeats."""
        timeout = self.timeout or INTERVAL_MAX * 4
        return min(INTERVAL_MAX, max(INTERVAL_MIN, timeout / 4))

    async def start(self) -> None:
        """The first heartbeat, acknowledged (else the error: a desk that believes
        itself watched and is not is worse than one that knows), then one every
        ``interval`` s."""
        self._http = aiohttp.ClientSession(trust_env=False)
        try:
            await self._beat(raise_failure=True)
        except BaseException:
            await self._http.close()
            raise
        self._task = asyncio.ensure_future(self._run())

    def tell(self) -> None:
        """The desk's state changed (its kill switch fired): a heartbeat now."""
        if self._http is not None and not self._http.closed:
            task = asyncio.ensure_future(self._beat())
            self._told.add(task)
            task.add_done_callback(self._told.discard)

    async def close(self, state: str, reason: str) -> None:
        """Leave: a last heartbeat saying ``state`` (``left``: no longer watched), then
        stop."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._http is None:
            return
        if self._told:
            await asyncio.wait(list(self._told))
        with contextlib.suppress(ClobkitError):
            await self._beat(override=(state, reason))
        await self._http.close()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self._check_lapse()
            await self._beat()

    def _check_lapse(self) -> None:
        """Tell ``on_lapse`` once a silence passed the sentinel's timeout."""
        if self.acked is None or self.timeout is None:
            return
        silent = time.monotonic() - self.acked
        if silent > self.timeout and not self._lapsed:
            self._lapsed = True
            self.on_lapse(
                f"the sentinel did not acknowledge a heartbeat for {silent:.1f} s (its timeout "
                f"{self.timeout:g} s): it cancels every order of the account"
            )

    async def _beat(
        self, *, raise_failure: bool = False, override: tuple[str, str] | None = None
    ) -> None:
        assert self._http is not None
        state, reason, orders = self.status()
        if override is not None:
            state, reason = override
        self._seq += 1
        beat = Heartbeat(
            session=self.session,
            seq=self._seq,
            desk=self.desk,
            state=state,
            reason=reason[:200] if reason else None,
            open_orders=min(orders, 2**31 - 1),
        )
        body = msgspec.json.encode(beat)
        stamp = time.time_ns() // 1_000_000
        headers = {
            TIMESTAMP_HEADER: str(stamp),
            SIGNATURE_HEADER: sign(self.token, stamp, body),
            "Content-Type": "application/json",
        }
        timeout = min(5.0, (self.timeout or 10.0) / 2)
        self.sent += 1
        sent_at = time.monotonic()
        try:
            status, content = await self._post(body, headers, timeout)
            if status == _CONFLICT:
                return
            if status != 200:
                raise TransportError(f"{self.url}: {status} {content[:200]!r}")
            reply = _reply.decode(content)
        except (
            TimeoutError,
            aiohttp.ClientError,
            msgspec.DecodeError,
            msgspec.ValidationError,
            ClobkitError,
        ) as e:
            self.failures += 1
            failure = e if isinstance(e, ClobkitError) else TransportError(f"{self.url}: {e!r}")
            if raise_failure:
                raise TransportError(f"the sentinel did not accept a heartbeat: {failure}") from e
            if self.failures == 1 or self.failures % 100 == 0:
                log.warning(
                    "heartbeat to the sentinel failed (%d so far): %s", self.failures, failure
                )
            return
        self.acks += 1
        self.timeout = reply.timeout
        self.acked = max(self.acked or sent_at, sent_at)
        self._lapsed = False

    async def _post(
        self, body: bytes, headers: dict[str, str], timeout: float
    ) -> tuple[int, bytes]:
        """One heartbeat sent: the answer's status and body (``timeout`` s in all; a body
        past ``_REPLY_MAX`` bytes is no sentinel's answer)."""
        assert self._http is not None
        bound = aiohttp.ClientTimeout(total=timeout)
        async with self._http.post(self.url, data=body, headers=headers, timeout=bound) as answer:
            content = bytearray()
            async for chunk in answer.content.iter_chunked(_REPLY_MAX):
                content += chunk
                if len(content) > _REPLY_MAX:
                    raise TransportError(f"{self.url}: an answer past {_REPLY_MAX} bytes")
            return answer.status, bytes(content)
