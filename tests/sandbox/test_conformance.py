"""The sandbox against the API text, where an audit found them apart (api-reference.md sections).

Each test names the section whose words it checks; the sandbox answers over
loopback, signed as a client would sign.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from clobkit import RequestSigner, new_salt
from clobkit.sandbox import Sandbox

from ..conftest import loopback_http
from .conftest import TRADER, book_market
from .signed import PREFIX, SignedClient, dumps, loads


def _post(sb: Sandbox, path: str, body: Any, content_type: str | None) -> httpx.Response:
    """A signed POST whose Content-Type header is ``content_type`` (None: no such header)."""
    user = sb.user(TRADER)
    content = dumps(body)
    headers = RequestSigner(user.api_key, user.api_secret).headers("POST", PREFIX + path, content)
    if content_type is not None:
        headers["Content-Type"] = content_type
    with loopback_http(base_url=sb.base_url, timeout=30) as http:
        return http.post(PREFIX + path, content=content, headers=headers)


def _fok(sb: Sandbox) -> dict[str, Any]:
    m = book_market(sb.engine)
    return {"market_id": m.id, "outcome": "a", "amount": 2}


def _raw(sb: Sandbox, **fields: Any) -> dict[str, Any]:
    """A valid raw GTC BUY of outcome a at 0.02 (rests below the house's bids)."""
    m = book_market(sb.engine)
    body = {
        "market_id": m.id,
        "outcome": "a",
        "token_id": m.fx.token_id_a,
        "maker_amount": "2000000",
        "taker_amount": "100000000",
        "side": 0,
        "fee_rate_bps": m.fx.fee_rate_bps,
        "order_type": "GTC",
    }
    body.update(fields)
    return body


# -- section 5, Headers: Content-Type application/json on requests with a body ---------


@pytest.mark.parametrize("path", ["/orders", "/orders/raw"])
def test_a_body_without_content_type_is_refused(sb: Sandbox, path: str) -> None:
    """api-reference.md 5 (Headers, all required): a body needs Content-Type application/json;
    7: a malformed request on place order is 400 ``invalid request body``."""
    body = _fok(sb) if path == "/orders" else _raw(sb)
    r = _post(sb, path, body, None)
    assert r.status_code == 400, r.text
    payload = loads(r.content)
    assert payload["success"] is False
    assert payload["error"] == "invalid request body"
    assert "Content-Type" in payload["detail"]


@pytest.mark.parametrize("kind", ["application/jsonx", "text/json", "application/x-json", ""])
def test_a_content_type_other_than_application_json_is_refused(sb: Sandbox, kind: str) -> None:
    """api-reference.md 5: the value is ``application/json``, not any type naming json."""
    r = _post(sb, "/orders", _fok(sb), kind)
    assert r.status_code == 400, r.text
    assert loads(r.content)["error"] == "invalid request body"


@pytest.mark.parametrize(
    "kind", ["application/json", "Application/JSON", "application/json; charset=utf-8"]
)
def test_application_json_with_parameters_is_accepted(sb: Sandbox, kind: str) -> None:
    """api-reference.md 5: the media type is what counts (case-insensitive, RFC 9110 8.3.1)."""
    r = _post(sb, "/orders", _fok(sb), kind)
    assert r.status_code == 201, r.text


# -- section 4.8: the raw order's string fields -----------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("salt", 5, "ORDER_INVALID_SALT"),
        ("nonce", 0, None),
        ("expiration", 0, None),
        ("token_id", "int", None),
    ],
)
def test_raw_order_string_fields_refuse_json_numbers(
    sb: Sandbox, client: SignedClient, field: str, value: Any, code: str | None
) -> None:
    """api-reference.md 4.8: token_id, salt, nonce and expiration are strings (as the
    amounts are); a JSON number is a malformed body, 400 ``invalid request body``."""
    body = _raw(sb)
    if value == "int":
        value = int(body["token_id"])
    r = client.post("/orders/raw", _raw(sb, **{field: value}))
    assert r.status_code == 400, r.text
    payload = loads(r.content)
    assert payload["error"] == "invalid request body"
    assert payload.get("code") == code
    assert field in payload["detail"]


def test_raw_order_string_fields_as_strings_are_accepted(sb: Sandbox, client: SignedClient) -> None:
    """api-reference.md 4.8: the same fields, as the text types them, place the order."""
    r = client.post("/orders/raw", _raw(sb, salt=str(new_salt()), nonce="0", expiration="0"))
    assert r.status_code == 201, r.text
