"""The compiled and pure twins agree on every input: same result or same error."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from decimal import Decimal
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clobkit.errors import ClobkitError, OrderFieldError

from ..conftest import examples

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("clobkit.core._core_c") is None,
    reason="pure-only run (CLOBKIT_NO_EXTENSIONS=1): there is no second twin to compare",
)

py = importlib.import_module("clobkit.core.pure")


def _c() -> Any:
    return importlib.import_module("clobkit.core._core_c")


def outcome(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return ("ok", fn(*args, **kwargs))
    except Exception as exc:  # the class and the message are what must match
        return (type(exc).__name__, str(exc))


def same(
    name: str, *args: Any, attr: str | None = None, obj_args: tuple[Any, ...] = (), **kwargs: Any
) -> None:
    results = []
    for mod in (py, _c()):
        target = getattr(mod, name)
        if attr is not None:
            target = getattr(target(*obj_args), attr)
        results.append(outcome(target, *args, **kwargs))
    assert results[0] == results[1]


numbers = st.one_of(
    st.decimals(allow_nan=True, allow_infinity=True),
    st.floats(),
    st.integers(-(10**90), 10**90),
    st.from_regex(r"[+-]?[0-9]{0,25}(\.[0-9]{0,25})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
    st.text(max_size=12),
    st.sampled_from(
        [None, True, False, b"1", [1], "0.01", "0.5", "0.99", "1e-2", "٣", " 1", "1_0"]
    ),
)
prices = st.one_of(numbers, st.integers(1, 9999).map(lambda t: str(Decimal(t).scaleb(-4))))
ticks = st.one_of(
    st.sampled_from(["0.1", "0.01", "0.001", "0.0001", 0.01, Decimal("0.001"), "0.02", 1]), numbers
)
sides = st.sampled_from(["BUY", "SELL", 0, 1, 2, "buy", None, True, 1.0])


@settings(max_examples=examples(500))
@given(side=sides, price=prices, size=numbers, tick=ticks, round_price=st.booleans())
def test_amounts_agree(side: Any, price: Any, size: Any, tick: Any, round_price: bool) -> None:
    same("limit_amounts", side, price, size, tick, round_price=round_price)
    same("market_amounts", side, price, size, tick, round_price=round_price)


@settings(max_examples=examples(500))
@given(value=numbers)
def test_units_agree(value: Any) -> None:
    same("to_units", value)
    same("from_units", value)


uints = st.one_of(
    st.integers(-(2**300), 2**300),
    st.integers(0, 2**256 - 1).map(str),
    st.text(max_size=90),
    st.from_regex(r"[0-9]{70,90}", fullmatch=True),
    st.sampled_from([None, True, 1.0, b"1", "", "007", "0" * 150 + "1"]),
)
WALLET = {
    "maker": "0x1111111111111111111111111111111111111111",
    "signer": "0x2222222222222222222222222222222222222222",
    "chain_id": 137,
    "signature_type": 2,
    "ctf_exchange": "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E",
    "neg_risk_exchange": "0xC5d563A36AE78145C45a50134d48A1215220f80a",
}


@settings(max_examples=examples(500))
@given(
    token=uints,
    maker=uints,
    taker=uints,
    side=sides,
    salt=uints,
    fee=uints,
    nonce=uints,
    exp=uints,
    neg=st.sampled_from([True, False, 0, 1, 2, None]),
)
def test_order_ids_agree(
    token: Any,
    maker: Any,
    taker: Any,
    side: Any,
    salt: Any,
    fee: Any,
    nonce: Any,
    exp: Any,
    neg: Any,
) -> None:
    kwargs = {
        "token_id": token,
        "maker_amount": maker,
        "taker_amount": taker,
        "side": side,
        "salt": salt,
        "fee_rate_bps": fee,
        "nonce": nonce,
        "expiration": exp,
        "neg_risk": neg,
    }
    same("OrderHasher", attr="order_id", obj_args=(WALLET,), **kwargs)
    batch = {
        "token_ids": [token, "1"],
        "maker_amounts": (1, maker),
        "taker_amounts": taker,
        "sides": [0, side],
        "salts": [salt, salt],
        "fee_rate_bps": fee,
        "nonces": [nonce, 0],
        "expirations": exp,
        "neg_risk": neg,
    }
    same("OrderHasher", attr="order_ids", obj_args=(WALLET,), **batch)


@settings(max_examples=examples(500))
@given(
    wallet=st.fixed_dictionaries(
        {
            k: st.one_of(st.just(v), st.text(max_size=44), st.integers(-1, 300))
            for k, v in WALLET.items()
        }
    )
)
def test_wallets_agree(wallet: dict[str, Any]) -> None:
    results = [outcome(lambda m=m: repr(m.OrderHasher(wallet))) for m in (py, _c())]
    assert results[0] == results[1]


WALLET_V2 = WALLET | {
    "ctf_exchange": "0xE111180000d2663C0091e4f400237545B87B996B",
    "neg_risk_exchange": "0xe2222d279d744050d28e00520010520000310F59",
}
words = st.one_of(
    st.none(),
    st.binary(min_size=30, max_size=34),
    st.binary(min_size=32, max_size=32).map(lambda b: "0x" + b.hex()),
    st.text(alphabet="0123456789abcdefABCDEFxX g", min_size=64, max_size=67),
    st.sampled_from([0, 1.0, True, [0] * 32, bytearray(32), "0x", "0X" + "F" * 64, b"1"]),
)
UNSET = py.UNSET
valid_uints = st.one_of(st.integers(0, 2**256 - 1), st.integers(0, 2**256 - 1).map(str))
valid_words = st.one_of(
    st.none(),
    st.binary(min_size=32, max_size=32),
    st.binary(min_size=32, max_size=32).map(lambda b: "0x" + b.hex()),
)
V1_ARGS, V2_ARGS = ("fee_rate_bps", "nonce", "expiration"), ("timestamp", "metadata", "builder")
PLURAL = {
    "fee_rate_bps": "fee_rate_bps",
    "nonce": "nonces",
    "expiration": "expirations",
    "timestamp": "timestamps",
    "metadata": "metadatas",
    "builder": "builders",
}


@settings(max_examples=examples(500))
@given(version=st.sampled_from([1, 2, 3]), data=st.data())
def test_v2_order_ids_agree(version: int, data: st.DataObject) -> None:
    """Every version, with fields of either version given or left out: same id or same error.

    Half the examples are entirely valid (own fields given, the other
    version's left out), so results are compared as often as refusals.
    """
    own, foreign = (V1_ARGS, V2_ARGS) if version == 1 else (V2_ARGS, V1_ARGS)
    clean = data.draw(st.booleans(), label="clean")  # half the examples: every input valid
    optional: dict[str, Any] = {}
    for name in own:
        good = valid_words if name in ("metadata", "builder") else valid_uints
        bad = words if name in ("metadata", "builder") else uints
        optional[name] = data.draw(good if clean else st.one_of(good, bad, st.just(UNSET)))
    for name in foreign:
        anything = words if name in ("metadata", "builder") else uints
        optional[name] = data.draw(
            st.just(UNSET) if clean else st.one_of(st.just(UNSET), anything), label=name
        )
    token = data.draw(valid_uints if clean else uints, label="token")
    side = data.draw(st.sampled_from([0, 1, "SELL", "BUY"]) if clean else sides, label="side")
    neg = data.draw(
        st.booleans() if clean else st.sampled_from([True, False, 0, 1, 2, None]), label="neg"
    )
    kwargs = {"token_id": token, "maker_amount": 1, "taker_amount": 2, "side": side, "salt": 3}
    kwargs |= {k: v for k, v in optional.items() if v is not UNSET} | {"neg_risk": neg}
    for method in ("order_id", "struct_hash"):
        results = [
            outcome(getattr(m.OrderHasher(WALLET_V2, version=version), method), **kwargs)
            for m in (py, _c())
        ]
        assert results[0] == results[1]
    batch = {
        "token_ids": [token, "1"],
        "maker_amounts": 1,
        "taker_amounts": (2, 3),
        "sides": [0, side],
        "salts": 3,
        "neg_risk": neg,
    }
    for k, v in optional.items():
        if v is not UNSET:
            batch[PLURAL[k]] = [v, v] if k in ("timestamp", "metadata", "nonce") else v
    results = [
        outcome(m.OrderHasher(WALLET_V2, version=version).order_ids, **batch) for m in (py, _c())
    ]
    assert results[0] == results[1]


@settings(max_examples=examples(300))
@given(
    ctf=st.sampled_from([WALLET["ctf_exchange"], WALLET_V2["ctf_exchange"], "0x" + "33" * 20]),
    neg=st.sampled_from(
        [WALLET["neg_risk_exchange"], WALLET_V2["neg_risk_exchange"], "0x" + "44" * 20]
    ),
    sig_type=st.integers(-1, 5),
    version=st.sampled_from([None, 1, 2, 3, 0, "2", True]),
)
def test_versions_agree(ctf: str, neg: str, sig_type: int, version: Any) -> None:
    wallet = WALLET | {"ctf_exchange": ctf, "neg_risk_exchange": neg, "signature_type": sig_type}

    def describe(m: Any) -> tuple[Any, ...]:
        h = m.OrderHasher(wallet, version=version)
        return (repr(h), h.version, h.signature_type, h.chain_id, h.maker, h.signer)

    results = [outcome(describe, m) for m in (py, _c())]
    assert results[0] == results[1]


texts = st.one_of(
    st.text(max_size=40), st.sampled_from(["GET", "post", "/api/ext/v1/x?a=1", "", None, 5, b"x"])
)


@settings(max_examples=examples(500))
@given(
    secret=st.one_of(st.text(max_size=20), st.binary(max_size=20), st.none()),
    method=texts,
    path=texts,
    ts=st.one_of(st.integers(-5, 2**70), texts),
    nonce=texts,
    body=st.one_of(st.binary(max_size=100), texts),
)
def test_signing_agrees(
    secret: Any, method: Any, path: Any, ts: Any, nonce: Any, body: Any
) -> None:
    same("signature", secret, method, path, ts, nonce, body)
    same("verify_signature", secret, method, path, ts, nonce, body, "0" * 64)
    # nonce=None draws a fresh random nonce in each twin: pin it for the comparison
    same(
        "RequestSigner",
        method,
        path,
        body,
        attr="headers",
        obj_args=("key", secret or "x"),
        timestamp_ms=ts,
        nonce="pinned-nonce" if nonce is None else nonce,
    )


@settings(max_examples=examples(500))
@given(
    levels=st.lists(st.tuples(prices, numbers), max_size=5),
    side=sides,
    amount=numbers,
    order_type=st.sampled_from(["FOK", "FAK", "GTC", "IOC", None]),
)
def test_market_price_agrees(levels: Any, side: Any, amount: Any, order_type: Any) -> None:
    same("market_price", levels, side, amount, order_type)


# ---------------------------------------------------------------------------
# Subclasses and odd numeric types: the compiled twin's fast paths take exact
# types only, so everything else must fall through to the same verdict.


class Text(str):
    pass


class Shouting(str):
    def upper(self) -> str:  # never consulted: the signed text is the string's own
        return "HACKED"


class Number(int):
    pass


class Blob(bytes):
    pass


def _odd_numbers() -> list[Any]:
    import enum

    class Level(enum.IntEnum):
        ONE = 1
        BIG = 1_700_000_000_000

    values: list[Any] = [True, False, Level.ONE, Level.BIG, Number(5), Decimal(7), 3.0, 2**31]
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is optional
        return values
    return [*values, np.int64(3), np.uint8(2), np.int32(1_700_000)]


def _wrap(value: Any, kind: type) -> Any:
    if isinstance(value, str) and kind in (Text, Shouting):
        return kind(value)
    if isinstance(value, bytes) and kind is Blob:
        return Blob(value)
    if isinstance(value, int) and not isinstance(value, bool) and kind is Number:
        return Number(value)
    return value


GOOD = ("secret", "get", "/api/ext/v1/wallet?x=1", "1700000000000", "ab" * 16, b"{}")


@pytest.mark.parametrize("kind", [Text, Shouting, Number, Blob])
@pytest.mark.parametrize("position", range(6))
def test_signing_agrees_on_subclasses(kind: type, position: int) -> None:
    args = list(GOOD)
    args[position] = _wrap(args[position], kind)
    same("signature", *args)
    sig = py.signature(*GOOD)
    same("verify_signature", *args, sig)
    same("verify_signature", *args, Text(sig))
    same("verify_signature", *args, Shouting(sig))
    same(
        "RequestSigner",
        *args[1:3],
        args[5],
        attr="headers",
        obj_args=("key", args[0]),
        timestamp_ms=args[3],
        nonce=args[4],
    )
    same("RequestSigner", "key", attr="headers_many", obj_args=("key", args[0]))
    # a subclass signs as its plain text: the signature is the one of GOOD
    assert py.signature(*args) == _c().signature(*args) == sig
    assert py.verify_signature(*GOOD, Text(sig)) is True
    assert _c().verify_signature(*GOOD, Text(sig)) is True


@pytest.mark.parametrize("value", _odd_numbers(), ids=repr)
def test_signing_agrees_on_odd_numbers(value: Any) -> None:
    secret, method, path, ts, nonce, body = GOOD
    same("signature", secret, method, path, value, nonce, body)
    same(
        "RequestSigner",
        method,
        path,
        body,
        attr="headers",
        obj_args=("key", secret),
        timestamp_ms=value,
        nonce=nonce,
    )
    same(
        "RequestSigner",
        method,
        path,
        body,
        attr="headers",
        obj_args=("key", secret),
        timestamp_ms=ts,
        nonce=value,
    )
    results = [
        outcome(lambda mod: repr(mod.RequestSigner("k", secret, sign_query=value)), mod)
        for mod in (py, _c())
    ]
    assert results[0] == results[1]


@pytest.mark.parametrize(
    "value",
    [*_odd_numbers(), None, 0, -1, 1, 2**31, 2**63, 10**30, "2", 1.5, Number(3)],
    ids=repr,
)
def test_threads_agree(value: Any) -> None:
    same(
        "OrderHasher",
        attr="order_ids",
        obj_args=(WALLET,),
        token_ids=1,
        maker_amounts=[1, 2],
        taker_amounts=3,
        sides=0,
        salts=4,
        threads=value,
    )


def test_key_and_secret_subclasses_agree() -> None:
    for key, secret in ((Text("key"), "s"), ("key", Text("s")), ("key", Blob(b"s"))):
        same(
            "RequestSigner",
            "GET",
            "/x",
            attr="headers",
            obj_args=(key, secret),
            timestamp_ms=1,
            nonce="n",
        )
        signer = _c().RequestSigner(key, secret)
        assert type(signer.api_key) is str


# ---------------------------------------------------------------------------
# Every other name of CORE_API, and numbers past Python's digit limit (4,300
# digits for str <-> int): both twins refuse them with the same ClobkitError.

HUGE = 10**5000
PADDED = "0" * 5000 + "1"  # the value 1, longer than int() reads
buffers = st.one_of(
    st.binary(max_size=64),
    st.binary(max_size=64).map(bytearray),
    st.binary(max_size=64).map(lambda b: memoryview(b)),
    st.binary(max_size=64).map(Blob),
    st.text(max_size=8),
    st.sampled_from([None, 5, 1.5, [1, 2], HUGE, memoryview(b"abcdef")[::2]]),
)
counts = st.one_of(
    st.integers(-3, 40),
    st.sampled_from([None, True, 1.0, "3", HUGE, 2**62, 2**63, Number(2)]),
)


@settings(max_examples=examples(300))
@given(data=buffers)
def test_hashes_agree(data: Any) -> None:
    same("keccak256", data)
    same("sha256_hex", data)


@settings(max_examples=examples(300))
@given(data=buffers, n=counts)
def test_salts_agree(data: Any, n: Any) -> None:
    same("salts_from_bytes", data, n)
    if not (isinstance(n, int) and 0 < n < 10**6):  # a valid count draws random salts
        same("new_salts", n)


@settings(max_examples=examples(300))
@given(lines=buffers, values=buffers, width=counts)
def test_append_column_agrees(lines: Any, values: Any, width: Any) -> None:
    same("append_column", lines, values, width)


csv_specs = st.lists(
    st.one_of(
        st.tuples(
            st.integers(-1, 4),
            st.sampled_from(["text", "uint64", "map", "x"]),
            st.sampled_from([None, "", "d", 0, 7, -1, 2**64]),
        ),
        st.tuples(
            st.integers(0, 3),
            st.just("map"),
            st.sampled_from([None, 0, 1]),
            st.sampled_from([{"buy": 0, "sell": 1}, {"a": 5}, {"A": 1}, {}]),
        ),
        st.sampled_from([None, 1, (0,), (0, "text", None, None, 1)]),
    ),
    max_size=4,
)
csv_blocks = st.lists(
    st.sampled_from(
        [
            b"a",
            b"12",
            b"BUY",
            b'"x,y"',
            b'"a""b"',
            b",",
            b"\r",
            b"\n",
            b"\r\n",
            b" ",
            b'"',
            b"\t",
            b"\x00",
            b"\xff",
            b"0" * 30,
        ]
    ),
).map(b"".join)


@settings(max_examples=examples(300))
@given(
    block=st.one_of(csv_blocks, buffers),
    width=st.one_of(st.integers(1, 4), counts),
    columns=st.one_of(csv_specs, st.sampled_from([None, "x", [[0, "text", None]]])),
)
def test_csv_columns_agrees(block: Any, width: Any, columns: Any) -> None:
    same("csv_columns", block, width, columns)


huge_numbers = st.sampled_from(
    [
        HUGE,
        -HUGE,
        PADDED,
        "0" * 5000,
        "9" * 5000,
        "-" + PADDED,
        Number(HUGE),
        [HUGE],
        "1e" + "9" * 9,
    ]
)


@settings(max_examples=examples(200))
@given(value=huge_numbers, position=st.integers(0, 3))
def test_huge_numbers_agree(value: Any, position: int) -> None:
    same("to_units", value)
    same("from_units", value)
    args: list[Any] = ["BUY", "0.5", "10", "0.01"]
    args[position] = value
    same("limit_amounts", *args)
    same("market_amounts", *args)
    levels = [("0.5", "10"), ("0.4", "20")]
    same("market_price", [(value, "10")] if position == 0 else levels, "BUY", value)
    same("market_price", [("0.5", value)], "SELL", "1")


HUGE_FIELDS = [HUGE, PADDED, "0" * 5000 + "9" * 79, Number(HUGE)]
HUGE_IDS = ["10**5000", "padded-1", "padded-too-big", "int-subclass"]
ORDER = {
    "token_id": 1,
    "maker_amount": 2,
    "taker_amount": 3,
    "side": 0,
    "salt": 4,
    "fee_rate_bps": 0,
    "nonce": 0,
    "expiration": 0,
}
BATCH_NAMES = {"fee_rate_bps": "fee_rate_bps", "nonce": "nonces", "expiration": "expirations"}


@pytest.mark.parametrize("value", HUGE_FIELDS, ids=HUGE_IDS)
@pytest.mark.parametrize("field", [k for k in ORDER if k != "side"])
def test_huge_order_fields_agree(field: str, value: Any) -> None:
    same("OrderHasher", attr="order_id", obj_args=(WALLET,), **(ORDER | {field: value}))
    batch = {BATCH_NAMES.get(k, k + "s"): [v, v] for k, v in ORDER.items()}
    batch[BATCH_NAMES.get(field, field + "s")] = [1, value]
    same("OrderHasher", attr="order_ids", obj_args=(WALLET,), **batch)


@pytest.mark.parametrize("value", HUGE_FIELDS, ids=HUGE_IDS)
def test_huge_wallet_and_signing_values_agree(value: Any) -> None:
    for key in ("chain_id", "signature_type"):
        wallet = WALLET | {key: value}
        results = [outcome(lambda m, w=wallet: repr(m.OrderHasher(w)), m) for m in (py, _c())]
        assert results[0] == results[1]
    same("OrderHasher", attr="order_id", obj_args=(WALLET_V2,), **ORDER, timestamp=value)
    same("signature", "secret", "GET", "/x", value, "nonce", b"")
    same(
        "RequestSigner",
        "GET",
        "/x",
        attr="headers",
        obj_args=("k", "s"),
        timestamp_ms=value,
        nonce="n",
    )
    results = [outcome(lambda m=m: m.OrderHasher(WALLET, version=value)) for m in (py, _c())]
    assert results[0] == results[1]


def test_new_salt_agrees() -> None:
    """No input to compare: both twins draw a plain int on [0, 10**12]."""
    for mod in (py, _c()):
        salt = mod.new_salt()
        assert type(salt) is int
        assert 0 <= salt <= 10**12


def test_every_core_name_is_compared() -> None:
    """Each name of CORE_API is fed to both twins by a test in this module."""
    from pathlib import Path

    from clobkit.core.types import CORE_API

    source = Path(__file__).read_text(encoding="utf-8")
    missing = [name for name in CORE_API if not re.search(rf"\b{name}\b", source)]
    assert missing == []


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda c: c.to_units(HUGE), "value"),
        (lambda c: c.from_units(HUGE), "units"),
        (lambda c: c.limit_amounts("BUY", "0.5", HUGE), "size"),
        (lambda c: c.market_amounts("SELL", HUGE, "1"), "price"),
        (lambda c: c.market_price([("0.5", "10")], "BUY", HUGE), "amount"),
        (lambda c: c.market_price([("0.5", HUGE)], "BUY", "1"), "levels[0].size"),
        (lambda c: c.OrderHasher(WALLET).order_id(**_order(salt=HUGE)), "salt"),
        (lambda c: c.OrderHasher(WALLET).order_id(**_order(token_id="9" * 5000)), "token_id"),
        (lambda c: c.OrderHasher(WALLET | {"chain_id": "9" * 5000}), "wallet.chain_id"),
        (lambda c: c.signature("s", "GET", "/x", HUGE, "n", b""), "timestamp"),
        (lambda c: c.new_salts(HUGE), "n"),
        (lambda c: c.append_column(b"a\n", b"x", HUGE), "width"),
        (lambda c: c.market_price(9, "BUY", "1"), "levels"),  # found by tests/fuzz
        (lambda c: c.keccak256("abc"), "data"),
        (lambda c: c.sha256_hex(5), "data"),
    ],
)
def test_huge_numbers_are_refused_naming_the_field(core: ModuleType, call: Any, field: str) -> None:
    from clobkit.errors import ClobkitError

    with pytest.raises(ClobkitError) as info:
        call(core)
    assert str(info.value).startswith(f"{field}: ")


def test_zero_padded_numbers_are_their_value(core: ModuleType) -> None:
    hasher = core.OrderHasher(WALLET)
    assert hasher.order_id(**_order(salt=PADDED, token_id="0" * 6000 + "7")) == hasher.order_id(
        **_order(salt=1, token_id=7)
    )
    assert core.from_units(PADDED) == core.from_units(1)
    assert core.from_units("-" + PADDED) == core.from_units(-1)
    assert core.limit_amounts("BUY", "0.5", PADDED) == core.limit_amounts("BUY", "0.5", "1")


def _order(**fields: Any) -> dict[str, Any]:
    order: dict[str, Any] = {
        "token_id": 1,
        "maker_amount": 2,
        "taker_amount": 3,
        "side": "BUY",
        "salt": 4,
        "fee_rate_bps": 0,
        "nonce": 0,
        "expiration": 0,
    }
    return order | fields


class Loose(str):
    """A str whose own methods lie: the twins read the text, never these."""

    def isdigit(self) -> bool:
        return True

    def isascii(self) -> bool:
        return False

    def lstrip(self, chars: str | None = None) -> str:
        return "9"

    def __len__(self) -> int:
        return 3


class Odd(int):
    """An int whose own methods lie."""

    def to_bytes(self, *args: Any, **kwargs: Any) -> bytes:
        return b"\xff" * 32

    def __le__(self, other: object) -> bool:
        return False

    def bit_length(self) -> int:
        return 10_000


def test_str_and_int_subclasses_are_read_by_their_value(core: ModuleType) -> None:
    hasher = core.OrderHasher(WALLET)
    plain = hasher.order_id(token_id=12, maker_amount=1, taker_amount=1, side=0, salt=1)
    for token in (Loose("12"), Odd(12)):
        got = hasher.order_id(token_id=token, maker_amount=1, taker_amount=1, side=0, salt=1)
        assert got == plain
        ids = hasher.order_ids(
            token_ids=[token], maker_amounts=1, taker_amounts=1, sides=0, salts=1
        )
        assert ids == [plain]
    with pytest.raises(OrderFieldError, match="decimal integer string"):
        hasher.order_id(token_id=Loose("12a"), maker_amount=1, taker_amount=1, side=0, salt=1)
    word = "0x" + "ab" * 32
    v2 = core.OrderHasher(WALLET_V2)
    base = {"token_id": 1, "maker_amount": 1, "taker_amount": 1, "side": 0, "salt": 1}
    want = v2.order_id(**base, timestamp=1, builder=word)
    assert v2.order_id(**base, timestamp=1, builder=Loose(word)) == want
    assert core.from_units(Loose("1500000")) == core.from_units("1500000")
    assert core.from_units(Odd(1_500_000)) == core.from_units(1_500_000)
    with pytest.raises(ClobkitError):
        core.from_units(Loose("1.5"))
