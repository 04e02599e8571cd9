"""``--state FILE`` under hostile and unlucky conditions: bad paths, damaged or foreign files,
another clobkit's files, another configuration, a kill in the middle of a burst of orders.

Every refusal is one ``StateFileError`` line naming the file and what is wrong
(``error: ...`` and exit 2 from the command); real files, real sandboxes.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from clobkit import RequestSigner
from clobkit.core.spec import CANCELLED
from clobkit.sandbox import Engine, Sandbox, serve_in_thread
from clobkit.sandbox.config import DEFAULT_USERS
from clobkit.sandbox.store import SCHEMA_VERSION, StateFileError

from .conftest import TRADER, book_market
from .signed import PREFIX, SignedClient, dumps, loads
from .state_files import base_state, change
from .test_persistence import start_cli


def refusal(path: str | Path, config: Any = None) -> str:
    """The one-line refusal of a sandbox started on ``path``."""
    with pytest.raises(StateFileError) as caught:
        Sandbox(config, state=path).close_state()
    text = str(caught.value)
    assert "\n" not in text, text
    return text


def cli_refusal(state: str, cwd: Path) -> str:
    """``error: ...`` of ``python -m clobkit.sandbox --state STATE``: exit 2, one line."""
    env = dict(os.environ)
    src = str(Path(__file__).parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-m", "clobkit.sandbox", "--port", "0", "--state", state],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=env,
    )
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: state file "), result.stderr
    return lines[0]


# -- the path ----------------------------------------------------------------------


def test_a_directory_is_named_as_one(tmp_path: Path) -> None:
    assert refusal(tmp_path) == f"state file {tmp_path}: it is a directory, not a file"


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "deeper" / "state.db"
    assert refusal(path) == (
        f"state file {path}: its directory {tmp_path / 'nope' / 'deeper'} does not exist"
    )
    file = tmp_path / "plain"
    file.write_text("x")
    assert (
        refusal(file / "state.db") == f"state file {file / 'state.db'}: {file} is not a directory"
    )
    assert not (tmp_path / "nope").exists()


def test_an_empty_path_and_sqlites_memory_name_are_refused(tmp_path: Path) -> None:
    assert refusal("") == "state file '': the path is empty"
    assert "in-memory database" in refusal(":memory:")
    assert "NUL" in refusal(str(tmp_path / "a\0b"))


def test_the_cli_names_a_bad_path(tmp_path: Path) -> None:
    assert cli_refusal(str(tmp_path), tmp_path).endswith("it is a directory, not a file")
    assert cli_refusal("no/such/dir/s.db", tmp_path) == (
        f"error: state file no/such/dir/s.db: its directory {tmp_path}/no/such/dir does not exist"
    )


def _privileged(probe: Path) -> bool:
    """True when file modes do not bind this process (root with CAP_DAC_OVERRIDE)."""
    probe.write_text("x")
    probe.chmod(0o444)
    try:
        return os.access(probe, os.W_OK)
    finally:
        probe.chmod(0o644)
        probe.unlink()


def test_a_read_only_file_or_directory_is_named(tmp_path: Path) -> None:
    ro = tmp_path / "ro.db"
    base_state(ro)
    ro.chmod(0o444)
    if _privileged(tmp_path / "probe"):
        # file modes do not bind this process (root): the file opens as any other, never
        # refused by a look at its mode (the permission is only read once SQLite failed)
        Sandbox(None, state=ro).close_state()
        return
    assert refusal(ro) == f"state file {ro}: it is read-only (the sandbox writes to it)"
    ro.chmod(0o000)
    assert refusal(ro) == f"state file {ro}: it cannot be read (permission denied)"
    folder = tmp_path / "locked"
    folder.mkdir()
    base_state(folder / "s.db")
    folder.chmod(0o555)
    try:
        for name in ("s.db", "new.db"):
            assert refusal(folder / name) == (
                f"state file {folder / name}: its directory {folder} is not writable"
                f" (SQLite keeps {name}-wal beside the file)"
            )
    finally:
        folder.chmod(0o755)


ODD_NAMES = [
    "sp ace.db",
    "uni-é✓😀.db",
    "q?mode=ro.db",
    "pct%20.db",
    "hash#x.db",
    "file:x.db",  # SQLite reads a name starting "file:" as a URI: it opened x.db
    "file:y.db?mode=memory",
    "-dash.db",
    "new\nline.db",
]


@pytest.mark.parametrize("name", ODD_NAMES)
def test_odd_file_names_are_the_file_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A relative name with URI characters is that file in the working directory, and keeps
    the state across a restart."""
    monkeypatch.chdir(tmp_path)
    with serve_in_thread(state=name) as sb:
        market = book_market(sb.engine)
        order = sb.engine.place_order(TRADER, {"market_id": market.id, "outcome": "a", "amount": 5})
    assert sorted(os.listdir(tmp_path)) == [name]
    with serve_in_thread(state=name) as sb:
        assert order.order_id in sb.engine.orders


def test_a_refusal_naming_an_odd_path_is_one_line(tmp_path: Path) -> None:
    odd = tmp_path / "new\nline\tx"
    odd.mkdir()
    assert refusal(odd) == f"state file {str(odd)!r}: it is a directory, not a file"
    assert refusal(odd / "more" / "s.db") == (
        f"state file {str(odd / 'more' / 's.db')!r}: its directory {str(odd / 'more')!r}"
        " does not exist"
    )


# -- the file ----------------------------------------------------------------------


def test_a_truncated_file_is_damaged_not_foreign(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    base_state(path)
    data = path.read_bytes()
    for cut in (4096 * 3 + 100, len(data) // 2, len(data) - 4096):
        path.write_bytes(data[:cut])
        text = refusal(path)
        assert text.startswith(f"state file {path} is damaged"), text
        assert "not a clobkit" not in text


def test_a_file_of_a_newer_clobkit_says_so(tmp_path: Path) -> None:
    """A newer format most likely has another schema: the version is told, not "damaged"."""
    path = tmp_path / "state.db"
    base_state(path)
    newer = str(int(SCHEMA_VERSION) + 1)
    change(
        path,
        f"UPDATE meta SET value = '{newer}' WHERE key = 'schema'",
        "CREATE TABLE fills (data TEXT)",
        "ALTER TABLE orders ADD COLUMN venue TEXT",
    )
    assert refusal(path) == (
        f"state file {path} was written by a newer clobkit (schema {newer};"
        f" this sandbox reads schema {SCHEMA_VERSION}): upgrade clobkit or use a new file"
    )
    change(path, "UPDATE meta SET value = '0' WHERE key = 'schema'")
    assert refusal(path) == f"state file {path} has schema '0', this sandbox reads '1'"


def test_a_damaged_identity_is_named(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    base_state(path)
    change(path, """UPDATE meta SET value = '{"seed": 0}' WHERE key = 'identity'""")
    assert "missing required field `users`" in refusal(path)
    change(path, "DELETE FROM meta WHERE key = 'identity'")
    assert refusal(path) == f"state file {path} is damaged: meta: its identity row is missing"


# -- the configuration --------------------------------------------------------------


def _config(**extra: Any) -> dict[str, Any]:
    return {"users": [u.to_dict() for u in DEFAULT_USERS], **extra}


def test_another_extra_games_is_named(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    Sandbox(_config(extra_games=3), state=path).close_state()
    assert refusal(path, _config(extra_games=5)) == (
        f"state file {path} was written with extra_games 3, the config has extra_games 5"
    )
    assert "extra_games 3, the config has extra_games 0" in refusal(path, _config())
    assert "seed 0, the config has seed 4" in refusal(path, _config(seed=4, extra_games=3))
    Sandbox(_config(extra_games=3), state=path).close_state()  # the original config still reads


def test_a_file_without_extra_games_in_its_identity_still_reads(tmp_path: Path) -> None:
    """Files written before extra_games was recorded: told apart by the markets alone."""
    path = tmp_path / "state.db"
    Sandbox(_config(), state=path).close_state()
    change(
        path, "UPDATE meta SET value = json_remove(value, '$.extra_games') WHERE key = 'identity'"
    )
    Sandbox(_config(), state=path).close_state()
    assert refusal(path, _config(extra_games=2)) == (
        f"state file {path} was written for other markets"
        " (another extra_games setting or fixture version)"
    )


# -- a kill in the middle of a burst ----------------------------------------------------


_USERS = [
    {
        "user_id": f"00000000-0000-4000-8000-0000000004{i:02d}",
        "api_key": f"burst-{i}",
        "api_secret": f"burst-secret-{i}",
        "balance": "100000",
    }
    for i in range(4)
]
# A skew window longer than the test: each answered request is replayed after the kill and
# the restart, which a busy machine can stretch past the default 30 s, and the clock's
# refusal comes before the nonce's (the nonce's memory is what this test is about).
_BURST_CONFIG = {
    "users": _USERS,
    "rate_limit_per_minute": None,
    "risk": {"per_minute": None},
    "skew_seconds": 900,
}


class _Answered:
    """Every answered request of the burst: (method, route, headers, body, status, order id)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: list[tuple[str, str, dict[str, str], bytes, int, str | None]] = []
        self.enough = threading.Event()


def _burst_trader(base: str, index: int, markets: list[Any], answered: _Answered) -> None:
    """Orders and cancels at random until the sandbox stops answering."""
    rng = random.Random(index)
    signer = RequestSigner(_USERS[index]["api_key"], _USERS[index]["api_secret"])
    live: list[str] = []
    with httpx.Client(base_url=base, timeout=30) as c:
        while True:
            m = rng.choice(markets)
            fok = {"market_id": m.id, "outcome": "a", "amount": 3}
            body: dict[str, Any] | None = fok
            method, route = "POST", "/orders"
            if rng.random() < 0.6:
                cents = max(1, min(99, (m.mid or 50) + rng.randint(-3, 2)))
                price = str(Decimal(cents) / 100)
                body = {**fok, "order_type": "GTC", "limit_price": price, "amount": 5}
            elif live:
                body, method, route = None, "DELETE", f"/orders/{live.pop()}"
            content = b"" if body is None else dumps(body)
            headers = signer.headers(method, PREFIX + route, content)
            headers["Content-Type"] = "application/json"
            try:
                r = c.request(method, PREFIX + route, headers=headers, content=content)
            except httpx.HTTPError:
                return  # killed
            oid = loads(r.content)["data"]["order_id"] if r.status_code == 201 else None
            if oid is not None and body is not None and "order_type" in body:
                live.append(oid)
            with answered.lock:
                answered.rows.append((method, route, headers, content, r.status_code, oid))
                if len(answered.rows) >= 300:
                    answered.enough.set()


@pytest.mark.slow
def test_a_kill_in_a_burst_of_orders_keeps_every_answer(tmp_path: Path) -> None:
    """SIGKILL while four clients order and cancel: after the restart every answered order
    and cancel is there, every answered request is refused as a replay, money is conserved."""
    path, config = tmp_path / "state.db", tmp_path / "config.json"
    config.write_text(json.dumps(_BURST_CONFIG))
    proc, base = start_cli("clobkit.sandbox", "--config", str(config), "--state", str(path))
    markets = [m for m in Engine(_BURST_CONFIG).markets.values() if m.active and m.mid][:2]
    answered = _Answered()
    threads = [
        threading.Thread(target=_burst_trader, args=(base, i, markets, answered)) for i in range(4)
    ]
    try:
        for th in threads:
            th.start()
        assert answered.enough.wait(120)
    finally:
        proc.send_signal(signal.SIGKILL)  # the clients are still sending
        proc.wait(timeout=15)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        for th in threads:
            th.join(30)
    # one client for the replays: httpx.request makes a client (and its TLS context) each
    # call, 0.5 s apiece on a busy machine
    with serve_in_thread(_BURST_CONFIG, state=path) as sb, httpx.Client() as replay:
        assert sb.engine.check_invariants() == []
        for method, route, headers, content, status, oid in answered.rows:
            if oid is not None:
                assert oid in sb.engine.orders, oid
            if method == "DELETE" and status == 200:
                assert sb.engine.orders[route.rsplit("/", 1)[1]].status == CANCELLED, route
            r = replay.request(
                method, sb.base_url + PREFIX + route, headers=headers, content=content
            )
            assert (r.status_code, loads(r.content)["detail"]) == (401, "nonce already used")
        assert sb.engine.check_invariants() == []


def test_the_base_state_reads(tmp_path: Path) -> None:
    """The file the tests above change is itself fine (so each refusal is the change's)."""
    path = tmp_path / "state.db"
    base_state(path)
    with serve_in_thread(state=path) as sb, SignedClient(sb.base_url, sb.user(TRADER)) as c:
        assert c.get("/wallet").status_code == 200
        assert sb.engine.check_invariants() == []
