"""A tiny signed HTTP helper for the sandbox tests (the real client lives in clobkit.client)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

import httpx

from clobkit import RequestSigner
from clobkit.sandbox import UserConfig

from ..conftest import loopback_http

PREFIX = "/api/ext/v1"


def loads(text: str | bytes) -> Any:
    """JSON with exact decimals."""
    return json.loads(text, parse_float=Decimal)


def dumps(body: Any) -> bytes:
    return json.dumps(body, default=str).encode()


class SignedClient:
    """Signs each request with ``RequestSigner`` and sends it with httpx."""

    def __init__(self, base_url: str, user: UserConfig, *, sign_query: bool = True) -> None:
        self.user = user
        self.signer = RequestSigner(user.api_key, user.api_secret, sign_query=sign_query)
        self.http = loopback_http(base_url=base_url, timeout=30)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> SignedClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: dict[str, Any] | None = None,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
        sign_path: str | None = None,
        **signer_kw: Any,
    ) -> httpx.Response:
        url = PREFIX + path + (("?" + urlencode(params)) if params else "")
        content = raw if raw is not None else (b"" if body is None else dumps(body))
        h = self.signer.headers(method, sign_path or url, content, **signer_kw)
        if content:
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        return self.http.request(method, url, content=content, headers=h)

    def get(self, path: str, **params: Any) -> httpx.Response:
        return self.request("GET", path, params=params or None)

    def post(self, path: str, body: Any) -> httpx.Response:
        return self.request("POST", path, body)

    def delete(self, path: str) -> httpx.Response:
        return self.request("DELETE", path)

    def data(
        self, method: str, path: str, body: Any = None, *, expect: int = 200, **params: Any
    ) -> Any:
        """The ``data`` of a successful answer (asserting status and envelope)."""
        r = self.request(method, path, body, params=params or None)
        payload = loads(r.content)
        assert r.status_code == expect, (r.status_code, payload)
        assert payload["success"] is True, payload
        assert set(payload) == {"success", "data"}, payload
        return payload["data"]

    def fail(self, r: httpx.Response) -> dict[str, Any]:
        payload: dict[str, Any] = loads(r.content)
        assert payload["success"] is False, payload
        return payload

    def place(self, body: dict[str, Any]) -> str:
        return str(self.data("POST", "/orders", body, expect=201)["order_id"])

    def order(self, order_id: str) -> dict[str, Any]:
        return dict(self.data("GET", f"/orders/{order_id}")["order"])
