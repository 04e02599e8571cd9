"""The native worker pool (#20): every batch path equals the one-thread list path.

``order_ids`` reads, hashes and writes each order in native threads (ext/batch.c);
``sign_many`` signs there too. These tests drive them over every input shape
(Python lists of each spelling, Arrow arrays plain, chunked, sliced, dictionary,
numpy), thread counts 1 to 32 (more than the cores), batches crossing the
16,384-row rounds, and bad rows anywhere: ids, errors and signatures must be
those of the single-threaded list path, of the pure twin and of eth-account.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clobkit import OrderSigner
from clobkit.core.enums import Side
from clobkit.errors import OrderFieldError
from clobkit.signing import batch
from clobkit.signing import secp as _secp

from ..conftest import examples
from ..signing.test_hasher import wallet
from ..signing.test_keys import DEPOSIT_WALLET, DEV_ADDRESS, DEV_KEY
from . import signing_oracle
from .test_columns import WALLETS
from .test_twins import WALLET

pa = pytest.importorskip("pyarrow")
np = pytest.importorskip("numpy")
core_c: Any = pytest.importorskip("clobkit.core._core_c")
core_py: Any = pytest.importorskip("clobkit.core.pure")

MAX = 2**256 - 1
ROUND = 16_384  # rows per round of the pipeline (ext/batch.pxi CHUNK)
SIGN_ROUND = 2_048  # rows per round when signing (ext/batch.pxi SIGN_ROUND)
THREADS = (1, 2, 3, 4, 7, 8, 16, 32)

# Each field's spellings the list path takes: plain ones the workers read,
# and unusual ones that send their block through the Python path.
UINTS = st.one_of(
    st.integers(0, 2**63 - 1),
    st.integers(0, MAX),
    st.integers(0, MAX).map(str),
    st.integers(0, 10**6).map(lambda v: "0" * 130 + str(v)),  # past 128 digits: Python path
)
SIDES = st.sampled_from([0, 1, "BUY", "SELL", Side.BUY, Side.SELL])
FLAGS = st.sampled_from([True, False, 0, 1])
WORDS = st.one_of(
    st.none(),
    st.binary(min_size=32, max_size=32),
    st.binary(min_size=32, max_size=32).map(lambda b: "0x" + b.hex()),
    st.binary(min_size=32, max_size=32).map(lambda b: "0X" + b.hex().upper()),
)


@st.composite
def batches(draw: Any, version: int, max_rows: int = 60) -> dict[str, Any]:
    n = draw(st.integers(0, max_rows))

    def col(values: Any) -> list[Any]:
        return list(draw(st.lists(values, min_size=n, max_size=n)))

    cols: dict[str, Any] = {
        "token_ids": col(UINTS),
        "maker_amounts": col(UINTS),
        "taker_amounts": col(UINTS),
        "sides": col(SIDES),
        "salts": col(UINTS),
        "neg_risk": col(FLAGS),
    }
    if version == 1:
        cols |= {"fee_rate_bps": col(UINTS), "nonces": col(UINTS), "expirations": col(UINTS)}
    else:
        cols |= {"timestamps": col(UINTS), "metadatas": col(WORDS), "builders": col(WORDS)}
    return cols


def _ids(hasher: Any, cols: dict[str, Any], **kw: Any) -> list[str]:
    out = hasher.order_ids(**cols, **kw)
    return out.to_pylist() if kw.get("out") == "arrow" else list(out)


@settings(max_examples=examples(150))
@given(data=st.data(), version=st.sampled_from([1, 2, 3]), threads=st.sampled_from(THREADS))
def test_lists_every_spelling_equal_the_pure_twin(data: Any, version: int, threads: int) -> None:
    cols = data.draw(batches(version))
    want = core_py.OrderHasher(WALLETS[version]).order_ids(**cols)
    hasher = core_c.OrderHasher(WALLETS[version])
    assert _ids(hasher, cols, threads=threads) == want
    assert _ids(hasher, cols, threads=threads, out="arrow") == want


def _big_batch(n: int, seed: int) -> dict[str, list[Any]]:
    """n V1 orders: a few token ids, amounts as ints and digit strings, sides both ways."""
    tokens = [str(MAX - k) for k in range(3)] + [7, MAX // 3]
    return {
        "token_ids": [tokens[(i * 7 + seed) % len(tokens)] for i in range(n)],
        "maker_amounts": [(i * 977 + seed) % 10**12 for i in range(n)],
        "taker_amounts": [str((i * 131 + seed) % 10**15) for i in range(n)],
        "sides": ["BUY" if (i + seed) % 3 else "SELL" for i in range(n)],
        "salts": [(i * 2654435761 + seed) % 10**12 for i in range(n)],
        "neg_risk": [(i + seed) % 5 == 0 for i in range(n)],
    }


def _arrow(cols: dict[str, list[Any]], shape: str) -> dict[str, Any]:
    """The batch as Arrow columns: plain, chunked at odd places, sliced, or dictionaries."""
    out: dict[str, Any] = {}
    for name, raw in cols.items():
        values = [None if v is None else str(v) for v in raw] if name == "token_ids" else raw
        arr = pa.array(values)
        if shape == "chunked":
            cuts = [0, 1, 1, 5000, ROUND - 1, ROUND + 3, len(arr)]
            cuts = sorted({min(c, len(arr)) for c in cuts})
            arr = pa.chunked_array([arr.slice(a, b - a) for a, b in pairwise(cuts)], arr.type)
        elif shape == "sliced":
            pad = pa.array(values[:3] + values + values[:5], arr.type)
            arr = pad.slice(3, len(values))
        elif shape == "dictionary" and name in ("token_ids", "sides"):
            arr = arr.dictionary_encode()
        out[name] = arr
    return out


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["plain", "chunked", "sliced", "dictionary"])
def test_arrow_shapes_and_threads_equal_the_list_path(shape: str) -> None:
    n = 2 * ROUND + 1234  # three rounds when the GIL has per-row work
    cols = _big_batch(n, 5)
    hasher = core_c.OrderHasher(WALLETS[1])
    want = hasher.order_ids(**cols, threads=1)
    arrow = _arrow(cols, shape)
    for threads in THREADS:
        assert _ids(hasher, arrow, threads=threads, out="arrow") == want, threads
        assert _ids(hasher, arrow, threads=threads) == want, threads
    mixed = {**arrow, "salts": cols["salts"], "neg_risk": False}  # columns, lists and a scalar
    want_mixed = hasher.order_ids(**{**cols, "neg_risk": False}, threads=1)
    for threads in (1, 3, 32):
        assert _ids(hasher, mixed, threads=threads, out="arrow") == want_mixed
    assert want[:50] == core_py.OrderHasher(WALLETS[1]).order_ids(
        **{k: v[:50] for k, v in cols.items()}
    )


@pytest.mark.slow
def test_numpy_columns_and_threads() -> None:
    n = ROUND + 77
    cols = _big_batch(n, 9)
    hasher = core_c.OrderHasher(WALLETS[2])
    cols2 = {**cols, "timestamps": [1_777_000_000_000 + i for i in range(n)]}
    want = hasher.order_ids(**cols2, threads=1)
    numpy_cols = {
        **cols2,
        "maker_amounts": np.array(cols["maker_amounts"], dtype=np.uint64),
        "salts": np.array(cols["salts"], dtype=np.int64),
        "timestamps": np.array(cols2["timestamps"], dtype=np.int64),
        "neg_risk": np.array(cols["neg_risk"]),
    }
    for threads in THREADS:
        assert _ids(hasher, numpy_cols, threads=threads, out="arrow") == want


def _error(fn: Any) -> tuple[type, str, Any]:
    with pytest.raises(OrderFieldError) as info:
        fn()
    return type(info.value), str(info.value), info.value.field


BAD_VALUES = ["-1", "12a", "", 2**256, -5, 1.5, "BUY"]


@pytest.mark.slow
@pytest.mark.parametrize("row", [0, 255, 256, ROUND - 1, ROUND, 2 * ROUND + 100])
def test_a_bad_row_anywhere_is_named_as_the_list_path_names_it(row: int) -> None:
    n = 2 * ROUND + 200
    hasher = core_c.OrderHasher(WALLETS[1])
    py = core_py.OrderHasher(WALLETS[1])
    for bad in BAD_VALUES:
        cols = _big_batch(n, 1)
        cols["taker_amounts"][row] = bad
        cols["salts"][min(row + 1, n - 1)] = "x"  # a later bad row is not the one named
        small = {k: v[row - 3 : row + 2] if row >= 3 else v[: row + 2] for k, v in cols.items()}
        want = _error(lambda c=cols: hasher.order_ids(**c, threads=1))
        assert want[2] == f"taker_amounts[{row}]"
        # the pure twin words the same value alike (its row numbers are the slice's)
        assert (
            _error(lambda s=small: py.order_ids(**s))[1]
            == _error(lambda s=small: hasher.order_ids(**s))[1]
        )
        for threads in (2, 3, 32):
            assert _error(lambda c=cols, t=threads: hasher.order_ids(**c, threads=t)) == want
            assert (
                _error(lambda c=cols, t=threads: hasher.order_ids(**c, threads=t, out="arrow"))
                == want
            )


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["plain", "chunked", "sliced", "dictionary"])
def test_arrow_nulls_are_refused_with_the_same_words(shape: str) -> None:
    n = 2 * ROUND + 10
    cols = _big_batch(n, 2)
    hasher = core_c.OrderHasher(WALLETS[1])
    for row in (0, ROUND + 5, n - 1):
        with_null: dict[str, list[Any]] = {k: list(v) for k, v in cols.items()}
        with_null["token_ids"][row] = None
        arrow = _arrow(with_null, shape)
        errors = {
            _error(lambda a=arrow, t=t, o=o: hasher.order_ids(**a, threads=t, out=o))
            for t in (1, 2, 8, 32)
            for o in ("list", "arrow")
        }
        (only,) = errors  # one error for every thread count and output
        assert only[0] is OrderFieldError
        assert only[2] == f"token_ids[{row}]"
        assert "must not be null" in only[1]
        small = {k: pa.array([None]) if k == "token_ids" else v[:1] for k, v in cols.items()}
        assert (
            _error(lambda s=small: core_py.OrderHasher(WALLETS[1]).order_ids(**s))[1]
            == (_error(lambda s=small: hasher.order_ids(**s))[1])
        )


@pytest.mark.slow
def test_many_python_threads_share_the_pool() -> None:
    """Callers racing for the native pool (it serves one at a time; the others run
    alone): every batch still comes back whole and right."""
    hasher = core_c.OrderHasher(WALLETS[1])
    batches_ = [_big_batch(3000 + 97 * k, k) for k in range(24)]
    want = [hasher.order_ids(**b) for b in batches_]
    arrow = [_arrow(b, "chunked") for b in batches_]
    signer = OrderSigner(DEV_KEY)
    ids = ["0x" + bytes([k % 256]).hex() * 32 for k in range(300)]
    sigs = [signer.sign(i) for i in ids]

    def work(k: int) -> bool:
        t = 1 + k % 6
        ok = hasher.order_ids(**batches_[k], threads=t) == want[k]
        ok &= hasher.order_ids(**arrow[k], threads=t, out="arrow").to_pylist() == want[k]
        return ok and signer.sign_many(ids, threads=t) == sigs

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(24)))


def _digit_strings() -> list[str]:
    """Decimal strings of every length the workers parse (1 to 128: 16 digits at a time
    after the first n % 16) and past it, leading zeros beyond 78 digits, and the edges
    of uint256."""
    out = [str(MAX), str(MAX + 1), str(10**77), str(10**77 - 1), "0", "0" * 16, "9" * 16]
    for n in range(1, 131):
        digits = "".join(str((k * 7 + n) % 10) for k in range(n))
        out.append(digits if n <= 77 else "0" * (n - 77) + digits[-77:])
    return out


def test_decimal_strings_of_every_length_and_bad_byte_equal_the_pure_twin() -> None:
    """The workers' digit parser (ext/batch.c: 8 digits in one word) against the pure
    twin: every length, every non-digit byte next to the digits' range, at the first,
    a middle and the last place of each length, from a list and from an Arrow column."""
    fast, pure = core_c.OrderHasher(WALLETS[1]), core_py.OrderHasher(WALLETS[1])
    values = _digit_strings()
    bad = [":", "/", "*", "\x00", "\x7f", " ", "a", "\u0663", "+", "-"]
    for text in list(values):
        for at in sorted({0, len(text) // 2, len(text) - 1}):
            values += [text[:at] + b + text[at + 1 :] for b in bad]
    args = {"maker_amounts": 1, "taker_amounts": 2, "sides": 0, "salts": 3}
    for text in values:
        want = _outcome(lambda t=text: pure.order_ids(token_ids=[t], **args))
        assert _outcome(lambda t=text: fast.order_ids(token_ids=[t], **args)) == want, text
        column = pa.array([text], pa.string())
        got = _outcome(lambda c=column: fast.order_ids(token_ids=c, **args, out="arrow"))
        if want[0] == "ok":
            assert got == ("ok", pa.array(want[1])), text
        else:
            assert got == want, text


def _outcome(fn: Any) -> tuple[str, Any]:
    try:
        return ("ok", fn())
    except OrderFieldError as exc:
        return (type(exc).__name__, str(exc).replace("token_ids[0]", "token_ids"))


def _racing(cols: dict[str, list[Any]], change: Any, calls: int) -> list[Any]:
    """``calls`` batches of ``cols`` (threads=2) while another thread runs ``change``
    until they end: each call's ids, or its ClobkitError."""
    hasher = core_c.OrderHasher(WALLETS[1])
    stop = threading.Event()

    def changer() -> None:
        while not stop.is_set():
            change()

    def call() -> Any:
        try:
            return hasher.order_ids(**cols, threads=2)
        except OrderFieldError as exc:
            return exc

    thread = threading.Thread(target=changer)
    thread.start()
    try:
        results = [call() for _ in range(calls)]
    finally:
        stop.set()
        thread.join()
    return results


def test_a_list_another_thread_changes_meanwhile() -> None:
    """The compiled twin reads a list in place, a round at a time, and copies what the
    workers read out of its objects: another thread replacing items (freeing the old
    ones) while the workers run never makes it read freed memory (ASan would tell:
    scripts/sanitize.sh), and each row's id is that of a value the row held."""
    n = 2 * ROUND + 5
    olds, news = [str(MAX - 1), str(10**70)], [str(MAX - 2), str(10**71)]
    cols = {**_big_batch(n, 1), "token_ids": [olds[i % 2] for i in range(n)]}
    hasher = core_c.OrderHasher(WALLETS[1])
    old = hasher.order_ids(**cols, threads=1)
    new = hasher.order_ids(**{**cols, "token_ids": [news[i % 2] for i in range(n)]}, threads=1)
    tokens = cols["token_ids"]
    flip = [0]

    def change() -> None:  # every 97th row to a fresh str of the other value, and back
        flip[0] ^= 1
        for i in range(0, n, 97):
            tokens[i] = str(int((news if flip[0] else olds)[i % 2]))

    for ids in _racing(cols, change, 12):
        assert isinstance(ids, list)
        assert len(ids) == n
        assert all(ids[i] in (old[i], new[i]) for i in range(n))
        assert all(ids[i] == old[i] for i in range(n) if i % 97)


def test_a_list_another_thread_resizes_meanwhile() -> None:
    """A list whose length another thread changes during the call: the batch of the
    length it had is returned, or ``changed length`` naming it; never an IndexError."""
    n = 2 * ROUND + 5
    cols = _big_batch(n, 2)
    want = core_c.OrderHasher(WALLETS[1]).order_ids(**cols, threads=1)
    salts = cols["salts"]

    def change() -> None:  # longer for a moment now and then (calls see either, or both)
        salts.append(5)
        time.sleep(0.002)
        salts.pop()
        time.sleep(0.01)

    results = _racing(cols, change, 12)
    for got in results:
        if isinstance(got, OrderFieldError):
            # seen before the call ("has a different length") or between two rounds
            assert re.match(r"salts: (changed length|has a different length)", str(got)), got
        else:
            assert got == want
    assert salts == _big_batch(n, 2)["salts"]


def test_a_list_a_value_shortens_is_refused_by_name() -> None:
    """A value the workers leave to Python (a str subclass) whose own code shortens
    another list of the batch: both twins refuse it as ``changed length``, naming
    the list and its new length; never an IndexError or a read past its end."""
    n = 3 * ROUND
    for twin in (core_c, core_py):
        cols = _big_batch(n, 3)
        salts = cols["salts"]

        class Shrinks(str):
            __hash__ = str.__hash__

            def __eq__(self, other: object, salts: list[Any] = salts) -> bool:
                del salts[-10:]
                return str.__eq__(self, other)

        cols["sides"] = ["BUY"] * n
        cols["sides"][5] = Shrinks("BUY")
        with pytest.raises(OrderFieldError) as info:
            twin.OrderHasher(WALLETS[1]).order_ids(**cols, threads=2)
        assert str(info.value) == f"salts: changed length (got '<{n - 10} items>')"


# ---------------------------------------------------------------- signing


def test_native_signing_uses_coincurves_compiled_library() -> None:
    """The native path reaches libsecp256k1 through coincurve's private
    ``coincurve._libsecp256k1`` module (cffi's ``ffi.addressof`` on its ``lib``), taken
    because it passed the self-check at load (``_secp.load``); any coincurve release
    that changes it makes the check fail and the public API sign instead."""
    from coincurve import _libsecp256k1 as compiled

    OrderSigner(DEV_KEY)  # loads the library
    backend = batch.backend()
    assert isinstance(backend, _secp.NativeBackend)
    assert backend.lib is compiled.lib
    ffi = compiled.ffi
    want = (
        int(ffi.cast("uintptr_t", ffi.addressof(compiled.lib, _secp.SIGN))),
        int(ffi.cast("uintptr_t", ffi.addressof(compiled.lib, _secp.SERIALIZE))),
    )
    assert backend.handle is not None
    assert backend.handle[:2] == want
    assert _secp.check_declarations(compiled.ffi, compiled.lib) is None
    assert batch.native() is core_c  # the compiled twin signs batches


class _Differing(_secp.NativeBackend):
    """The native path with one signature off (as a changed build might give)."""

    def __init__(self, where: str) -> None:
        super().__init__()
        self.where = where

    def sign_chunk(self, key: Any, digests: list[bytes], start: int, stop: int) -> list[str]:
        out = super().sign_chunk(key, digests, start, stop)
        return [s[:-4] + "0000" for s in out] if self.where == "cffi" else out


class _OtherCompiled:
    """A compiled core whose call through the handle gives another signature."""

    @staticmethod
    def _secp_check(handle: Any, key: int, digest: bytes) -> str:
        return "0x" + "00" * 65


class _FakeFfi:
    """An ffi whose module declares the functions as ``declared`` says (by name), and the
    signature struct ``size`` bytes long."""

    def __init__(self, declared: dict[str, str], size: int = 65) -> None:
        self.declared = declared
        self.size = size

    def typeof(self, function: Any) -> Any:
        return type("CType", (), {"cname": self.declared[function.__name__]})

    def sizeof(self, name: str) -> int:
        return self.size


def test_the_self_check_passes_on_the_installed_coincurve() -> None:
    native, public = _secp.NativeBackend(), _secp.PublicBackend()
    assert _secp.self_check(native, public, core_c) is None


@pytest.mark.parametrize(
    ("loader", "compiled", "reason"),
    [
        (lambda: _Differing("cffi"), None, "a signature through cffi differs"),
        (_secp.NativeBackend, _OtherCompiled(), "through the compiled core differs"),
        (lambda: (_ for _ in ()).throw(ImportError("no _libsecp256k1")), None, "ImportError"),
        (lambda: (_ for _ in ()).throw(AttributeError("renamed")), None, "AttributeError"),
    ],
    ids=["cffi differs", "compiled call differs", "module gone", "function renamed"],
)
def test_any_failure_of_the_native_path_signs_through_the_public_api(
    caplog: pytest.LogCaptureFixture, loader: Any, compiled: Any, reason: str
) -> None:
    with caplog.at_level("WARNING", logger="clobkit.signing"):
        backend = _secp.load(loader, compiled)
    assert isinstance(backend, _secp.PublicBackend)
    assert backend.handle is None
    assert any(reason in r.getMessage() and "public API" in r.getMessage() for r in caplog.records)


def test_a_changed_declaration_is_refused_before_any_call() -> None:
    from coincurve import _libsecp256k1 as compiled

    other = _secp.PROTOTYPES[_secp.SIGN].replace("void *)", "int)")
    refused = _secp.check_declarations(
        _FakeFfi({**_secp.PROTOTYPES, _secp.SIGN: other}), compiled.lib
    )
    assert refused is not None
    assert _secp.SIGN in refused
    refused = _secp.check_declarations(_FakeFfi(_secp.PROTOTYPES, size=64), compiled.lib)
    assert refused is not None
    assert "64 bytes" in refused


@pytest.mark.parametrize("signature_type", [0, 3])
def test_the_public_path_signs_as_the_native_one_and_eth_account(
    monkeypatch: pytest.MonkeyPatch, signature_type: int
) -> None:
    """Signed through coincurve's public API (the fallback): ``sign``, ``sign_many``
    (threads or not) and a hasher's ``sign_many`` give the native path's signatures,
    and those are eth-account's."""
    owner = DEV_ADDRESS if signature_type != 3 else DEPOSIT_WALLET
    hasher = core_c.OrderHasher(wallet(signature_type, owner))
    cols = {**_big_batch(40, 2), "timestamps": [1_777_000_000_000 + i for i in range(40)]}
    ids = ["0x" + bytes([k]).hex() * 32 for k in range(20)]
    native = OrderSigner(DEV_KEY)
    want = (native.sign(ids[0]), native.sign_many(ids, threads=3), hasher.sign_many(native, **cols))
    address = native.address
    monkeypatch.setattr(batch, "BACKEND", _secp.PublicBackend())  # what a failed check picks
    public = OrderSigner(DEV_KEY)
    assert public.address == address
    assert batch.native() is None  # no handle: the workers hash, Python signs
    got = (public.sign(ids[0]), public.sign_many(ids, threads=3), hasher.sign_many(public, **cols))
    assert got == want
    key = int(DEV_KEY, 16)
    assert got[1][:3] == [
        signing_oracle.eth_account_sign(bytes.fromhex(i[2:]), key) for i in ids[:3]
    ]
    with pytest.raises(OrderFieldError, match="not a valid secp256k1 private key"):
        OrderSigner(b"\x00" * 32)


@settings(max_examples=examples(200))
@given(
    key=st.integers(1, signing_oracle.N - 1),
    digests=st.lists(st.binary(min_size=32, max_size=32), max_size=40),
    threads=st.sampled_from(THREADS),
)
def test_native_signatures_equal_eth_account(key: int, digests: list[bytes], threads: int) -> None:
    signer = OrderSigner(key.to_bytes(32, "big"))
    want = [signing_oracle.eth_account_sign(d, key) for d in digests]
    assert signer.sign_many(digests, threads=threads) == want
    assert signer.sign_many(["0x" + d.hex() for d in digests], threads=threads) == want
    assert signer.sign_many(["0x" + d.hex().upper() for d in digests], threads=threads) == want
    if digests:
        assert core_c._secp_check(batch.handle(), signer._key_at(), digests[0]) == want[0]


def test_native_and_cffi_paths_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    signer = OrderSigner(DEV_KEY)
    ids = ["0x" + bytes([k]).hex() * 32 for k in range(64)]
    native = signer.sign_many(ids, threads=3)
    monkeypatch.setattr(batch, "native", lambda: None)  # the pure twin's path
    assert signer.sign_many(ids, threads=3) == native


class _Text(str):
    pass


def test_unusual_ids_take_the_python_check() -> None:
    signer = OrderSigner(DEV_KEY)
    good = "0x" + "ab" * 32
    want = signer.sign_many([good], threads=1)
    # a str subclass and a bytearray: taken at run time, beyond the annotation
    unusual: list[Any] = [_Text(good), bytearray.fromhex("ab" * 32)]
    assert signer.sign_many(unusual, threads=2) == want * 2
    bads: tuple[Any, ...] = ("0X" + "ab" * 32, "0x" + "ag" * 32, good[:-1], b"\x00" * 31, None)
    for bad in bads:
        with pytest.raises(OrderFieldError) as info:
            signer.sign_many([good, bad], threads=2)
        assert info.value.field == "order_ids[1]"


@pytest.mark.slow
@pytest.mark.parametrize("signature_type", [0, 2, 3])
def test_hasher_sign_many_native_equals_pure_twin_and_eth_account(signature_type: int) -> None:
    owner = DEV_ADDRESS if signature_type != 3 else DEPOSIT_WALLET
    w = wallet(signature_type, owner)
    signer = OrderSigner(DEV_KEY)
    n = 300
    cols = {**_big_batch(n, 3), "timestamps": [1_777_000_000_000 + i for i in range(n)]}
    want = core_py.OrderHasher(w).sign_many(signer, **cols)
    hasher = core_c.OrderHasher(w)
    for threads in (1, 2, 5, 32):
        assert hasher.sign_many(signer, **cols, threads=threads) == want
        assert hasher.sign_many(signer, **_arrow(cols, "chunked"), threads=threads) == want
    # an IntEnum side is left to the Python path: its block is signed by the calling thread
    odd = {**cols, "sides": [Side.SELL if i % 7 == 0 else i % 2 for i in range(n)]}
    want_odd = core_py.OrderHasher(w).sign_many(signer, **odd)
    for threads in (1, 3):
        assert hasher.sign_many(signer, **odd, threads=threads) == want_odd
    if signature_type == 3:  # a V3 exchange's deposit wallet: its own domain, same wrapper
        want3 = core_py.OrderHasher(w, version=3).sign_many(signer, **cols)
        assert want3 != want
        assert core_c.OrderHasher(w, version=3).sign_many(signer, **cols, threads=3) == want3
    if signature_type != 3:  # the id is the signed digest: eth-account's signature of it
        key = int(DEV_KEY, 16)
        for got in want[:20]:
            digest = bytes.fromhex(got.order_id[2:])
            assert got.signature == signing_oracle.eth_account_sign(digest, key)


def _keccak_under(value: str) -> tuple[str, str]:
    code = "import warnings, clobkit.core._core_c as c; print(c.implementation()['keccak'])"
    env = {**os.environ, "CLOBKIT_KECCAK": value, "PYTHONWARNINGS": "always"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip(), done.stderr


def test_clobkit_keccak_forces_a_path() -> None:
    """CLOBKIT_KECCAK measures the AVX2 path on a CPU that would take AVX-512 (docs/scale.md)."""
    for name in ("portable", "avx2", "avx512"):
        runs_here = core_c.set_implementation(keccak=name)
        core_c.set_implementation(keccak="auto")
        path, err = _keccak_under(name)
        if runs_here:
            assert (path, err) == (name, "")
        else:
            assert "not a Keccak path this CPU runs" in err
    auto = core_c.implementation()["keccak"]
    assert _keccak_under("auto") == (auto, "")
    path, err = _keccak_under("sse9")
    assert path == auto
    assert "CLOBKIT_KECCAK='sse9'" in err


@pytest.mark.parametrize("flags", ["bools", "ints"])
def test_a_list_of_flags_is_read_by_the_workers(flags: str) -> None:
    """neg_risk in a list (True/False or 0/1, as a JSONL or CSV file gives it) is read by
    the workers: no row goes through the Python path (which once took every such list,
    at three times the cost), and a bad flag still gets the rule's error, by its row."""
    cols = _big_batch(3 * ROUND // 2, 7)  # two rounds
    if flags == "ints":
        cols["neg_risk"] = [int(v) for v in cols["neg_risk"]]
    want = core_py.OrderHasher(WALLETS[1]).order_ids(**cols)
    hasher = core_c.OrderHasher(WALLETS[1])
    for threads in (1, 4):
        assert _ids(hasher, cols, threads=threads) == want
        assert core_c._missed_rows() == 0
    cols["neg_risk"][ROUND + 5] = 2
    with pytest.raises(OrderFieldError, match=re.escape(f"neg_risk[{ROUND + 5}]: must be a bool")):
        hasher.order_ids(**cols, threads=2)
    cols["neg_risk"][ROUND + 5] = Side.BUY  # an int subclass: the Python path, the same id
    assert _ids(hasher, cols, threads=2) == want
    assert 0 < core_c._missed_rows() <= 256  # its block (BLOCK rows), the others not


def test_the_compiled_twins_plain_types_answer_as_the_rules_do() -> None:
    """ext/order_ids.pxi answers ``_parse.is_scalar`` and ``_columns.is_columnar`` itself
    for the types in its ``_PLAIN`` (lists and tuples are sequences; int, str, bool,
    float, bytes and None are scalars; none is columnar), so a few orders cost no Python
    call per argument. Those answers are the rules' own: if a rule changes for one of
    these types, this fails, and ``_PLAIN`` must change with it."""
    from clobkit.core import columns as _columns
    from clobkit.core import parse as _parse

    pxi = (Path(__file__).parents[2] / "ext" / "order_ids.pxi").read_text(encoding="utf-8")
    plain = re.search(r"_PLAIN = frozenset\(\((.*)\)\)", pxi)
    assert plain is not None
    names = {"list", "tuple", "int", "str", "bool", "float", "bytes", "type(None)"}
    assert {name.strip() for name in plain.group(1).split(",")} == names  # each one below
    sequences: tuple[object, ...] = ([1], (1,))
    scalars: tuple[object, ...] = (1, "1", True, 1.5, b"\x01" * 32, None)
    for value in sequences:
        assert not _parse.is_scalar(value)
        assert not _columns.is_columnar(value)
    for value in scalars:
        assert _parse.is_scalar(value)
        assert not _columns.is_columnar(value)


def test_gil_held_hook_reports_the_last_batch() -> None:
    """benchmarks/native_pool.py reads the GIL-held CPU time of the last batch here,
    once it turns the meter on (off, no batch reads the thread's clock: 0)."""
    hasher = core_c.OrderHasher(WALLETS[1])
    cols = _big_batch(20_000, 4)
    assert core_c._gil_meter(True) is False  # off by default
    try:
        hasher.order_ids(**cols, threads=2)
        held = core_c._gil_held_ns()
        assert isinstance(held, int)
        assert held > 0  # the plan and the 20,000 result strs, at least
        # the part no round overlaps: the setup and the first and last rounds' GIL
        # work (these 20,000 rows are two rounds), within the GIL-held time
        assert 0 <= core_c._gil_alone_ns() <= held
        OrderSigner(DEV_KEY).sign_many(["0x" + "ab" * 32] * 3, threads=2)
        assert core_c._gil_held_ns() > 0
        assert core_c._gil_alone_ns() == core_c._gil_held_ns()  # one round: all of it
    finally:
        assert core_c._gil_meter(False) is True
    hasher.order_ids(**cols, threads=2)
    assert core_c._gil_held_ns() == 0
    assert core_c._gil_alone_ns() == 0


def test_sign_many_in_rounds_of_its_own() -> None:
    """Signing runs in rounds of SIGN_ROUND rows (a round of CHUNK signed orders left
    many cores idle while the first and last were made): a batch of three such rounds,
    odd rows on their boundaries, equals the pure twin, and a bad row in the last
    round is named by its row."""
    n = 2 * SIGN_ROUND + 37
    cols = {**_big_batch(n, 5), "timestamps": [1_777_000_000_000 + i for i in range(n)]}
    for r in (0, SIGN_ROUND - 1, SIGN_ROUND, 2 * SIGN_ROUND + 36):
        cols["sides"][r] = Side.SELL  # an IntEnum: its block goes through the Python path
    signer = OrderSigner(DEV_KEY)
    w = wallet(0, DEV_ADDRESS)
    want = core_py.OrderHasher(w).sign_many(signer, **cols)
    hasher = core_c.OrderHasher(w)
    core_c._gil_meter(True)
    try:
        for threads in (1, 3):
            assert hasher.sign_many(signer, **cols, threads=threads) == want
            assert 0 < core_c._missed_rows() <= 4 * 8  # the four odd rows' blocks
            # the first two rounds' results were made beside the workers: most of the
            # GIL's work (the CPU time of 4,096 of 4,133 SignedOrder, not a wall time);
            # in one round none is, only the pool's start
            held, alone = core_c._gil_held_ns(), core_c._gil_alone_ns()
            assert held - alone > held // 3
    finally:
        core_c._gil_meter(False)
    cols["maker_amounts"][2 * SIGN_ROUND + 30] = -1
    with pytest.raises(OrderFieldError, match=re.escape(f"maker_amounts[{2 * SIGN_ROUND + 30}]")):
        hasher.sign_many(signer, **cols, threads=3)


def _native_threads() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError("no Threads line")  # pragma: no cover


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
def test_a_burst_of_threads_does_not_stay(core: ModuleType) -> None:
    hasher = core.OrderHasher(WALLET)
    before = _native_threads()
    n = 20_000
    ids = hasher.order_ids(
        token_ids=1,
        maker_amounts=range(1, n + 1),
        taker_amounts=2,
        sides=0,
        salts=3,
        threads=1000,
    )
    assert len(ids) == n
    assert ids[7] == hasher.order_id(token_id=1, maker_amount=8, taker_amount=2, side=0, salt=3)
    # the pool is bounded, and idle helpers leave within seconds
    from clobkit.core.parse import MAX_THREADS as limit

    assert _native_threads() <= before + limit
    deadline = time.monotonic() + 30
    while _native_threads() > before + 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _native_threads() <= before + 1


def test_threads_are_capped_not_overflowed(core: ModuleType) -> None:
    hasher = core.OrderHasher(WALLET)
    one = hasher.order_ids(token_ids=1, maker_amounts=[1, 2], taker_amounts=3, sides=0, salts=4)
    for threads in (2**31, 2**63, 10**40):
        got: Any = hasher.order_ids(
            token_ids=1, maker_amounts=[1, 2], taker_amounts=3, sides=0, salts=4, threads=threads
        )
        assert got == one
