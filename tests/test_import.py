"""``import clobkit`` loads the core only: no HTTP, WebSocket, server or signing stack."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import examples

HEAVY = (
    "httpx",
    "websockets",
    "starlette",
    "uvicorn",
    "eth_account",
    "coincurve",
    "Crypto",
    "msgspec",
)


def _modules_after(code: str) -> list[str]:
    # the probe prints with repr, not json: json would import re itself
    probe = f"{code}; import sys; print(sorted(sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return list(ast.literal_eval(done.stdout))


def test_import_clobkit_is_light() -> None:
    loaded = _modules_after("import clobkit")
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY]
    assert heavy == []


def test_compiled_twin_does_not_import_the_pure_one() -> None:
    pytest.importorskip("clobkit.core._core_c")
    loaded = _modules_after("import clobkit.core._core_c")
    assert "clobkit.core.pure" not in loaded
    assert "Crypto" not in {m.split(".")[0] for m in loaded}


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("Client", "httpx"),
        ("AsyncClient", "httpx"),
        ("OrderSigner", "clobkit.signing"),
        ("SignedOrder", "clobkit.signing"),
        ("WalletInfo", "msgspec"),
    ],
)
def test_lazy_names_load_on_first_use(name: str, module: str) -> None:
    loaded = _modules_after(f"import clobkit; clobkit.{name}")
    assert module in loaded


def test_unknown_attribute_is_an_attribute_error() -> None:
    import clobkit

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        clobkit.nope  # noqa: B018
    assert {"Client", "OrderSigner"} <= set(dir(clobkit))


# -- what keeps the import light ------------------------------------------------------
# ``import clobkit`` runs without typing, re, fractions, enum, contextlib or
# functools (docs/development.md, "Import time"): each is a few milliseconds of
# every start. A structural test: it names modules, never a time.
NOT_AT_IMPORT = ("typing", "re", "fractions", "enum", "contextlib", "functools")


def test_import_clobkit_leaves_out_the_costly_stdlib() -> None:
    loaded = set(_modules_after("import clobkit"))
    assert sorted(loaded.intersection(NOT_AT_IMPORT)) == []
    # and the core works without them: a limit order's amounts, a salt, a signature
    used = _modules_after(
        "import clobkit; clobkit.limit_amounts('BUY', '0.5', '10'); clobkit.new_salt();"
        " clobkit.signature('secret', 'GET', '/a', 1, 'n')"
    )
    assert sorted(set(used).intersection(NOT_AT_IMPORT)) == []


def test_pure_twin_import_leaves_out_typing_and_fractions() -> None:
    # judged by what clobkit itself imports: pycryptodome, which the pure twin hashes
    # with, imports re and enum itself, and with cffi installed (cryptography brings it)
    # cffi, pycparser and typing too; those are the environment's, not clobkit's
    loaded = set(
        _modules_after("import os; os.environ['CLOBKIT_NO_EXTENSIONS'] = '1'; import clobkit")
    )
    hashing = set(_modules_after("from Crypto.Hash import keccak"))
    assert "clobkit.core.pure" in loaded
    assert sorted((loaded - hashing).intersection(("typing", "fractions"))) == []


def test_lazy_names_still_arrive() -> None:
    import enum
    import pickle
    import typing

    import clobkit
    import clobkit.amounts
    from clobkit.core import spec as _spec
    from clobkit.core import types as _types

    assert clobkit.Side is clobkit.amounts.Side is _types.Side
    assert clobkit.OrderType is clobkit.amounts.OrderType is _types.OrderType
    assert issubclass(clobkit.Side, enum.IntEnum)
    one: int = 1
    assert one == clobkit.Side.SELL
    assert pickle.loads(pickle.dumps(clobkit.OrderType.GTD)) is clobkit.OrderType.GTD
    assert typing.get_args(_spec.SideName) == _spec.SIDES
    assert typing.get_args(_spec.OrderTypeName) == _spec.ORDER_TYPES
    assert typing.get_args(_spec.OrderStatus) == _spec.ORDER_STATUSES
    assert typing.get_args(_spec.OutcomeName) == _spec.OUTCOMES
    for module in (clobkit.amounts, _types, _spec):
        with pytest.raises(AttributeError, match="no attribute 'nope'"):
            module.nope  # noqa: B018


def test_amounts_is_the_named_tuple_typing_would_make() -> None:
    import typing

    from clobkit import Amounts

    class Typed(typing.NamedTuple):
        maker_amount: int
        taker_amount: int

    a = Amounts(1, 2)
    assert a._fields == Typed._fields
    assert tuple(a) == tuple(Typed(1, 2))
    assert a.taker_amount == 2
    assert repr(a) == "Amounts(maker_amount=1, taker_amount=2)"
    assert a._replace(maker_amount=3) == (3, 2)
    assert a._asdict() == {
        "maker_amount": 1,
        "taker_amount": 2,
    }
    assert set(dir(Typed)) - set(dir(Amounts)) <= {"__orig_bases__"}
    assert Amounts.__doc__
    assert "6-decimal" in Amounts.__doc__


# -- the str-method rules that replaced regexes answer as the regexes did --------------
# The regexes are the oracle; hypothesis draws from the whole character range,
# with the grammar's own characters over-weighted so that the edges are reached.
_NUMBER_RE = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]{1,9}))?\Z")
_GRAMMAR = st.sampled_from("0123456789+-.eE _\n\u0660\u00b2\uff11")
_ANY_TEXT = st.one_of(st.text(), st.text(alphabet=_GRAMMAR | st.characters(), max_size=20))


@settings(max_examples=examples(3000))
@given(_ANY_TEXT)
def test_split_number_is_the_number_regex(text: str) -> None:
    from clobkit.core.amounts_pure import split_number

    m = _NUMBER_RE.match(text)
    expected = None if m is None else tuple(g or "" for g in m.groups())
    assert split_number(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "1",
        "+1.5",
        "-.5",
        "5.",
        ".",
        "",
        "+",
        "1e9",
        "1e+123456789",
        "1e1234567890",
        "1E-5",
        "1e",
        "e5",
        "1e5E3",
        "1E5e3",
        "1.2.3",
        "١",
        "1_000",
        " 1",
        "1\n",
        "inf",
        "nan",
        "0x10",
    ],
)
def test_split_number_edges(text: str) -> None:
    from clobkit.core.amounts_pure import split_number

    m = _NUMBER_RE.match(text)
    assert split_number(text) == (None if m is None else tuple(g or "" for g in m.groups()))


_ASCII_EDGES = st.sampled_from("\x00\x1f \x21\x7e\x7f\x80\xa0azAZ09~!/\u0100\U0001f600")
_TOKEN_TEXT = st.one_of(st.text(), st.text(alphabet=_ASCII_EDGES | st.characters(), max_size=12))


@settings(max_examples=examples(3000))
@given(_TOKEN_TEXT)
def test_visible_ascii_and_letters_are_their_regexes(text: str) -> None:
    from clobkit.core import parse as _parse

    assert _parse._visible_ascii(text) == bool(re.match(r"[\x21-\x7e]+\Z", text))
    assert _parse._ascii_letters(text) == bool(re.match(r"[A-Za-z]+\Z", text))


def test_record_refuses_what_a_namedtuple_would_lose() -> None:
    from clobkit.core.types import record

    if TYPE_CHECKING:
        from typing import NamedTuple
    else:
        from clobkit.core.types import NamedTuple  # object, as _types itself uses it

    with pytest.raises(TypeError, match=r"fields only, not \['total'\]"):

        @record
        class WithMethod(NamedTuple):
            a: int

            def total(self) -> int:
                return self.a

    @record
    class Plain(NamedTuple):
        """Doc."""

        a: int
        b: str

    assert Plain(1, "x") == (1, "x")
    assert Plain._fields == ("a", "b")
    assert Plain.__doc__ == "Doc."


# A finder ahead of the real ones answers for ``clobkit.core._core_c``: it is missing,
# or there but fails to load (a broken build's missing symbol, an import inside it)
_FAKE_CORE = """
import sys
from typing import TYPE_CHECKING
ERRORS = {{
    "missing": ModuleNotFoundError(
        "No module named 'clobkit.core._core_c'", name="clobkit.core._core_c"
    ),
    "broken": ImportError("undefined symbol: ck_keccak256", name="clobkit.core._core_c"),
    "inner": ModuleNotFoundError("No module named 'clobkit._gone'", name="clobkit._gone"),
}}
class Finder:
    def find_spec(self, name, path=None, target=None):
        if name == "clobkit.core._core_c":
            raise ERRORS[{how!r}]
sys.meta_path.insert(0, Finder())
import clobkit, clobkit.cli
print(clobkit.IMPLEMENTATION)
clobkit.cli.main(["--version"])
"""


def _import_with_core(how: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CLOBKIT_NO_EXTENSIONS"}
    return subprocess.run(
        [sys.executable, "-c", _FAKE_CORE.format(how=how)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_a_missing_compiled_core_falls_back_to_the_pure_one() -> None:
    done = _import_with_core("missing")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "python"
    assert "(pure-Python core)" in done.stdout


@pytest.mark.parametrize("how", ["broken", "inner"])
def test_a_compiled_core_that_does_not_load_is_an_error(how: str) -> None:
    done = _import_with_core(how)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "ImportError: clobkit's compiled core clobkit.core._core_c is installed but does not load ("
    )
    assert ("undefined symbol" if how == "broken" else "clobkit._gone") in last
