"""Connection settings of a client (ClientConfig), read from arguments or the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from ssl import SSLContext
from typing import Any
from urllib.parse import urlsplit

from ..core.checks import positive_int, seconds
from ..core.parse import service_base_url
from ..core.select import RequestSigner
from ..core.spec import API_PREFIX, ENV_API_KEY, ENV_API_SECRET, ENV_BASE_URL, ENV_CLOB_URL
from ..errors import (
    SignatureInputError,
    ValidationError,
)
from ._net import ProxyUrl, check_url

WS_PATH = API_PREFIX + "/ws"

#: s an idle pooled connection is kept, by both shells' pools (httpcore's, aiohttp's):
#: under the 5 s after which common servers (uvicorn's default, the sandbox's
#: ``keep_alive_seconds``) close an idle one, so a request rarely meets a close already
#: on its way (tests/client/test_one_home.py)
KEEPALIVE_EXPIRY = 4.0


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value else None


@dataclass(frozen=True)
class ClientConfig:
    """Connection settings of a client. The API secret is not kept here.

    Times are seconds. ``timeout`` bounds one attempt as a whole (connect,
    send, headers and body: a server trickling bytes cannot stretch it), and
    ``total_timeout`` bounds a call with all its retries and waits (``None``:
    ``(max_retries + 1) * timeout + max_retry_after``); a retry that cannot
    start before it runs out is not made and the last error is raised.
    ``max_retries`` counts retries after the first try; backoff before retry
    *n* (from 0) is ``min(backoff_cap, backoff * 2**n)`` scaled by a random
    factor in [0.5, 1]. A ``Retry-After`` longer than ``max_retry_after`` is not
    waited for: the ``RateLimited`` error is raised. A response body over
    ``max_response_bytes`` (default 16 MiB) is refused with ``ServerError``.
    ``landing_time`` is how long a copy of a raw order sent without a definite
    answer may still take to land (a request queued at a slow service): until
    then a refusal of a later copy that depends on the service's state does not
    prove the order absent (``OutcomeUnknown``; docs/going-live.md).

    The network (docs/going-live.md, "TLS, proxies and the pool"): at most
    ``max_connections`` connections open at once (a request past them waits for one,
    within its ``timeout``); ``proxy`` every request goes through (``None``: the
    environment's ``HTTP_PROXY`` / ``HTTPS_PROXY`` unless ``NO_PROXY`` names the host;
    never shown in a repr); TLS with the ``ssl`` context given, else ``verify`` (True:
    the system's roots; a CA bundle's path; False: no check) and ``cert`` (a client
    certificate: one PEM file, or ``(certificate, key)``).
    """

    base_url: str
    api_key: str
    clob_url: str
    ws_url: str
    timeout: float = 10.0
    max_retries: int = 3
    backoff: float = 0.2
    backoff_cap: float = 5.0
    max_retry_after: float = 30.0
    fee_rate_ttl: float = 300.0
    sign_query: bool = True
    total_timeout: float | None = None
    max_response_bytes: int = 16 * 1024 * 1024
    landing_time: float = 60.0
    max_connections: int = 100
    proxy: ProxyUrl | None = field(default=None, repr=False)
    ssl: SSLContext | None = None
    verify: bool | str = True
    cert: str | tuple[str, str] | None = None

    @property
    def call_budget(self) -> float:
        """Seconds one call may take with its retries (``total_timeout`` or its default)."""
        if self.total_timeout is not None:
            return self.total_timeout
        return (self.max_retries + 1) * self.timeout + self.max_retry_after

    @classmethod
    def resolve(
        cls,
        base_url: str | None,
        api_key: str | None,
        api_secret: str | None,
        *,
        clob_url: str | None = None,
        ws_url: str | None = None,
        **settings: Any,
    ) -> tuple[ClientConfig, RequestSigner]:
        """Settings from the arguments, else from the environment.

        ``CLOBKIT_BASE_URL``, ``CLOBKIT_API_KEY``, ``CLOBKIT_API_SECRET``,
        ``CLOBKIT_CLOB_URL`` (falls back to the base URL). A base URL ending in
        ``/api/ext/v1`` is taken without it (clobkit adds it to every path).
        """
        base = base_url or _env(ENV_BASE_URL)
        if not base:
            raise ValidationError("base_url", None, f"is required (argument or {ENV_BASE_URL})")
        base = check_url(service_base_url(base), "base_url", ("http", "https"))
        key = api_key or _env(ENV_API_KEY)
        if not key:
            raise SignatureInputError("api_key", None, f"is required (argument or {ENV_API_KEY})")
        secret = api_secret or _env(ENV_API_SECRET)
        if not secret:
            raise SignatureInputError(
                "api_secret", "<hidden>", f"is required (argument or {ENV_API_SECRET})"
            )
        clob = clob_url or _env(ENV_CLOB_URL) or base
        clob = check_url(clob.rstrip("/"), "clob_url", ("http", "https"))
        if ws_url is None:
            parts = urlsplit(base)
            scheme = "wss" if parts.scheme.lower() == "https" else "ws"
            ws_url = f"{scheme}://{parts.netloc.rpartition('@')[2]}{WS_PATH}"
        ws = check_url(ws_url, "ws_url", ("ws", "wss"))
        sign_query = settings.pop("sign_query", True)
        proxy = settings.pop("proxy", None)
        if proxy is not None:
            settings["proxy"] = proxy if isinstance(proxy, ProxyUrl) else ProxyUrl(proxy)
        signer = RequestSigner(key, secret, sign_query=sign_query)
        config = cls(
            base_url=base,
            api_key=key,
            clob_url=clob,
            ws_url=ws,
            sign_query=sign_query,
            **settings,
        )
        config._validate()
        return config, signer

    def _validate(self) -> None:
        # finite: an infinite backoff or timeout is a hang, not a setting
        for name in (
            "timeout",
            "backoff",
            "backoff_cap",
            "max_retry_after",
            "fee_rate_ttl",
            "landing_time",
        ):
            seconds(getattr(self, name), name, zero=True)
        if self.total_timeout is not None:
            seconds(self.total_timeout, "total_timeout")
        positive_int(self.max_response_bytes, "max_response_bytes")
        if (
            isinstance(self.max_retries, bool)
            or not isinstance(self.max_retries, int)
            or self.max_retries < 0
        ):
            raise ValidationError("max_retries", self.max_retries, "must be a non-negative int")
        positive_int(self.max_connections, "max_connections")

    @property
    def uses_tls(self) -> bool:
        """Whether any request of the client may need TLS (an https or wss URL, an https
        proxy, or TLS options given)."""
        urls = [self.base_url, self.clob_url, self.ws_url]
        if self.proxy is not None:
            urls.append(self.proxy.url)
        given = self.ssl is not None or self.verify is not True or self.cert is not None
        return given or any(url.lower().startswith(("https:", "wss:")) for url in urls)
