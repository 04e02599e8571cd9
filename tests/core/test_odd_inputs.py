"""Odd inputs an audit found escaping as other exceptions, hanging or misread (both twins).

Each failed before its fix: ``market_price`` built 10**999999999 for
"1e-999999999"; a lone surrogate in a body or secret escaped as
``UnicodeEncodeError`` (the secret's quoting its character); a non-iterable
batch escaped as ``TypeError``; a numpy ``float64`` was read through its
``repr`` ("np.float64(0.5)"); an ``S32`` array lost its words' trailing NUL
bytes; and a str or int subclass's own methods were consulted.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from clobkit.errors import AmountError, ClobkitError, OrderFieldError, SignatureInputError
from clobkit.signing import OrderSigner

from .test_twins import WALLET

WALLET_V2 = WALLET | {
    "ctf_exchange": "0xE111180000d2663C0091e4f400237545B87B996B",
    "neg_risk_exchange": "0xe2222d279d744050d28e00520010520000310F59",
}
KEY = "0x" + "11" * 32
LEVELS = [("0.5", "100")]


@pytest.mark.parametrize(
    ("levels", "amount", "field"),
    [
        (LEVELS, "1e-999999999", "amount"),
        ([("0.5", "1e-999999999")], "1", "levels[0].size"),
        ([("1e-999999999", "100")], "1", "levels[0].price"),
        (LEVELS, "1e-81", "amount"),
    ],
)
def test_market_price_refuses_vanishing_values(
    core: ModuleType, levels: Any, amount: str, field: str
) -> None:
    with pytest.raises(AmountError, match="is too small") as info:
        core.market_price(levels, "BUY", amount)
    assert info.value.field == field


def test_market_price_still_takes_small_values(core: ModuleType) -> None:
    assert str(core.market_price(LEVELS, "BUY", "1e-80")) == "0.5"


@pytest.mark.parametrize("body", ["\ud800", "ok\udc80", "\udfff tail"])
def test_a_lone_surrogate_in_a_body_is_a_signature_input_error(core: ModuleType, body: str) -> None:
    signer = core.RequestSigner("key", "secret")
    calls: list[Callable[[], object]] = [
        lambda: core.signature("secret", "POST", "/x", 1, "n", body),
        lambda: signer.headers("POST", "/x", body),
        lambda: signer.headers_many([("POST", "/x", body)]),
    ]
    for call in calls:
        with pytest.raises(SignatureInputError, match="lone surrogate") as info:
            call()
        assert info.value.field == "body"
    # it cannot have been signed: it does not verify, it does not raise
    assert core.verify_signature("secret", "POST", "/x", 1, "n", body, "0" * 64) is False


def test_a_lone_surrogate_in_a_secret_is_refused_without_quoting_it(core: ModuleType) -> None:
    calls: list[Callable[[], object]] = [
        lambda: core.RequestSigner("key", "hunter\udc80two"),
        lambda: core.signature("hunter\udc80two", "GET", "/x", 1, "n"),
        lambda: core.verify_signature("hunter\udc80two", "GET", "/x", 1, "n", b"", "0" * 64),
    ]
    for call in calls:
        with pytest.raises(SignatureInputError) as info:
            call()
        assert info.value.field == "api_secret"
        assert "\udc80" not in str(info.value)
        assert "hunter" not in str(info.value)


@pytest.mark.parametrize("batch", [5, None, 1.5, object()])
def test_a_batch_that_is_not_iterable_is_named(core: ModuleType, batch: Any) -> None:
    with pytest.raises(SignatureInputError, match="must be an iterable") as info:
        core.RequestSigner("key", "secret").headers_many(batch)
    assert info.value.field == "requests"


@pytest.mark.parametrize("batch", [5, None, 1.5, "0x" + "ab" * 32, np.array(b"x" * 32)])
def test_sign_many_names_a_batch_that_is_not_a_sequence(batch: Any) -> None:
    with pytest.raises(OrderFieldError) as info:
        OrderSigner(KEY).sign_many(batch)
    assert info.value.field == "order_ids"


def test_sign_many_reads_an_s32_array_whole() -> None:
    ids = [bytes.fromhex("cd" * 16 + "00" * 16), bytes.fromhex("00" * 31 + "01")]
    signer = OrderSigner(KEY)
    assert signer.sign_many(np.array(ids, dtype="S32")) == signer.sign_many(ids)


def test_an_s32_word_column_keeps_its_trailing_nul_bytes(core: ModuleType) -> None:
    word = b"\xab" * 16 + b"\x00" * 16  # a builder code, padded right
    hasher = core.OrderHasher(WALLET_V2)
    common: dict[str, Any] = {
        "token_ids": [1, 2],
        "maker_amounts": 1,
        "taker_amounts": 1,
        "sides": 0,
        "salts": 1,
        "timestamps": 1,
    }
    want = hasher.order_ids(**common, builders=[word, word])
    assert hasher.order_ids(**common, builders=np.array([word, word], dtype="S32")) == want


@pytest.mark.parametrize("value", [np.float64(0.5), np.float64(1) / 2])
def test_a_numpy_float_is_read_as_a_float(core: ModuleType, value: Any) -> None:
    assert core.limit_amounts("BUY", value, 10) == core.limit_amounts("BUY", 0.5, 10)
    assert core.market_price(LEVELS, "BUY", value) == core.market_price(LEVELS, "BUY", 0.5)


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
