"""``AsyncClient``'s transport: one aiohttp ``ClientSession`` (public API only).

Each attempt is one ``session.request`` under one ``ClientTimeout(total=...)``: the
connect, the wait for a pool slot, the send and the read of the whole body end by
the attempt's deadline (a server trickling its answer cannot stretch it; aiohttp's
rounding of long timeouts up to whole seconds is turned off). The session:

* sends the request as it was signed (``Outgoing``: the URL ``encoded``, never
  quoted again; the client's own headers; no ``Accept-Encoding``), follows no
  redirect (one would carry the signed headers elsewhere), keeps no cookie, and
  sends nothing twice: aiohttp sends an idempotent request again once after a
  dropped connection, which the ``_send_once`` middleware turns off (the client's own
  retry policy decides; a desk counts every request it sends);
* decodes nothing itself (``auto_decompress=False``): ``_body.Body`` inflates under
  ``max_response_bytes``, a declared length past it is refused unread;
* pools at most ``max_connections`` connections (``TCPConnector``: happy eyeballs and
  a DNS cache as aiohttp gives them), each idle at most ``KEEPALIVE_EXPIRY`` s;
* goes through the proxy ``_net.Proxies`` names for the origin, if any.

aiohttp's exceptions become ``clobkit.errors`` through one table, ``FAILURES``
(tests/client/test_client_transport.py checks it names every exception class
aiohttp exports).
"""

from __future__ import annotations

import asyncio
import math
import zlib
from ssl import SSLContext

import aiohttp
from yarl import URL

from ..errors import ClobkitError, TransportError
from ._body import Body, BodyTooLarge, refusal, unreadable
from ._config import KEEPALIVE_EXPIRY, ClientConfig
from ._net import Proxies
from ._wire import Answer, Failure, Outgoing, failure_error, lookup_failure

__all__ = ["FAILURES", "SessionTransport"]


class NotResent(aiohttp.ClientError):
    """A dropped connection that aiohttp would have answered by sending the request
    again (``_send_once``); its cause is aiohttp's own exception."""


async def _send_once(
    request: aiohttp.ClientRequest, handler: aiohttp.ClientHandlerType
) -> aiohttp.ClientResponse:
    """Client middleware: the exceptions after which aiohttp sends an idempotent
    request again become ``NotResent``, which it raises as it is."""
    try:
        return await handler(request)
    except aiohttp.ClientConnectorError:
        raise  # never sent again anyway
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
        raise NotResent(str(exc)) from exc


#: aiohttp's exceptions (every class it exports) and the failures they are.
FAILURES: dict[type[BaseException], Failure] = {
    aiohttp.ClientError: Failure.LOST,
    aiohttp.ClientResponseError: Failure.MALFORMED,  # an answer aiohttp could not parse
    aiohttp.ContentTypeError: Failure.MALFORMED,
    aiohttp.WSServerHandshakeError: Failure.MALFORMED,
    aiohttp.ClientHttpProxyError: Failure.PROXY,
    aiohttp.TooManyRedirects: Failure.MALFORMED,  # never: no redirect is followed
    aiohttp.ClientConnectionError: Failure.LOST,
    aiohttp.ClientConnectionResetError: Failure.LOST,
    aiohttp.ClientOSError: Failure.LOST,
    aiohttp.ClientConnectorError: Failure.CONNECT,
    aiohttp.ClientConnectorDNSError: Failure.CONNECT,
    aiohttp.ClientProxyConnectionError: Failure.PROXY,
    aiohttp.ClientSSLError: Failure.TLS,
    aiohttp.ClientConnectorSSLError: Failure.TLS,
    aiohttp.ClientConnectorCertificateError: Failure.TLS,
    aiohttp.ServerConnectionError: Failure.LOST,
    aiohttp.ServerDisconnectedError: Failure.DISCONNECTED,
    aiohttp.ServerTimeoutError: Failure.TIMEOUT,
    aiohttp.ConnectionTimeoutError: Failure.TIMEOUT,
    aiohttp.SocketTimeoutError: Failure.TIMEOUT,
    aiohttp.ServerFingerprintMismatch: Failure.TLS,
    aiohttp.ClientPayloadError: Failure.CUT,
    aiohttp.UploadAbortedError: Failure.LOST,
    aiohttp.InvalidURL: Failure.UNSENDABLE,
    aiohttp.InvalidUrlClientError: Failure.UNSENDABLE,
    aiohttp.RedirectClientError: Failure.UNSENDABLE,
    aiohttp.NonHttpUrlClientError: Failure.UNSENDABLE,
    aiohttp.InvalidUrlRedirectClientError: Failure.UNSENDABLE,
    aiohttp.NonHttpUrlRedirectClientError: Failure.UNSENDABLE,
    aiohttp.WSMessageTypeError: Failure.MALFORMED,
    aiohttp.WebSocketError: Failure.MALFORMED,
    aiohttp.EofStream: Failure.CUT,
    asyncio.TimeoutError: Failure.TIMEOUT,  # the total timeout
    OSError: Failure.LOST,
}


class SessionTransport:
    """The aiohttp session of one ``AsyncClient``, made on its first request (a session
    belongs to the running event loop)."""

    def __init__(self, config: ClientConfig, tls: SSLContext | None) -> None:
        self._limit = config.max_connections
        self._tls = tls
        self._proxies = Proxies(config.proxy)
        self._session: aiohttp.ClientSession | None = None
        self._timeouts: dict[float | None, aiohttp.ClientTimeout] = {}
        self._closed = False

    def _start(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=self._limit,
            limit_per_host=0,
            keepalive_timeout=KEEPALIVE_EXPIRY,
            ssl=self._tls if self._tls is not None else True,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            skip_auto_headers=("Accept-Encoding",),
            cookie_jar=aiohttp.DummyCookieJar(),
            middlewares=(_send_once,),
        )
        return self._session

    def _timeout(self, seconds: float | None) -> aiohttp.ClientTimeout:
        timeout = self._timeouts.get(seconds)
        if timeout is None:
            if len(self._timeouts) > 64:  # the attempts of calls near their budget's end
                self._timeouts.clear()
            timeout = aiohttp.ClientTimeout(total=seconds, ceil_threshold=math.inf)
            self._timeouts[seconds] = timeout
        return timeout

    async def exchange(
        self, outgoing: Outgoing, limit: int | None, timeout: float | None
    ) -> Answer | ClobkitError:
        """Send ``outgoing`` and read its whole answer (at most ``limit`` bytes as
        decoded) within ``timeout`` s: the answer, or the ``clobkit.errors`` exception
        of the failure."""
        if self._closed:  # never a new session after aclose(): it would stay open
            return TransportError(f"{outgoing.where}: not sent, the AsyncClient is closed")
        session = self._session or self._start()
        origin = outgoing.origin
        proxy = self._proxies(origin.scheme, origin.host)
        try:
            async with session.request(
                outgoing.method,
                URL(outgoing.url, encoded=True),
                headers=outgoing.headers,
                data=outgoing.body or None,
                allow_redirects=False,
                timeout=self._timeout(timeout),
                proxy=None if proxy is None else proxy.with_auth,
            ) as response:
                return await _read(outgoing, response, limit)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            return _failure(exc, outgoing, timeout)

    async def aclose(self) -> None:
        """Close the session and its connections; later exchanges are refused."""
        self._closed = True
        session, self._session = self._session, None
        if session is not None:
            await session.close()


async def _read(
    outgoing: Outgoing, response: aiohttp.ClientResponse, limit: int | None
) -> Answer | ClobkitError:
    """The whole answer of ``response`` (at most ``limit`` bytes as decoded), or the
    error refusing it; an answer left unread closes its connection on release."""
    status = response.status
    headers = response.headers
    codings = headers.getall("Content-Encoding", ())
    coding = ", ".join(codings) if codings else None
    length = response.content_length
    refused = refusal(outgoing, status, coding, length, limit)  # refused unread
    if refused is not None:
        return refused
    try:
        if coding is None and length is not None:
            content = await response.read()  # as long as declared: within the limit
        else:
            body = Body(coding, limit)
            async for chunk in response.content.iter_any():
                body.feed(chunk)
            content = body.finish()
    except (BodyTooLarge, zlib.error) as exc:
        return unreadable(exc, outgoing, status, limit)
    return Answer(status, headers, content, response.reason or "")


def _failure(exc: BaseException, outgoing: Outgoing, timeout: float | None) -> ClobkitError:
    """The ``clobkit.errors`` exception of aiohttp's ``exc`` (``FAILURES``)."""
    if isinstance(exc, NotResent) and exc.__cause__ is not None:
        exc = exc.__cause__
    kind = lookup_failure(FAILURES, exc) or Failure.LOST
    error = failure_error(kind, outgoing, _detail(exc), timeout)
    error.__cause__ = exc
    return error


def _detail(exc: BaseException) -> str:
    """The words of ``exc`` (its class's name when it has none); of an answer aiohttp
    refused, its message alone (its text names the URL, query and all)."""
    if isinstance(exc, aiohttp.ClientResponseError):
        text = str(exc.message).strip()
    else:
        text = str(exc).strip()
    return text if text else type(exc).__name__
