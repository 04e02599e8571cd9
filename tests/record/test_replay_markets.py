"""A replayed market is checked as the API's before it is served, and then answered as
the sandbox's own (issue #42): a market whose token ids were ``"abc"`` was served, and
every ``POST /orders`` on it answered 500."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from clobkit.errors import ValidationError
from clobkit.record import BOOK, RecordedEvent, RecordedMarket, RecordingWriter
from clobkit.sandbox.replay import Replay, attach

from ..sandbox.signed import SignedClient
from .conftest import config, sandbox_module

T0 = 1_764_547_200_000_000_000  # ns
MARKET_ID = "00000000-0000-4000-8000-0000000000d1"
TOKEN_A = str(2**255 + 12345)
TOKEN_B = str(2**255 + 67890)
BOOK_DATA = {
    "bids": [{"price": "0.45", "size": "90"}, {"price": "0.44", "size": "44"}],
    "asks": [{"price": "0.55", "size": "110"}],
}


def _record(
    directory: Path, market: RecordedMarket, events: list[RecordedEvent] | None = None
) -> None:
    writer = RecordingWriter(directory, [market])
    writer.events = events or []
    writer.write_markets()
    writer.add(BOOK, market.token_id_a, BOOK_DATA, T0)
    writer.add(BOOK, market.token_id_a, BOOK_DATA, T0 + 10**9)
    asyncio.run(writer.flush())


@pytest.mark.parametrize(
    ("tokens", "named"),
    [
        (("abc", TOKEN_B), "token_id_a"),
        ((TOKEN_A, "abd"), "token_id_b"),
        (("007", TOKEN_B), "token_id_a"),  # token 7, written otherwise
        (("-1", TOKEN_B), "token_id_a"),
        (("1.5", TOKEN_B), "token_id_a"),
        (("", TOKEN_B), "token_id_a"),
        ((" 12", TOKEN_B), "token_id_a"),
        (("\u0661\u0662", TOKEN_B), "token_id_a"),  # Arabic-Indic digits: isdigit() takes them
        ((str(2**256), TOKEN_B), "token_id_a"),  # past uint256
        ((TOKEN_A, TOKEN_A), "token_id_b"),  # one token for both outcomes
    ],
)
def test_a_token_id_that_is_not_the_apis_is_refused(
    tmp_path: Path, tokens: tuple[str, str], named: str
) -> None:
    market = RecordedMarket(MARKET_ID, None, "Q", *tokens)
    writer = RecordingWriter(tmp_path, [market])
    writer.write_markets()
    engine = sandbox_module.Engine(config())
    with pytest.raises(ValidationError) as info:
        Replay(engine, tmp_path)
    assert str(info.value).startswith(f"{named}: ")
    assert MARKET_ID not in engine.markets


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"min_order_size": "1e999999999"}, "min_order_size"),  # decimal.Overflow escaped
        ({"min_order_size": "-1"}, "min_order_size"),
        ({"min_order_size": "50000.5"}, "min_order_size"),  # past one order's maximum
    ],
)
def test_a_market_term_out_of_range_is_refused(
    tmp_path: Path, change: dict[str, Any], named: str
) -> None:
    market = RecordedMarket(MARKET_ID, None, "Q", TOKEN_A, TOKEN_B)._replace(**change)
    RecordingWriter(tmp_path, [market]).write_markets()
    with pytest.raises(ValidationError, match=f"^{named}: must be a number in"):
        Replay(sandbox_module.Engine(config()), tmp_path)


@pytest.mark.parametrize("field", ["start_time_ms", "end_date_ms"])
@pytest.mark.parametrize("value", [-1, 253_402_300_800_000, 10**30])
def test_an_event_time_no_date_can_show_is_refused(tmp_path: Path, field: str, value: int) -> None:
    # a time past the year 9999 was served, and every route showing the event answered 500
    event_id = "00000000-0000-4000-8000-0000000000e1"
    market = RecordedMarket(MARKET_ID, event_id, "Q", TOKEN_A, TOKEN_B)
    times: dict[str, Any] = {field: value}
    _record(tmp_path, market, [RecordedEvent(event_id, "T", **times)])
    with pytest.raises(ValidationError, match=f"^{field}: must be a whole number in"):
        Replay(sandbox_module.Engine(config()), tmp_path)


def _orders(market_id: str, token_a: str, token_b: str, fee: int) -> list[dict[str, Any]]:
    """Orders of every kind the API takes, good and bad, on one market (whatever its
    book: a FOK depends on it)."""
    limit = {"market_id": market_id, "side": "BUY", "outcome": "a", "order_type": "GTC"}
    raw = {
        "market_id": market_id,
        "outcome": "a",
        "token_id": token_a,
        "maker_amount": "5000000",
        "taker_amount": "50000000",
        "side": 0,
        "fee_rate_bps": fee,
        "order_type": "GTC",
        "salt": "4242",
    }
    return [
        {**limit, "token_option": "yes", "limit_price": "0.10", "amount": "5"},
        {**limit, "token_option": "yes", "limit_price": "0.105", "amount": "5"},
        {**limit, "token_option": "yes", "limit_price": "1.00", "amount": "5"},
        {**limit, "token_option": "yes", "limit_price": "0.10", "amount": "0"},
        {**limit, "outcome": "c", "token_option": "yes", "limit_price": "0.10", "amount": "5"},
        raw,
        {**raw, "token_id": token_b},  # the other outcome's token
        {**raw, "token_id": "abc"},
        {**raw, "token_id": str(2**256)},
        {**raw, "outcome": "b", "token_id": token_b, "salt": "4243"},
    ]


def test_orders_on_a_replayed_market_are_answered_as_on_the_sandboxs_own(tmp_path: Path) -> None:
    _record(tmp_path, RecordedMarket(MARKET_ID, None, "Q", TOKEN_A, TOKEN_B))
    with sandbox_module.serve_in_thread(config()) as sb:
        own = min((m for m in sb.engine.markets.values() if m.mid and m.active), key=lambda m: m.id)
        attach(sb, Replay(sb.engine, tmp_path))
        answers: dict[str, list[int]] = {}
        with SignedClient(sb.base_url, sb.users[0]) as c:
            for name, (market_id, a, b) in {
                "own": (own.id, own.fx.token_id_a, own.fx.token_id_b),
                "replayed": (MARKET_ID, TOKEN_A, TOKEN_B),
            }.items():
                statuses = []
                for body in _orders(market_id, a, b, sb.engine.fee_rate(a) or 0):
                    path = "/orders/raw" if "token_id" in body else "/orders"
                    r = c.post(path, body)
                    assert r.headers["content-type"].startswith("application/json")
                    statuses.append(r.status_code)
                answers[name] = statuses
        invariants = httpx.get(f"{sb.base_url}/admin/invariants").json()
    assert all(s < 500 for s in answers["replayed"]), answers
    assert answers["replayed"] == answers["own"], answers
    assert 201 in answers["replayed"]
    assert invariants["data"]["violations"] == []
