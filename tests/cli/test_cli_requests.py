"""``clobkit sign`` and ``clobkit call`` against a sandbox on loopback."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from clobkit import OrderHasher, limit_amounts, new_salt, verify_signature
from clobkit.sandbox import Sandbox

from .conftest import (
    READER_KEY,
    READER_SECRET,
    TRADER_KEY,
    TRADER_SECRET,
    Result,
    one_line_error,
)


def headers_of(out: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in out.strip().splitlines())


def market_of(sandbox: Sandbox) -> dict[str, object]:
    """A market with a book (the first upcoming nba game), as the engine sees it."""
    from clobkit import Client

    with Client(sandbox.base_url, TRADER_KEY, TRADER_SECRET) as client:
        events = client.list_events(league="nba").events
        event = next(e for e in events if not (e.live or e.ended or e.is_future))
        market = client.get_market(client.get_event_markets(event.id)[0].id)
        book = client.get_orderbook(market.token_id_a or "")
        return {"market": market, "bid": book.best_bid, "wallet": client.get_wallet()}


@pytest.mark.parametrize(
    ("method", "path", "signed"),
    [
        ("GET", "/api/ext/v1/wallet", "/api/ext/v1/wallet"),
        ("get", "/wallet", "/api/ext/v1/wallet"),
        ("GET", "events?league=nba&limit=2", "/api/ext/v1/events?league=nba&limit=2"),
        ("GET", "/markets?q=Lakers Warriors", "/api/ext/v1/markets?q=Lakers%20Warriors"),
    ],
)
def test_sign_prints_four_verifiable_headers(
    cli: Callable[..., Result], env: dict[str, str], method: str, path: str, signed: str
) -> None:
    result = cli("sign", method, path)
    assert result.code == 0
    headers = headers_of(result.out)
    assert list(headers) == ["X-API-KEY", "X-API-TIMESTAMP", "X-API-NONCE", "X-API-SIGNATURE"]
    assert headers["X-API-KEY"] == TRADER_KEY
    assert verify_signature(
        TRADER_SECRET,
        method.upper(),
        signed,
        headers["X-API-TIMESTAMP"],
        headers["X-API-NONCE"],
        b"",
        headers["X-API-SIGNATURE"],
    )


def test_sign_bare_path_and_body(cli: Callable[..., Result], tmp_path: Path) -> None:
    body = tmp_path / "body.json"
    body.write_bytes(b'{"market_id": "m", "amount": 5}')
    result = cli(
        "sign", "POST", "/orders?x=1", "--body", f"@{body}", "--sign-bare-path",
        "--api-key", "k", "--api-secret", "s",
    )  # fmt: skip
    assert result.code == 0
    headers = headers_of(result.out)
    assert headers["Content-Type"] == "application/json"
    assert verify_signature(
        "s",
        "POST",
        "/api/ext/v1/orders",
        headers["X-API-TIMESTAMP"],
        headers["X-API-NONCE"],
        body.read_bytes(),
        headers["X-API-SIGNATURE"],
    )


def test_flags_override_the_environment(
    cli: Callable[..., Result], env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    result = cli("sign", "GET", "/wallet", "--api-key", "other", "--api-secret", "other-secret")
    headers = headers_of(result.out)
    assert headers["X-API-KEY"] == "other"
    assert verify_signature(
        "other-secret",
        "GET",
        "/api/ext/v1/wallet",
        headers["X-API-TIMESTAMP"],
        headers["X-API-NONCE"],
        b"",
        headers["X-API-SIGNATURE"],
    )


def curl_argv(out: str) -> list[str]:
    return shlex.split(out.replace("\\\n", " "))


def test_sign_curl_is_a_ready_command(cli: Callable[..., Result], env: dict[str, str]) -> None:
    result = cli("sign", "GET", "/events?league=nba&limit=1", "--curl")
    assert result.code == 0
    argv = curl_argv(result.out)
    assert argv[:5] == [
        "curl",
        "-sS",
        "-X",
        "GET",
        env["CLOBKIT_BASE_URL"] + "/api/ext/v1/events?league=nba&limit=1",
    ]
    assert argv.count("-H") == 4
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    envelope = json.loads(done.stdout)
    assert envelope["success"] is True
    assert len(envelope["data"]["events"]) == 1


def test_sign_curl_with_body_posts_it(
    cli: Callable[..., Result], env: dict[str, str], sandbox: Sandbox
) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    info = market_of(sandbox)
    body = json.dumps(
        {
            "market_id": info["market"].id,  # type: ignore[attr-defined]
            "outcome": "a",
            "amount": 2,
            "order_type": "GTC",
            "limit_price": 0.05,
            "token_option": "yes",
        }
    )
    result = cli("sign", "POST", "/orders", "--body", body, "--curl")
    argv = curl_argv(result.out)
    assert argv[-2:] == ["--data-binary", body]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    envelope = json.loads(done.stdout)
    assert envelope["success"] is True, envelope
    assert cli("call", "DELETE", f"/orders/{envelope['data']['order_id']}").code == 0


def test_sign_curl_sends_a_body_file_byte_for_byte(
    cli: Callable[..., Result], env: dict[str, str], tmp_path: Path
) -> None:
    body = tmp_path / "body.json"
    body.write_bytes(b'{"x": "\xff"}')
    argv = curl_argv(cli("sign", "POST", "/orders", "--body", f"@{body}", "--curl").out)
    assert argv[-2:] == ["--data-binary", f"@{body}"]


def test_sign_curl_needs_a_base_url(cli: Callable[..., Result]) -> None:
    result = cli("sign", "GET", "/wallet", "--curl", "--api-key", "k", "--api-secret", "s")
    assert result.code == 2
    assert "CLOBKIT_BASE_URL" in one_line_error(result.err)


def test_call_get_prints_the_envelope(cli: Callable[..., Result], env: dict[str, str]) -> None:
    result = cli("call", "GET", "/wallet")
    assert result.code == 0
    assert result.err == ""
    envelope = json.loads(result.out)
    assert envelope["success"] is True
    assert envelope["data"]["chain_id"] == 137
    assert result.out.startswith("{\n  ")  # pretty-printed


@pytest.mark.parametrize("suffix", ["/api/ext/v1", "/api/ext/v1/"])
def test_a_base_url_ending_in_the_api_path_reaches_the_api(
    cli: Callable[..., Result], env: dict[str, str], sandbox: Sandbox, suffix: str
) -> None:
    # the sandbox's banner prints "API http://127.0.0.1:PORT/api/ext/v1": copied
    # into CLOBKIT_BASE_URL it once gave a bare 404 (/api/ext/v1/api/ext/v1/...)
    url = sandbox.base_url + suffix
    result = cli("call", "GET", "/wallet", "--base-url", url)
    assert result.code == 0, result.err
    assert json.loads(result.out)["data"]["chain_id"] == 137
    from clobkit import Client

    with Client(url, TRADER_KEY, TRADER_SECRET) as client:
        assert client.get_wallet().chain_id == 137


def test_call_query_string_is_signed_as_sent(
    cli: Callable[..., Result], env: dict[str, str]
) -> None:
    result = cli("call", "GET", "/markets?q=Lakers Warriors&limit=2")
    assert result.code == 0, result.err
    assert json.loads(result.out)["data"]["count"] <= 2


def test_call_raw_order_and_its_precomputed_id(
    cli: Callable[..., Result], env: dict[str, str], sandbox: Sandbox, tmp_path: Path
) -> None:
    """The saved wallet envelope feeds order-ids; the service stores the same id."""
    wallet = tmp_path / "wallet.json"
    saved = cli("call", "GET", "/wallet")
    wallet.write_text(saved.out)
    info = market_of(sandbox)
    market = info["market"]
    price = info["bid"] - 3 * __import__("decimal").Decimal("0.01")
    amounts = limit_amounts("BUY", price, 10)
    salt = new_salt()
    body = {
        "market_id": market.id,  # type: ignore[attr-defined]
        "outcome": "a",
        "token_id": market.token_id_a,  # type: ignore[attr-defined]
        "maker_amount": str(amounts.maker_amount),
        "taker_amount": str(amounts.taker_amount),
        "side": 0,
        "fee_rate_bps": 0,
        "order_type": "GTC",
        "salt": str(salt),
    }
    placed = cli("call", "POST", "/orders/raw", "--json", json.dumps(body))
    assert placed.code == 0, placed.err
    order_id = json.loads(placed.out)["data"]["order_id"]
    detail = json.loads(cli("call", "GET", f"/orders/{order_id}").out)
    expected = OrderHasher(json.loads(wallet.read_text())["data"]).order_id(
        token_id=market.token_id_a,  # type: ignore[attr-defined]
        maker_amount=amounts.maker_amount,
        taker_amount=amounts.taker_amount,
        side=0,
        salt=salt,
        neg_risk=bool(market.neg_risk),  # type: ignore[attr-defined]
    )
    assert detail["data"]["order"]["clob_order_id"] == expected
    # the same order through order-ids, with the saved envelope as the wallet
    src, dst = tmp_path / "orders.csv", tmp_path / "ids.csv"
    src.write_text(
        "token_id,maker_amount,taker_amount,side,salt\n"
        f"{market.token_id_a},{amounts.maker_amount},{amounts.taker_amount},BUY,{salt}\n"  # type: ignore[attr-defined]
    )
    assert cli("order-ids", "--wallet", str(wallet), str(src), str(dst)).code == 0
    assert dst.read_text().splitlines()[1].endswith("," + expected)
    cancelled = cli("call", "DELETE", f"/orders/{order_id}")
    assert json.loads(cancelled.out)["data"]["status"] == "cancelled"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["GET", "/orders/00000000-0000-4000-8000-00000000dead"], "404 ORDER_NOT_FOUND: order not"),
        (["GET", "/orderbooks/123"], "200: Order book not found"),
        (["GET", "/no-such-route"], "404: not found"),
        (["POST", "/orders", "--json", '{"market_id": 1}'], "400: invalid request body"),
    ],
)
def test_call_failures_print_the_envelope_and_exit_1(
    cli: Callable[..., Result], env: dict[str, str], argv: list[str], message: str
) -> None:
    result = cli("call", *argv)
    assert result.code == 1
    assert json.loads(result.out)["success"] is False
    assert message in one_line_error(result.err)


def test_call_scope_and_credentials(
    cli: Callable[..., Result], env: dict[str, str], sandbox: Sandbox
) -> None:
    reader = ["--api-key", READER_KEY, "--api-secret", READER_SECRET]
    denied = cli("call", "POST", "/orders", "--json", "{}", *reader)
    assert denied.code == 1
    assert "403: forbidden: missing scope orders:write" in one_line_error(denied.err)
    wrong = cli("call", "GET", "/wallet", "--api-secret", "wrong")
    assert wrong.code == 1
    assert "401: unauthorized" in one_line_error(wrong.err)
    assert "wrong" not in wrong.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["call", "GET", "/wallet"], "CLOBKIT_BASE_URL"),
        (["call", "GET", "/wallet", "--base-url", "ftp://x"], "http(s)"),
        (["call", "POST", "/orders", "--json", "{bad", "--base-url", "http://x"], "not valid JSON"),
        (
            ["call", "POST", "/orders", "--json", "@/no/such/file", "--base-url", "http://x"],
            "cannot read",
        ),
        (["call", "G T", "/wallet", "--base-url", "http://x"], "METHOD"),
        (["sign", "GET", "/wallet", "--api-key", "k"], "CLOBKIT_API_SECRET"),
        (["sign", "GET", "/wallet", "--api-key", "k y", "--api-secret", "s"], "api_key"),
    ],
)
def test_request_usage_errors(
    cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch, argv: list[str], message: str
) -> None:
    monkeypatch.setenv("CLOBKIT_API_KEY", "k")
    monkeypatch.setenv("CLOBKIT_API_SECRET", "s")
    if "--api-key" in argv:
        monkeypatch.delenv("CLOBKIT_API_SECRET")
        if "--api-secret" in argv:
            monkeypatch.setenv("CLOBKIT_API_SECRET", "s")
    result = cli(*argv)
    assert result.code == 2, result
    assert message in one_line_error(result.err)


def test_call_unreachable_service_is_one_line(
    cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    result = cli(
        "call", "GET", "/wallet", "--base-url", f"http://127.0.0.1:{port}",
        "--api-key", "k", "--api-secret", "s", "--timeout", "5",
    )  # fmt: skip
    assert result.code == 1
    assert "ConnectError" in one_line_error(result.err)
