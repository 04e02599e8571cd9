"""Fuzzing the client's response decoder and the CLI's readers with arbitrary bytes.

Any exception that is not a ``ClobkitError`` (client) or any traceback / exit
code outside 0, 1, 2 (CLI), or an example running past its time bound, fails.
The number of examples per test is ``CLOBKIT_FUZZ_EXAMPLES`` (default 100,
which keeps this file well under a minute); set it higher for a longer run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clobkit.cli import main
from clobkit.client._config import ClientConfig
from clobkit.client._core import ClientCore
from clobkit.client._ops import Gather, Send, Sleep
from clobkit.client._validate import RawOrderSpec
from clobkit.client._wire import Outgoing
from clobkit.errors import ClobkitError

pytestmark = pytest.mark.slow  # minutes of fuzzing; CI runs it, the fast loop does not

EXAMPLES = int(os.environ.get("CLOBKIT_FUZZ_EXAMPLES", "100"))
BOUND = 10.0  # seconds one example may take before it counts as a hang
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,  # the alarm below bounds an example; timing noise is no failure
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

WALLET = {
    "maker": "0x" + "11" * 20,
    "signer": "0x" + "22" * 20,
    "signature_type": 2,
    "chain_id": 137,
    "ctf_exchange": "0x" + "33" * 20,
    "neg_risk_exchange": "0x" + "44" * 20,
}


@contextlib.contextmanager
def bounded(seconds: float = BOUND) -> Iterator[None]:
    """Fail (instead of hanging) when the block runs longer than ``seconds``."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield  # pragma: no cover - the alarm needs the main thread
        return

    def hang(signum: int, frame: Any) -> None:
        raise AssertionError(f"an example ran past {seconds} s: a hang")

    old = signal.signal(signal.SIGALRM, hang)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# ---------------------------------------------------------------------------
# JSON-ish bodies: arbitrary bytes, and JSON built to get past the first checks

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["", "0", "1e999", "0x12", "2024-01-01T00:00:00Z", "live", "BUY"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.one_of(
                st.text(max_size=8),
                st.sampled_from(
                    [
                        "id",
                        "data",
                        "events",
                        "markets",
                        "orders",
                        "positions",
                        "market",
                        "event",
                        "order",
                        "token_id_a",
                        "bids",
                        "asks",
                        "status",
                        "created_at",
                        "pagination",
                        "total_count",
                        "base_fee",
                        "price",
                        "size",
                        "maker",
                        "signer",
                    ]
                ),
            ),
            inner,
            max_size=5,
        ),
    ),
    max_leaves=25,
)


def _deep(depth: int) -> bytes:
    return b'{"success": true, "data": ' + b"[" * depth + b"]" * depth + b"}"


envelopes = st.one_of(
    st.builds(lambda d: {"success": True, "data": d}, json_values),
    st.builds(
        lambda s, e, c, d: {"success": s, "error": e, "code": c, "detail": d},
        st.booleans(),
        json_values,
        json_values,
        json_values,
    ),
    json_values,
)
bodies = st.one_of(
    st.binary(max_size=300),
    envelopes.map(lambda v: json.dumps(v).encode()),
    st.sampled_from([_deep(5_000), _deep(100_000), b"\xff\xfe", b"null", b"[]", b"{}"]),
)
statuses = st.sampled_from([200, 200, 200, 201, 204, 301, 400, 401, 403, 404, 429, 500, 503])


# every operation of the client, each decoding its own endpoint's answer
OPERATIONS: dict[str, Callable[[ClientCore], Any]] = {
    "list_events": lambda c: c.list_events({"limit": 5}),
    "get_event": lambda c: c.get_event("e1"),
    "get_event_markets": lambda c: c.get_event_markets("e1"),
    "search_markets": lambda c: c.search_markets("q", 5),
    "get_market": lambda c: c.get_market("m1"),
    "get_orderbook": lambda c: c.get_orderbook("1"),
    "list_orders": lambda c: c.list_orders(None, 1, 20),
    "get_order": lambda c: c.get_order("o1"),
    "get_wallet": lambda c: c.get_wallet(),
    "list_positions": lambda c: c.list_positions(1, 10),
    "list_portfolio_orders": lambda c: c.list_portfolio_orders(None, 1, 10),
    "cancel_order": lambda c: c.cancel_order("o1"),
    "all_orders": lambda c: c.all_orders(None, 10),
    "fee_rate": lambda c: c.fee_rate("1"),
    "market_info": lambda c: c.market_info("m1"),
    "place_order": lambda c: c.place_order("m1", side="BUY", outcome="a", amount=5),
    "place_raw_order": lambda c: c.place_raw_order(
        RawOrderSpec(market_id="m1", outcome="a", side="BUY", price="0.5", size=10)
    ),
}


def drive(op: Any, answer: Callable[[Outgoing], httpx.Response], sends: list[int]) -> Any:
    """Run an operation by hand, answering every request with ``answer``."""
    effect = op.send(None)
    while True:
        if isinstance(effect, Send):
            sends[0] += 1
            assert sends[0] < 200, "an operation kept sending"
            result: Any = answer(effect.request)
        elif isinstance(effect, Sleep):
            result = None
        else:
            assert isinstance(effect, Gather)
            result = [drive(sub, answer, sends) for sub in effect.operations]
        try:
            effect = op.send(result)
        except StopIteration as stop:
            return stop.value


def core() -> ClientCore:
    config, signer = ClientConfig.resolve(
        "http://api.test", "key", "secret", max_retries=1, backoff=0.0, backoff_cap=0.0
    )
    return ClientCore(config, signer)


@pytest.mark.parametrize("name", list(OPERATIONS))
@FUZZ
@given(first=st.tuples(statuses, bodies), later=st.tuples(statuses, bodies))
def test_client_decoder(name: str, first: tuple[int, bytes], later: tuple[int, bytes]) -> None:
    answers = [first]

    def answer(request: Outgoing) -> httpx.Response:
        status, body = answers.pop() if answers else later
        return httpx.Response(status, content=body)

    with bounded(), contextlib.suppress(ClobkitError):
        drive(OPERATIONS[name](core()), answer, [0])


# ---------------------------------------------------------------------------
# The CLI's readers

FIELDS = [
    "token_id",
    "maker_amount",
    "taker_amount",
    "side",
    "salt",
    "fee_rate_bps",
    "nonce",
    "expiration",
    "neg_risk",
    "order_id",
    "note",
]
cells = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "0",
            "1",
            "BUY",
            "sell",
            "true",
            "",
            '"',
            "10000000",
            "999999999999999",
            "-1",
            "0x10",
            "1e3",
            " 5 ",
            "\udcff"[:0] + "٣",
        ]
    ),
    st.integers(0, 2**256).map(str),
)
csv_texts = st.builds(
    lambda header, rows: ",".join(header) + "\n" + "".join(",".join(r) + "\n" for r in rows),
    st.lists(st.sampled_from(FIELDS), min_size=0, max_size=10),
    st.lists(st.lists(cells, max_size=11), max_size=6),
)
jsonl_values = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {
            "token_id": cells,
            "maker_amount": cells,
            "taker_amount": cells,
            "side": cells,
            "salt": cells,
        },
        optional={"neg_risk": json_values, "nonce": json_values, "order_id": json_values},
    ),
)
jsonl_texts = st.lists(
    st.one_of(jsonl_values.map(json.dumps), st.text(max_size=30), st.just("[" * 3000)),
    max_size=6,
).map(lambda lines: "\n".join(lines))


def run_cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with bounded(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    text = err.getvalue()
    assert code in (0, 1, 2), text
    assert "Traceback" not in text
    return code, text


def order_ids(input_bytes: bytes, fmt: str, wallet_bytes: bytes | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src, dst, wallet = Path(tmp, f"in.{fmt}"), Path(tmp, f"out.{fmt}"), Path(tmp, "w.json")
        src.write_bytes(input_bytes)
        wallet.write_bytes(json.dumps(WALLET).encode() if wallet_bytes is None else wallet_bytes)
        code, err = run_cli("order-ids", "--wallet", str(wallet), str(src), str(dst))
        if code == 0:
            assert dst.exists()
        if code == 1:  # rows were refused: each is named by its line
            assert "line " in err


@FUZZ
@given(data=st.one_of(st.binary(max_size=400), csv_texts.map(str.encode)))
def test_order_ids_csv(data: bytes) -> None:
    order_ids(data, "csv")


@FUZZ
@given(
    data=st.one_of(
        st.binary(max_size=400), jsonl_texts.map(lambda t: t.encode("utf-8", "surrogatepass"))
    )
)
def test_order_ids_jsonl(data: bytes) -> None:
    order_ids(data, "jsonl")


@FUZZ
@given(
    wallet=st.one_of(
        st.binary(max_size=300),
        json_values.map(lambda v: json.dumps(v).encode()),
        st.dictionaries(st.sampled_from(list(WALLET)), json_values).map(
            lambda d: json.dumps({**WALLET, **d}).encode()
        ),
        st.just(b"[" * 100_000),
    )
)
def test_wallet_loader(wallet: bytes) -> None:
    row = '{"token_id": "1", "maker_amount": 1, "taker_amount": 2, "side": "BUY", "salt": 1}\n'
    order_ids(row.encode(), "jsonl", wallet)
