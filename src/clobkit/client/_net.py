"""The network options both clients share: URLs checked, the TLS context, the proxy.

* ``check_url``: an absolute URL of the given schemes, ASCII, with a host and a
  port in range (``ValidationError`` naming the field otherwise);
* ``tls_context``: the ``ssl.SSLContext`` of a client (``ssl=`` as given, or one built
  from ``verify=`` and ``cert=``: the system's roots by default, as httpx reads them,
  a CA bundle, no verification, a client certificate);
* ``Proxies``: which proxy a request to an origin goes through: ``proxy=`` when given,
  else the environment's (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``) unless
  ``NO_PROXY`` names the host, read once when the client is made, through the standard
  library's ``urllib.request.getproxies`` and ``proxy_bypass`` (as aiohttp reads them).
  ``NO_PROXY`` alone names no proxy: requests go direct.
"""

from __future__ import annotations

import logging
import ssl
import urllib.request
from pathlib import Path
from typing import Any, TypedDict
from urllib.parse import quote, unquote, urlsplit

import httpx

from ..errors import ValidationError

__all__ = ["NetworkOptions", "Proxies", "ProxyUrl", "check_url", "network_options", "tls_context"]

log = logging.getLogger("clobkit.client")

#: Schemes of a proxy both transports speak (the request to an https origin is
#: tunnelled with CONNECT).
PROXY_SCHEMES = ("http", "https")


class NetworkOptions(TypedDict, total=False):
    """The network options of both clients (keyword arguments; docs/going-live.md).

    ``max_connections`` (default 100): connections open at once; a request past them
    waits for one within its ``timeout``. ``proxy``: an ``http://`` or ``https://``
    proxy every request goes through (default: the environment's, ``NO_PROXY``
    honoured). ``ssl``: the ``ssl.SSLContext`` of every TLS connection; else
    ``verify`` (True: the system's roots; a CA bundle's path; False: no check) and
    ``cert`` (a client certificate: one PEM file, or ``(certificate, key)``).
    """

    max_connections: int
    proxy: str | None
    ssl: ssl.SSLContext | None
    verify: bool | str
    cert: str | tuple[str, str] | None


def network_options(options: dict[str, Any], owner: str) -> dict[str, Any]:
    """``options`` when each is one of ``NetworkOptions``; else the ``TypeError`` Python
    raises for an unknown keyword argument of ``owner``."""
    for name in options:
        if name not in NetworkOptions.__annotations__:
            raise TypeError(f"{owner}() got an unexpected keyword argument {name!r}")
    return options


def check_url(url: object, field: str, schemes: tuple[str, ...]) -> str:
    """``url`` when it is an absolute URL of one of ``schemes`` with a host; else
    ``ValidationError`` naming ``field``."""
    if not isinstance(url, str) or not url.isascii() or not url.isprintable() or " " in url:
        raise ValidationError(field, url, "is not a valid URL (printable ASCII, no spaces)")
    try:
        parts = urlsplit(url)
        port = parts.port  # ValueError past 65535
    except ValueError as exc:
        raise ValidationError(field, url, f"is not a valid URL ({exc})") from None
    if parts.scheme.lower() not in schemes or not parts.hostname:
        raise ValidationError(field, url, f"must be an absolute {'/'.join(schemes)} URL")
    if port == 0:
        raise ValidationError(field, url, "names port 0")
    return url


def tls_context(
    context: ssl.SSLContext | None, verify: bool | str, cert: str | tuple[str, str] | None
) -> ssl.SSLContext:
    """The TLS context of a client: ``context`` (``ssl=``) as given; else the system's
    roots as httpx reads them (certifi's, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``) when
    ``verify`` is True, a CA bundle (file or directory) when it is a path, no
    verification when False; with ``cert`` (a PEM file holding the certificate and its
    key, or ``(certificate, key)``) as the client's certificate."""
    if context is not None:
        if not isinstance(context, ssl.SSLContext):
            raise ValidationError("ssl", context, "must be an ssl.SSLContext")
        if verify is not True or cert is not None:
            raise ValidationError("ssl", context, "is given: leave verify and cert out")
        return context
    if verify is True:
        built = httpx.create_ssl_context()
    elif verify is False:
        built = ssl.create_default_context()
        built.check_hostname = False
        built.verify_mode = ssl.CERT_NONE
    elif isinstance(verify, str):
        built = _bundle(verify)
    else:
        raise ValidationError("verify", verify, "must be True, False or a CA bundle's path")
    if cert is not None:
        _load_cert(built, cert)
    return built


def _bundle(path: str) -> ssl.SSLContext:
    """A context trusting the CA certificates of ``path`` (a PEM file or a directory)."""
    where = Path(path)
    try:
        if where.is_dir():
            return ssl.create_default_context(capath=path)
        return ssl.create_default_context(cafile=path)
    except (OSError, ssl.SSLError) as exc:
        raise ValidationError("verify", path, f"is no readable CA bundle ({exc})") from None


def _load_cert(context: ssl.SSLContext, cert: object) -> None:
    if isinstance(cert, str):
        files: tuple[str, str | None] = (cert, None)
    elif isinstance(cert, tuple) and len(cert) == 2 and all(isinstance(p, str) for p in cert):
        files = (cert[0], cert[1])
    else:
        raise ValidationError("cert", cert, "must be a PEM file's path or (certificate, key)")
    try:
        context.load_cert_chain(*files)
    except (OSError, ssl.SSLError) as exc:
        raise ValidationError("cert", cert, f"is no readable certificate and key ({exc})") from None


class ProxyUrl:
    """A proxy: its ``url`` without credentials, and ``auth`` (user, password) or None.
    Its repr never shows the password."""

    __slots__ = ("auth", "url")

    def __init__(self, url: str, field: str = "proxy") -> None:
        check_url(url, field, PROXY_SCHEMES)
        parts = urlsplit(url)
        userinfo, _, host = parts.netloc.rpartition("@")
        self.url = f"{parts.scheme.lower()}://{host}"
        self.auth: tuple[str, str] | None = None
        if userinfo:
            user, _, password = userinfo.partition(":")
            self.auth = (unquote(user), unquote(password))

    def __repr__(self) -> str:
        return f"ProxyUrl({self.url!r})"  # never the credentials

    @property
    def with_auth(self) -> str:
        """The URL with its credentials (for a library that reads them from it)."""
        if self.auth is None:
            return self.url
        scheme, _, host = self.url.partition("://")
        user, password = (quote(part, safe="") for part in self.auth)
        return f"{scheme}://{user}:{password}@{host}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProxyUrl) and (self.url, self.auth) == (other.url, other.auth)

    def __hash__(self) -> int:
        return hash(self.url)


class Proxies:
    """The proxy of each origin: ``explicit`` (``proxy=``) for every one when given; else
    the environment's, read now, for the origin's scheme unless ``NO_PROXY`` lists its
    host. An environment proxy of another scheme (socks5://) is left out with a
    warning: neither transport speaks it."""

    def __init__(self, explicit: ProxyUrl | None) -> None:
        self.explicit = explicit
        self._env: dict[str, ProxyUrl] = {}
        self._chosen: dict[tuple[str, str], ProxyUrl | None] = {}
        if explicit is None:
            found = urllib.request.getproxies()
            for scheme in ("http", "https"):
                value = found.get(scheme) or found.get("all")
                proxy = self._read(scheme, value) if value else None
                if proxy is not None:
                    self._env[scheme] = proxy

    @staticmethod
    def _read(scheme: str, value: str) -> ProxyUrl | None:
        if "://" not in value:
            value = "http://" + value  # "proxy:3128", as curl reads it
        try:
            return ProxyUrl(value, f"{scheme}_proxy")
        except ValidationError:  # its words would show the URL, credentials and all
            log.warning(
                "the environment's %s proxy is left out: not an http:// or https:// URL", scheme
            )
            return None

    def __call__(self, scheme: str, host: str) -> ProxyUrl | None:
        """The proxy of a request to ``host`` over ``scheme``, or None: direct."""
        if self.explicit is not None:
            return self.explicit
        if not self._env:
            return None
        key = (scheme, host)
        try:
            return self._chosen[key]
        except KeyError:
            proxy = self._env.get(scheme)
            if proxy is not None and urllib.request.proxy_bypass(host):
                proxy = None
            self._chosen[key] = proxy
            return proxy
