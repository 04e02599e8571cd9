"""The pyarrow CSV path of ``clobkit order-ids`` gives the exact reader's bytes and messages.

Hypothesis writes CSV texts (quoted and unquoted fields, LF/CRLF/lone CR, a
BOM, blank and whitespace-only lines, rows of too few or many fields,
``"12"3``, embedded quotes and commas, non-ASCII, bad values, rows
``POST /orders/raw`` refuses) and each is run twice: through the fast path
with tiny blocks (so fast and fallback blocks mix) and through the exact
reader alone (``ENABLED = False``). Output bytes, the ``line N: reason``
messages, the counts and any whole-input error must be equal; ids of clean
files are checked against eth-account.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clobkit.cli.orderids.csv_fast as csvfast
from clobkit.cli.orderids.run import InputError, run

from ..conftest import examples
from ..core.oracle import eth_account_order_id
from .conftest import TOKEN, WALLET
from .test_cli_order_ids import orders

pytest.importorskip("pyarrow")


def _run(tmp: Path, text: bytes, *, fast: bool, block: int, monkeypatch: Any) -> tuple[Any, ...]:
    """(output bytes, messages, written, rejected, error) of one run."""
    monkeypatch.setattr(csvfast, "ENABLED", fast)
    monkeypatch.setattr(csvfast, "BLOCK", block)
    (tmp / "w.json").write_text(json.dumps(WALLET))
    src, dst = tmp / "in.csv", tmp / f"out-{fast}.csv"
    src.write_bytes(text)
    dst.unlink(missing_ok=True)
    said: list[str] = []
    try:
        summary = run(str(tmp / "w.json"), str(src), str(dst), threads=2, report=said.append)
    except InputError as exc:
        return None, said, 0, 0, str(exc).replace(str(src), "IN")
    return dst.read_bytes(), said, summary.written, summary.rejected, None


def _same(tmp: Path, text: bytes, block: int, monkeypatch: Any) -> tuple[Any, ...]:
    fast = _run(tmp, text, fast=True, block=block, monkeypatch=monkeypatch)
    exact = _run(tmp, text, fast=False, block=block, monkeypatch=monkeypatch)
    assert fast == exact
    return fast


GOOD = [TOKEN, "9295000", "16900000", "BUY", "184632901377"]
SELL = [str(10**70 + 3), "16900000", "9295001", "sell", "0"]


def _quote(value: str, how: int) -> str:
    if how == 0:
        return value
    if how == 1:
        return '"' + value.replace('"', '""') + '"'
    if how == 2:
        return f" {value}\t"  # spaces around: refused by both readers, as the service does
    if how == 3:  # "92"95000: malformed to Python's csv, 9295000 to pyarrow's reader
        return f'"{value[:2]}"{value[2:]}'
    return f'"{value}" '  # a space after the closing quote: the same trap


OPTIONAL = {  # cells of the optional columns, empty ones included (they read as the default)
    "neg_risk": ["true", "false", "1", "0", "", "TRUE", "maybe"],
    "fee_rate_bps": ["0", "30", "", "007"],
    "nonce": ["0", "5", ""],
}
fields = st.sampled_from(
    [*GOOD, *SELL, "", "-5", "1" * 80, "12\u00a0", "\u00a012", "1\x0b", "x,y", 'a"b', "BUY "]
)
# mostly clean (0-2) with now and then a quoting trap (3, 4)
how = st.sampled_from([0, 0, 0, 1, 1, 1, 2, 3, 4])
good_row = st.tuples(st.sampled_from([GOOD, SELL]), st.lists(how, min_size=6, max_size=6))


@st.composite
def csv_texts(draw: st.DrawFn) -> bytes:
    extra = draw(st.booleans())  # a free-text column besides the order's
    header = ["token_id", "maker_amount", "taker_amount", "side", "salt"]
    optional = draw(st.sampled_from([[], ["neg_risk"], ["fee_rate_bps", "nonce", "neg_risk"]]))
    header = header + optional + ["note"] * extra
    lines = [",".join(header)]
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.integers(0, 9))
        if kind <= 4:  # a valid row, quoted or not
            values, how = draw(good_row)
            row = [_quote(v, h) for v, h in zip(values, how, strict=False)]
            for name in optional:
                cell = draw(st.sampled_from(OPTIONAL[name]))
                row.append(_quote(cell, draw(st.sampled_from([0, 1, 2]))))
            if extra:
                note = draw(st.sampled_from(["ok", "a,b", 'say "hi"', "é", ""]))
                row.append(_quote(note, how[5]))
            lines.append(",".join(row))
        elif kind == 5:  # any fields, possibly too few or too many
            n = draw(st.integers(1, len(header) + 1))
            lines.append(",".join(draw(st.lists(fields, min_size=n, max_size=n))))
        else:  # the traps
            lines.append(
                draw(
                    st.sampled_from(
                        [
                            "",
                            "   ",
                            '""',
                            f'"{TOKEN}"3,1,2,BUY,3',
                            f'"{TOKEN},9295000,16900000,BUY,5',
                            f"{TOKEN},9295000,16900000,BUY,5\r{TOKEN},1,2,SELL,4",
                            f"{TOKEN},16900000,9295000,BUY,5",  # the ratio rule
                            f"{TOKEN},9295000,16900000,BUY,{10**12 + 1}",  # the salt range
                            f"{TOKEN},9295000,16900000,HOLD,5",
                            f"{TOKEN},9295000,16900000,BUY,5," + "x" * draw(st.integers(0, 3)),
                        ]
                    )
                )
            )
    ends = draw(st.sampled_from(["\n", "\r\n", "mixed"]))
    out = ""
    for k, line in enumerate(lines):
        out += line + (("\n", "\r\n")[k % 2] if ends == "mixed" else ends)
    if draw(st.booleans()):
        out = out[: -len(ends) if ends != "mixed" else -1].rstrip("\r")  # no final line end
    bom = "\ufeff" if draw(st.booleans()) else ""
    return (bom + out).encode("utf-8")


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=csv_texts(), block=st.sampled_from([1, 40, 200, 1 << 20]))
def test_fast_path_equals_the_exact_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: bytes, block: int
) -> None:
    _same(tmp_path, text, block, monkeypatch)


def _rows(rows: list[dict[str, Any]], quoted: bool, crlf: bool) -> bytes:
    head = ["token_id", "maker_amount", "taker_amount", "side", "salt", "note"]
    q = (lambda v: '"' + str(v).replace('"', '""') + '"') if quoted else str
    end = "\r\n" if crlf else "\n"
    lines = [",".join(map(q, head))]
    for i, row in enumerate(rows):
        note = f'order {i}, "kept"' if quoted else f"order {i}"
        lines.append(",".join(map(q, [*row.values(), note])))
    return ("\ufeff" + end.join(lines) + end).encode()


@pytest.mark.parametrize("quoted", [True, False], ids=["quoted", "plain"])
@pytest.mark.parametrize("crlf", [True, False], ids=["crlf", "lf"])
def test_clean_files_take_the_fast_path_and_match_eth_account(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quoted: bool, crlf: bool
) -> None:
    """No block of a clean file falls back, and sampled ids equal eth-account's."""
    fallbacks: list[int] = []
    block = csvfast.FastCsv.block

    def spy(self: csvfast.FastCsv, data: bytes) -> Any:
        result = block(self, data)
        fallbacks.append(result is None)
        return result

    monkeypatch.setattr(csvfast.FastCsv, "block", spy)
    rows = orders(3_000)
    out, said, written, rejected, error = _same(
        tmp_path, _rows(rows, quoted, crlf), 4096, monkeypatch
    )
    assert (written, rejected, error, said) == (3_000, 0, None, [])
    assert len(fallbacks) > 10
    assert not any(fallbacks)
    lines = out.decode().split("\n")
    assert lines[0].endswith(",order_id")
    assert lines[-1] == ""
    for i in range(0, len(rows), 293):
        row = rows[i]
        order = {k: int(row[k]) for k in ("token_id", "maker_amount", "taker_amount", "salt")}
        order.update(side=0 if row["side"] == "BUY" else 1, fee_rate_bps=0, nonce=0, expiration=0)
        assert lines[i + 1].endswith("," + eth_account_order_id(WALLET, order, False))


@pytest.mark.parametrize(
    ("line", "message", "written"),
    [
        (f'"{TOKEN}"3,9295000,16900000,BUY,5', "line 3: malformed CSV (',' expected", 2),
        ("", None, 2),  # a blank line is no row, and is counted
        (f"{TOKEN},9295000,16900000,BUY", "line 3: expected 5 fields, got 4", 2),
        (f"{TOKEN},9295000,16900000,BUY,5,6", "line 3: expected 5 fields, got 6", 2),
        (",".join(GOOD) + "\r" + ",".join(GOOD), None, 4),  # a lone CR ends a line too
    ],
)
def test_the_traps_are_reported_as_the_exact_reader_does(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    line: str,
    message: str | None,
    written: int,
) -> None:
    """pyarrow would read ``"12"3`` as ``123`` and skip blank lines: the exact reader decides."""
    good = ",".join(GOOD)
    text = f"token_id,maker_amount,taker_amount,side,salt\n{good}\n{line}\n{good}\n".encode()
    out, said, got, _, error = _same(tmp_path, text, 1 << 20, monkeypatch)
    assert error is None
    if message is None:
        assert said == []
    else:
        assert [s[: len(message)] for s in said] == [message]
    assert got == written
    assert out.count(b"\n") == 1 + written


def test_blocks_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory follows the block, not the file: no block is over BLOCK bytes plus one line."""
    sizes: list[int] = []
    block = csvfast.FastCsv.block

    def spy(self: csvfast.FastCsv, data: bytes) -> Any:
        sizes.append(len(data))
        return block(self, data)

    monkeypatch.setattr(csvfast.FastCsv, "block", spy)
    text = _rows(orders(2_000), True, False)
    _, _, written, _, _ = _run(tmp_path, text, fast=True, block=10_000, monkeypatch=monkeypatch)
    longest = max(map(len, text.split(b"\n")))
    assert written == 2_000
    assert len(sizes) > 10
    assert max(sizes) <= 10_000 + longest
    assert sum(sizes) == len(text) - text.index(b"\n") - 1  # every byte after the header once


def test_non_utf8_input_is_the_same_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = ",".join(GOOD).encode()
    text = b"token_id,maker_amount,taker_amount,side,salt\n" + good + b"\n\xff" + good + b"\n"
    _, _, _, _, error = _same(tmp_path, text, 1 << 20, monkeypatch)
    assert error == "IN is not UTF-8 text (invalid start byte)"


@pytest.mark.parametrize(
    ("items", "typ"),
    [
        ([0, 1, 1, 0], "int8"),
        ([0, 10**12, 2**64 - 1], "uint64"),
        ([-(2**63), 5], "int64"),
        ([True, False, True] * 5, "bool_"),
        (["0x" + "ab" * 32, "", "é,\n"], "string"),
        ([",", "\n"], "large_string"),
        ([], "string"),
    ],
)
def test_arrow_values_equal_pa_array(items: list[Any], typ: str) -> None:
    """The buffer-built arrays (no pandas probe) equal ``pa.array``'s."""
    import pyarrow as pa

    from clobkit.core.arrow_values import scalar, values

    t = getattr(pa, typ)()
    assert values(pa, items, t).equals(pa.array(items, t))
    if items:
        assert scalar(pa, items[-1], t) == pa.scalar(items[-1], t)


def test_an_existing_order_id_column_is_replaced_as_the_exact_reader_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows are rewritten then (the fast path only appends): every block goes the exact way."""
    good, sell = ",".join(GOOD), ",".join(SELL)
    text = (
        "token_id,maker_amount,taker_amount,side,salt,order_id\r\n"
        f'{good},old\r\n"{TOKEN}"3,1,2,BUY,3,x\r\n\r\n{sell},"stale, quoted"\r\n'
    ).encode()
    out, said, written, rejected, error = _same(tmp_path, text, 20, monkeypatch)
    assert (written, rejected, error) == (2, 1, None)
    assert said[0].startswith("line 3: malformed CSV")
    assert out.startswith(b"token_id,maker_amount,taker_amount,side,salt,order_id\n")
    assert b"old" not in out
    assert b"stale" not in out


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_is_read_in_blocks(tmp_path: Path) -> None:
    """The block reader never seeks or asks the position: a pipe is an INPUT like a file."""
    import os
    import threading

    rows = orders(300)
    text = _rows(rows, True, False)
    (tmp_path / "w.json").write_text(json.dumps(WALLET))
    pipe = tmp_path / "in.csv"
    os.mkfifo(pipe)
    writer = threading.Thread(target=pipe.write_bytes, args=(text,))
    writer.start()
    summary = run(str(tmp_path / "w.json"), str(pipe), str(tmp_path / "out.csv"), threads=2)
    writer.join()
    assert summary.written == 300
    assert (tmp_path / "out.csv").read_bytes().count(b"\n") == 301


@settings(max_examples=examples(300), deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=40),
    last=st.booleans(),
    block=st.integers(1, 64),
    rest=st.binary(max_size=8).map(lambda b: b.replace(b"\n", b"")),
)
def test_blocks_cut_whole_lines_and_keep_every_byte(
    lines: list[bytes], last: bool, block: int, rest: bytes
) -> None:
    """``blocks``: every byte once, in order; each block whole lines (the last one may
    end without a newline), within ``BLOCK`` bytes unless it is one longer line; each
    offset the bytes read up to the block's end."""
    data = b"\n".join(lines) + (b"\n" if last and lines else b"")
    saved = csvfast.BLOCK
    csvfast.BLOCK = block
    try:
        got = list(csvfast.blocks(io.BytesIO(data), rest, 7))
    finally:
        csvfast.BLOCK = saved
    assert b"".join(b for b, _ in got) == rest + data
    offset = 7 - len(rest)
    for k, (piece, at) in enumerate(got):
        assert piece
        offset += len(piece)
        assert at == offset
        if k < len(got) - 1:
            assert piece.endswith(b"\n")
        assert len(piece) <= block or piece.count(b"\n") <= 1
