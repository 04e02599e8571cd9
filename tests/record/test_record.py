"""clobkit.record: every update received reaches a file, across rotations, reconnects and
cancellation (Ctrl-C); the rows read back are the books the sandbox published."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from clobkit.client._stream import parse_message
from clobkit.errors import ValidationError
from clobkit.record import (
    BOOK,
    GAP,
    SNAPSHOT,
    RecordedMarket,
    Recorder,
    RecordingWriter,
    decode_book_frame,
    iter_rows,
    read_events,
    read_markets,
    recording_files,
)

from .conftest import client, config, move_prices, moving_market, record_while, sandbox_module


def _check_complete(directory: Path, recorder: Recorder) -> list[Any]:
    rows = list(iter_rows(directory))
    assert [r.seq for r in rows] == list(range(len(rows)))  # nothing lost between files
    assert sum(r.kind == BOOK for r in rows) == recorder.stats.updates
    assert len(rows) == recorder.stats.rows
    assert not list(directory.glob("*.part"))
    return rows


async def test_every_update_received_is_written_across_rotations_and_cancel(
    tmp_path: Path,
) -> None:
    with sandbox_module.serve_in_thread(config()) as sb:
        market = moving_market(sb)
        recorder = await record_while(
            sb, tmp_path, [market], lambda: move_prices(sb, market), rotate_seconds=0.05
        )
        published = sb.engine.orderbook(sb.engine.markets[market].fx.token_id_a)
    rows = _check_complete(tmp_path, recorder)
    assert recorder.stats.files == len(recording_files(tmp_path)) > 3  # it rotated
    assert recorder.stats.updates >= 2 * 25  # both tokens of every price move
    assert {r.kind for r in rows} == {SNAPSHOT, BOOK}
    token_a = read_markets(tmp_path)[0].token_id_a
    last = [r for r in rows if r.token_id == token_a][-1]
    assert last.bids == [(str(lv.price), str(lv.size)) for lv in published.bids]
    assert last.asks == [(str(lv.price), str(lv.size)) for lv in published.asks]
    assert all(r.service_ms is not None and r.recv_ns > 0 for r in rows)


async def test_rotation_by_size_bounds_what_is_held(tmp_path: Path) -> None:
    with sandbox_module.serve_in_thread(config()) as sb:
        market = moving_market(sb)
        recorder = await record_while(
            sb, tmp_path, [market], lambda: move_prices(sb, market, 10), rotate_bytes=1000
        )
    _check_complete(tmp_path, recorder)
    assert recorder.stats.files >= 8  # a file every couple of books


async def test_a_reconnect_writes_a_gap_and_fresh_snapshots(tmp_path: Path) -> None:
    with sandbox_module.serve_in_thread(config()) as sb:
        market = moving_market(sb)

        async def during() -> None:
            await move_prices(sb, market, 3)
            await asyncio.to_thread(sb.drop_streams)
            await asyncio.sleep(0.5)  # reconnected
            await move_prices(sb, market, 3, seed=2)

        recorder = await record_while(sb, tmp_path, [market], during, outcomes="a")
    rows = _check_complete(tmp_path, recorder)
    kinds = [r.kind for r in rows]
    assert kinds.count(GAP) == recorder.stats.gaps == 1
    after = kinds[kinds.index(GAP) + 1]
    assert after == SNAPSHOT  # the book read again over REST right after the marker
    assert rows[kinds.index(GAP)].token_id is None


async def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with sandbox_module.serve_in_thread(config()) as sb:
        async with client(sb) as c:
            with pytest.raises(ValidationError, match="markets"):
                Recorder(c, tmp_path, [])
            from clobkit.record import resolve_markets

            markets = await resolve_markets(c, market_ids=[moving_market(sb)])
            with pytest.raises(ValidationError, match="outcomes"):
                Recorder(c, tmp_path, markets, outcomes="c")
            # "30" raised TypeError; NaN, inf and 1e400 were taken (no time rotation)
            for odd in (0, -1, "30", float("nan"), float("inf"), 10**400, True):
                with pytest.raises(ValidationError, match="rotate_seconds"):
                    Recorder(c, tmp_path, markets, rotate_seconds=odd)
            for odd in (0, 1.5, "1", True):
                with pytest.raises(ValidationError, match="rotate_bytes"):
                    Recorder(c, tmp_path, markets, rotate_bytes=odd)
            for odd in (float("nan"), "5", -1, 0):  # NaN recorded for ever, "5" a TypeError
                with pytest.raises(ValidationError, match="duration"):
                    await Recorder(c, tmp_path / "d", markets).run(odd)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"markets\.json"):
        read_markets(tmp_path / "nothing")
    (tmp_path / "markets.json").write_text("{}")
    with pytest.raises(ValidationError, match="already holds a recording"):
        Recorder(c, tmp_path, markets).write_markets()


def _clobkit(*args: str, **kwargs: Any) -> subprocess.Popen[str]:
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-m", "clobkit", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        **kwargs,
    )


def test_record_command_needs_markets(tmp_path: Path) -> None:
    proc = _clobkit("record", "--out", str(tmp_path), "--base-url", "http://127.0.0.1:9")
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "--market" in err


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--duration", "nan"),
        ("--duration", "-1"),
        ("--rotate-mb", "inf"),
        ("--rotate-seconds", "0"),
    ],
)
def test_record_command_refuses_odd_numbers_before_it_connects(
    tmp_path: Path, flag: str, value: str
) -> None:
    # a NaN --duration recorded for ever (its deadline never came); an infinite
    # --rotate-mb raised OverflowError once connected
    proc = _clobkit("record", "--market", "m", "--out", str(tmp_path / "r"), flag, value)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert f"{flag}: must be a positive finite number" in err
    assert "Traceback" not in err


def test_a_relative_directory_is_never_read_as_a_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pyarrow took a path that did not exist yet for a URI: 'nba:live' failed once the
    # rows were held (every one lost), and 'file:/elsewhere' wrote elsewhere
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for name in ("nba:live", f"file:{elsewhere}"):
        writer = RecordingWriter(Path(name), [RecordedMarket("m", None, None, "ta", "tb")])
        writer.write_markets()
        writer.add(BOOK, "ta", {"bids": [{"price": "0.5", "size": "12"}], "asks": []}, 1)
        asyncio.run(writer.flush())
        assert [r.token_id for r in iter_rows(Path(name))] == ["ta"]
    assert list(elsewhere.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_record_command_stopped_keeps_every_update(tmp_path: Path, sig: signal.Signals) -> None:
    """clobkit record, stopped by SIGINT (Ctrl-C) or SIGTERM (a service manager, a
    timeout) mid-stream: exit 0, the summary's count of updates is the count of rows
    of the files. SIGTERM killed it with the rows it held."""
    with sandbox_module.serve_in_thread(config()) as sb:
        market = moving_market(sb)
        user = sb.users[2]
        stop = threading.Event()

        def mover() -> None:
            k = 0
            while not stop.is_set():
                sb.set_price(market, str(30 + k % 40) + "e-2")
                k += 1
                time.sleep(0.005)

        thread = threading.Thread(target=mover)
        proc = _clobkit(
            "record",
            "--market",
            market,
            "--out",
            str(tmp_path),
            "--rotate-seconds",
            "0.1",
            "--base-url",
            sb.base_url,
            "--api-key",
            user.api_key,
            "--api-secret",
            user.api_secret,
        )
        try:
            for _ in range(200):
                if len(recording_files(tmp_path)) >= 3:
                    break
                if not thread.is_alive() and (tmp_path / "markets.json").exists():
                    thread.start()
                time.sleep(0.05)
            proc.send_signal(sig)  # mid-stream: updates still arriving
            out, err = proc.communicate(timeout=60)
        finally:
            stop.set()
            if thread.is_alive():
                thread.join()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, err
    line = next(x for x in out.splitlines() if x.startswith("recorded: "))
    updates = int(line.split("updates ")[1].split(" ")[0].replace(",", ""))
    rows = list(iter_rows(tmp_path))
    assert updates > 20
    assert sum(r.kind in (BOOK, SNAPSHOT) for r in rows) == updates
    assert [r.seq for r in rows] == list(range(len(rows)))
    # one count: the replay's (its banner's, GET /admin/replay's) and the stale it left out
    from clobkit.sandbox.replay import Replay

    replay = Replay(sandbox_module.Engine(config()), tmp_path)
    assert replay.recorded == updates
    assert replay.status()["recorded"] == updates  # GET /admin/replay's figure


def test_numbers_on_the_wire_are_kept_as_their_text(tmp_path: Path) -> None:
    """A service sending prices and sizes as JSON numbers: the file holds their text."""
    market = RecordedMarket("m", None, None, "ta", "tb")
    writer = RecordingWriter(tmp_path, [market])
    writer.write_markets()
    writer.add(BOOK, "ta", {"bids": [{"price": 0.5, "size": 12}], "asks": []}, 1)
    writer.add(BOOK, "tb", {"bids": "garbage", "asks": [{"price": "0.6", "size": "3"}, 7]}, 2)
    writer.add(GAP, None, None, 3)
    asyncio.run(writer.flush())
    rows = list(iter_rows(tmp_path))
    assert [(r.kind, r.market_id, r.bids, r.asks) for r in rows] == [
        (BOOK, "m", [("0.5", "12")], []),
        (BOOK, "m", [], [("0.6", "3")]),
        (GAP, None, [], []),
    ]


def test_book_frames_are_decoded_straight_into_rows_and_others_left_to_the_stream(
    tmp_path: Path,
) -> None:
    """decode_book_frame (the recorder's Stream.decode) reads a book frame as the service
    sends it, skipping fields no row keeps; any other frame goes to parse_message, whose
    dict the writer turns into the same row."""
    book = {
        "asset_id": "ta",
        "bids": [{"price": "0.45", "size": "10.5"}, {"price": "0.44", "size": "3"}],
        "asks": [{"price": "0.47", "size": "1"}],
        "updated_at_ms": 1_764_547_200_123,
        "hash": "x",
    }
    envelope = {"type": "data", "topic": "market:ta:book"}
    frame = json.dumps({**envelope, "data": book}).encode()
    message = decode_book_frame(frame)
    assert message is not None
    assert (message.type, message.topic) == ("data", "market:ta:book")
    for other in (
        json.dumps({**envelope, "data": {**book, "bids": [{"price": 0.45, "size": 1}]}}),
        json.dumps({**envelope, "data": {**book, "bids": None}}),
        json.dumps({**envelope, "data": {**book, "updated_at_ms": True}}),
        json.dumps({"type": "subscribed", "topics": ["t"]}),
        json.dumps({"type": "data", "topic": "user:u:orders", "data": {"id": "o", "x": [[[]]]}}),
        json.dumps({"type": "data", "topic": "user:u:orders", "data": {"bids": [], "asks": []}}),
        json.dumps({"type": "data", "topic": "market:ta:book", "data": {"bids": []}}),
        '{"type": "data", "topic": "t", "data": ' + "[" * 5000 + "]" * 5000 + "}",
        "not json",
    ):
        assert decode_book_frame(other.encode()) is None, other
    assert decode_book_frame(b'{"type": "data", "topic": "\xff", "data": {}}') is None
    writer = RecordingWriter(tmp_path, [RecordedMarket("m", None, None, "ta", "tb")])
    writer.write_markets()
    writer.add(BOOK, "ta", message.data, 1)
    writer.add(BOOK, "ta", parse_message(frame).data, 2)  # the same book, decoded as dicts
    asyncio.run(writer.flush())
    first, second = list(iter_rows(tmp_path))
    assert first.bids == [("0.45", "10.5"), ("0.44", "3")]
    assert first.asks == [("0.47", "1")]
    assert first.service_ms == book["updated_at_ms"]
    assert (second.bids, second.asks, second.service_ms) == (
        first.bids,
        first.asks,
        1_764_547_200_123,
    )
    assert writer.stats.lag_ms == 2 // 1_000_000 - 1_764_547_200_123


def test_a_recording_of_format_1_has_no_events(tmp_path: Path) -> None:
    market = {
        "market_id": "m",
        "event_id": None,
        "question": None,
        "token_id_a": "a",
        "token_id_b": "b",
    }
    (tmp_path / "markets.json").write_text(json.dumps({"format": 1, "markets": [market]}))
    assert read_markets(tmp_path) == [RecordedMarket("m", None, None, "a", "b")]
    assert read_events(tmp_path) == []
    (tmp_path / "markets.json").write_text(json.dumps({"markets": [{**market, "new": 1}]}))
    with pytest.raises(ValidationError, match=r"markets\.json"):
        read_markets(tmp_path)
