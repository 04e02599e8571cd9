"""The ``clobkit`` command: demo, offline order ids, salts, amounts, signed requests, sandbox,
record.

Exit codes: 0 ok, 1 API error or rejected rows, 2 usage. An expected failure
prints one line on stderr (never a traceback). Credentials and URLs come from
``--base-url/--api-key/--api-secret/--clob-url`` or ``CLOBKIT_BASE_URL``,
``CLOBKIT_API_KEY``, ``CLOBKIT_API_SECRET``, ``CLOBKIT_CLOB_URL``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from . import __version__
from ._cli_base import Connection, Failed, Usage
from ._spec import API_PREFIX, SIDES
from .errors import ApiError, ClobkitError, TransportError, ValidationError

if TYPE_CHECKING:
    from .signing import OrderSigner

__all__ = ["main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class _Parser(argparse.ArgumentParser):
    """argparse that returns instead of exiting and reports errors in one line."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise _Exit(EXIT_USAGE)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            print(message.rstrip("\n"), file=sys.stderr)
        raise _Exit(status)


def _add_connection(parser: argparse.ArgumentParser, *, clob: bool = False) -> None:
    group = parser.add_argument_group("connection (default: the CLOBKIT_* environment)")
    group.add_argument("--base-url", metavar="URL", help="service host ($CLOBKIT_BASE_URL)")
    group.add_argument("--api-key", metavar="KEY", help="API key ($CLOBKIT_API_KEY)")
    group.add_argument(
        "--api-secret", metavar="SECRET", help="API secret ($CLOBKIT_API_SECRET; prefer the env)"
    )
    if clob:
        group.add_argument(
            "--clob-url",
            metavar="URL",
            help="fee-rate host ($CLOBKIT_CLOB_URL; default: the base URL)",
        )


# ---------------------------------------------------------------------------
# salts, amounts


def _cmd_salts(args: argparse.Namespace) -> int:
    from .salt import new_salts

    remaining = args.n
    out = sys.stdout
    while remaining > 0:
        chunk = min(remaining, 65536)
        out.write("\n".join(map(str, new_salts(chunk))) + "\n")
        remaining -= chunk
    return EXIT_OK


def _units(value: int) -> str:
    from .amounts import from_units

    return f"{from_units(value).normalize():f}"


def _cmd_amounts(args: argparse.Namespace) -> int:
    from .amounts import limit_amounts, market_amounts

    side = args.side
    if side not in SIDES:  # the API's spelling, as place_raw_order and the core take it
        raise Usage(f"SIDE must be BUY or SELL, in capitals (got {side!r})")
    compute = market_amounts if args.market else limit_amounts
    try:
        amounts = compute(side, args.price, args.size, args.tick, round_price=args.round_price)
    except ValidationError as exc:
        # name the flag, not the Python argument
        raise Usage(str(exc).replace("round_price=True", "--round-price")) from None
    paid, received = ("USDC", "shares") if side == "BUY" else ("shares", "USDC")
    maker, taker = amounts.maker_amount, amounts.taker_amount
    # the size the amounts are for (the core refuses one with more than 2 decimals)
    if args.market:
        used, unit, kind = maker, paid, "market"
    else:
        used, unit, kind = (taker if side == "BUY" else maker), "shares", "limit"
    what = f"{_units(used)} {unit}"
    width = len(str(max(maker, taker)))
    price = args.price
    if args.round_price:
        rounded = Decimal(price).quantize(Decimal(args.tick), rounding=ROUND_HALF_EVEN)
        if rounded != Decimal(price):
            price = f"{rounded} ({args.price} rounded)"
    print(f"{side} {what} at {price} ({kind}, tick {args.tick})")
    print(f"maker_amount {maker:>{width}}  ({_units(maker)} {paid} paid)")
    print(f"taker_amount {taker:>{width}}  ({_units(taker)} {received} received)")
    return EXIT_OK


# ---------------------------------------------------------------------------
# sign, call


def _api_path(path: str) -> str:
    """``/wallet`` -> ``/api/ext/v1/wallet``; a path under ``/api/`` is kept as given."""
    if not path.startswith("/"):
        path = "/" + path
    if path.startswith("/api/"):
        return path
    return API_PREFIX + path


def _read_body(value: str | None) -> bytes:
    """The body bytes: the text itself, ``@FILE`` or ``@-`` (stdin)."""
    if value is None:
        return b""
    if value.startswith("@"):
        name = value[1:]
        try:
            if name == "-":
                return sys.stdin.buffer.read()
            return Path(name).read_bytes()
        except OSError as exc:
            raise Usage(f"cannot read the body from {name}: {exc.strerror or exc}") from None
    return value.encode("utf-8")


def _method(value: str) -> str:
    method = value.upper()
    if not method.isascii() or not method.isalpha():
        raise Usage(f"METHOD must be an HTTP method such as GET or POST (got {value!r})")
    return method


def _target(base_url: str | None, path: str) -> tuple[str, str]:
    """The URL and the PATH (with its query) exactly as they will be sent."""
    import httpx

    try:
        url = httpx.URL((base_url or "http://localhost").rstrip("/") + _api_path(path))
    except (httpx.InvalidURL, ValueError) as exc:
        raise Usage(f"not a valid URL or path: {exc}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise Usage(f"the base URL must be an absolute http(s) URL (got {base_url!r})")
    return str(url), url.raw_path.decode("ascii")


def _signed_headers(
    conn: Connection, method: str, path: str, body: bytes, sign_bare_path: bool
) -> dict[str, str]:
    from .auth import RequestSigner

    assert conn.api_key is not None
    assert conn.api_secret is not None
    try:
        signer = RequestSigner(conn.api_key, conn.api_secret, sign_query=not sign_bare_path)
        headers = signer.headers(method, path, body)
    except ValidationError as exc:
        raise Usage(str(exc)) from None
    if body:
        headers["Content-Type"] = "application/json"
    return headers


def _cmd_sign(args: argparse.Namespace) -> int:
    conn = Connection.from_args(args)
    conn.require("api_key", "api_secret")
    if args.curl:
        conn.require("base_url")
    method = _method(args.method)
    body = _read_body(args.body)
    url, path = _target(conn.base_url, args.path)
    headers = _signed_headers(conn, method, path, body, args.sign_bare_path)
    if not args.curl:
        for name, value in headers.items():
            print(f"{name}: {value}")
        return EXIT_OK
    parts = ["curl", "-sS", "-X", method, shlex.quote(url)]
    parts += [f"-H {shlex.quote(f'{name}: {value}')}" for name, value in headers.items()]
    if args.body is not None and args.body.startswith("@") and args.body != "@-":
        parts.append("--data-binary " + shlex.quote(args.body))  # the file's exact bytes
    elif body:
        parts.append("--data-binary " + shlex.quote(body.decode("utf-8", "replace")))
    print(" \\\n  ".join([" ".join(parts[:5]), *parts[5:]]))
    return EXIT_OK


def _cmd_call(args: argparse.Namespace) -> int:
    import httpx

    conn = Connection.from_args(args)
    conn.require("base_url", "api_key", "api_secret")
    method = _method(args.method)
    body = _read_body(args.json)
    if body:
        try:
            json.loads(body)
        except ValueError as exc:
            raise Usage(f"--json is not valid JSON: {exc}") from None
    url, path = _target(conn.base_url, args.path)
    headers = _signed_headers(conn, method, path, body, args.sign_bare_path)
    try:
        with httpx.Client(timeout=args.timeout) as http:
            response = http.request(method, url, content=body, headers=headers)
    except httpx.HTTPError as exc:
        raise Failed(f"{method} {url}: {type(exc).__name__}: {exc}") from None
    try:
        payload = response.json()
    except ValueError:
        print(response.text)
        if response.is_success:
            return EXIT_OK
        raise Failed(f"HTTP {response.status_code} {response.reason_phrase}") from None
    utf8 = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "") == "utf8"
    print(json.dumps(payload, indent=2, ensure_ascii=not utf8))
    if isinstance(payload, dict) and payload.get("success") is False:
        code = payload.get("code")
        error = payload.get("error") or payload.get("message") or "request failed"
        label = f"{response.status_code} {code}" if code else str(response.status_code)
        detail = payload.get("detail")
        if detail and detail != error:  # the server's why: "signature mismatch"
            error = f"{error}: {detail}"
        raise Failed(f"{label}: {error}")
    if not response.is_success:
        raise Failed(f"HTTP {response.status_code} {response.reason_phrase}")
    return EXIT_OK


# ---------------------------------------------------------------------------
# order-ids


def _cmd_order_ids(args: argparse.Namespace) -> int:
    from ._order_ids import InputError, describe, format_of, run

    # --batch-size is checked by run(), its one home: an InputError, a usage error here
    if args.threads is not None and args.threads < 1:
        raise Usage("--threads must be at least 1")
    signer = _order_signer(args.key_file) if args.sign else None
    if args.key_file and not args.sign:
        raise Usage("--key-file goes with --sign")
    try:
        summary = run(
            args.wallet,
            args.input,
            args.output,
            threads=args.threads,
            batch_size=args.batch_size,
            progress=args.progress,
            version=args.exchange_version,
            signer=signer,
        )
    except InputError as exc:
        raise Usage(str(exc)) from None
    print(describe(summary, args.output))
    if summary.rejected:
        where = "row" if format_of(args.input) == "parquet" else "line"
        raise Failed(f"{_rows(summary.rejected)} rejected (listed above as {where} N: reason)")
    return EXIT_OK


PRIVATE_KEY_ENV = "CLOBKIT_PRIVATE_KEY"


def _order_signer(key_file: str | None) -> OrderSigner:
    """The order-signing key from ``--key-file`` or ``CLOBKIT_PRIVATE_KEY``, never argv."""
    from .signing import OrderSigner

    if key_file is not None:
        try:
            with open(key_file, encoding="ascii") as file:
                key = file.read(200).strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not ASCII text"
            raise Usage(f"--key-file {key_file}: cannot read it ({reason or exc})") from None
        where = f"--key-file {key_file}"
    else:
        key = os.environ.get(PRIVATE_KEY_ENV, "").strip()
        if not key:
            raise Usage(f"--sign needs the key in {PRIVATE_KEY_ENV} or a --key-file")
        where = PRIVATE_KEY_ENV
    try:
        return OrderSigner(key)
    except ValidationError:  # its message hides the key; so does ours
        raise Usage(f"{where}: not a secp256k1 private key (0x + 64 hex digits)") from None


def _rows(n: int) -> str:
    return f"{n:,} row" if n == 1 else f"{n:,} rows"


# ---------------------------------------------------------------------------
# sandbox, bench


def _cmd_sandbox(args: argparse.Namespace) -> int:
    try:
        from .sandbox.__main__ import main as sandbox_main
    except ModuleNotFoundError as exc:
        raise Failed(_extra_missing("sandbox", exc)) from None
    if not 0 <= args.port <= 65535:
        raise Usage(f"--port must lie in [0, 65535] (got {args.port})")
    argv = ["--host", args.host, "--port", str(args.port)]
    if args.config:
        argv += ["--config", args.config]
    if args.strict_query_signing:
        argv.append("--strict-query-signing")
    if args.state:
        argv += ["--state", args.state]
    if args.forwarded_allow_ips is not None:
        argv += ["--forwarded-allow-ips", args.forwarded_allow_ips]
    if args.replay is not None:
        argv += ["--replay", args.replay, "--speed", str(args.speed)]
        argv += [f"--start={args.start}"] if args.start is not None else []
        argv += [f"--end={args.end}"] if args.end is not None else []
        argv += ["--step"] if args.step else []
    return sandbox_main(argv)


def _cmd_record(args: argparse.Namespace) -> int:
    try:
        from .record import Recorder, RecordStats, resolve_markets
    except ModuleNotFoundError as exc:
        raise Failed(_extra_missing("data", exc)) from None
    if not (args.market or args.event or args.league):
        raise Usage("name what to record: --market ID, --event ID or --league NAME")
    conn = Connection.from_args(args)
    conn.require("base_url", "api_key", "api_secret")
    show = sys.stderr.isatty() if args.progress is None else args.progress

    def progress(stats: RecordStats) -> None:
        print(f"\r{stats.line()}", end="", file=sys.stderr, flush=True)

    async def run() -> RecordStats:
        from .client import AsyncClient

        async with AsyncClient(conn.base_url, conn.api_key, conn.api_secret) as client:
            markets = await resolve_markets(
                client, market_ids=args.market, event_ids=args.event, leagues=args.league
            )
            if not markets:
                raise Failed("no market with two tokens matched")
            recorder = Recorder(
                client,
                args.out,
                markets,
                outcomes=args.outcomes,
                rotate_seconds=args.rotate_seconds,
                rotate_bytes=int(args.rotate_mb * (1 << 20)),
                on_progress=progress if show else None,
            )
            print(f"recording {len(markets)} markets into {args.out}", file=sys.stderr)
            try:
                return await recorder.run(args.duration)
            finally:  # also on Ctrl-C, once the open file is written
                if show:
                    print(file=sys.stderr)
                print(f"recorded: {recorder.stats.line()}", file=sys.stdout, flush=True)

    import asyncio
    import contextlib

    # Ctrl-C is the way to stop an open-ended recording: the files are whole
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
    return EXIT_OK


def _cmd_bench(extra: list[str]) -> int:
    try:
        bench = importlib.import_module("clobkit._bench")
    except ModuleNotFoundError as exc:
        if exc.name == "clobkit._bench":
            raise Failed(
                "the benchmark suite (clobkit._bench) is not part of this install"
            ) from None
        raise Failed(_extra_missing("bench", exc)) from None
    try:
        return int(bench.main(extra) or 0)
    except SystemExit as exc:  # its own argparse: --help, usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE


def _extra_missing(extra: str, exc: ModuleNotFoundError) -> str:
    return f"this needs the {extra} extra (missing {exc.name}): pip install 'clobkit[{extra}]'"


# ---------------------------------------------------------------------------
# demo


def _cmd_demo(args: argparse.Namespace) -> int:
    from ._demo import run_demo

    conn = Connection.from_args(args)
    if conn.base_url is not None:
        conn.require("api_key", "api_secret")
    return run_demo(conn, league=args.league, out=sys.stdout)


# ---------------------------------------------------------------------------
# parser and entry point


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return number


def _add_replay(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("replay a recording (clobkit record; docs/backtesting.md)")
    group.add_argument("--replay", metavar="DIR", help="serve the recorded books of DIR")
    group.add_argument(
        "--speed", type=float, default=1.0, metavar="X", help="virtual seconds a second (1)"
    )
    group.add_argument("--start", metavar="T", help="seconds from the recording's start, or ISO")
    group.add_argument("--end", metavar="T", help="seconds from the recording's start, or ISO")
    group.add_argument(
        "--step", action="store_true", help="no clock: POST /admin/replay/step moves it"
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``clobkit`` argument parser (subcommands set ``handler``)."""
    parser = _Parser(
        prog="clobkit",
        description=(
            "Exact order amounts, offline clob_order_ids, signed requests and a local "
            "sandbox for the External Trading API."
        ),
        epilog="Start with: clobkit demo.  Exit codes: 0 ok, 1 API error or rejected rows, "
        "2 usage.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser(
        "demo",
        help="walk a market maker's loop on the embedded sandbox",
        description=(
            "Start the sandbox in this process and walk a market maker's loop with the real "
            "client: events, book, amounts, precomputed clob_order_id, raw GTC order, partial "
            "fill, cancel, positions. With a base URL (flag or $CLOBKIT_BASE_URL) it runs the "
            "read-only part against that service instead."
        ),
    )
    p.add_argument("--league", default="nba", help="league to browse (default nba)")
    _add_connection(p, clob=True)
    p.set_defaults(handler=_cmd_demo)

    p = sub.add_parser(
        "order-ids",
        help="clob_order_ids for a CSV, JSONL or Parquet file of orders",
        description=(
            "Read orders (token_id, maker_amount, taker_amount, side, salt; for a V1 wallet "
            "optional fee_rate_bps, nonce, expiration; for a V2/V3 wallet timestamp (ms) and "
            "optional metadata, builder; optional neg_risk) from INPUT, hash them in batches "
            "and write the rows plus order_id (and signature with --sign) to OUTPUT, in the "
            "same format (.csv, .jsonl, .parquet: Parquet needs pyarrow, streamed by row "
            "group). The order version comes from the wallet's exchange "
            "addresses unless --exchange-version says. Rejected rows are reported as "
            "'line N: reason' ('row N' for Parquet) and make the exit code 1."
        ),
    )
    p.add_argument(
        "--wallet",
        required=True,
        metavar="FILE",
        help="GET /wallet data or its saved envelope (JSON)",
    )
    p.add_argument("input", metavar="INPUT", help="orders, .csv, .jsonl or .parquet")
    p.add_argument("output", metavar="OUTPUT", help="where to write the rows with order_id")
    p.add_argument("--threads", type=int, metavar="N", help="hashing threads (default 1)")
    p.add_argument(
        "--batch-size",
        type=int,
        metavar="N",
        help="orders per batch (default 50,000; 100,000 for Parquet)",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: when stderr is a terminal)",
    )
    p.add_argument(
        "--exchange-version",
        type=int,
        choices=(1, 2, 3),
        help="order version (default: from the wallet's exchange addresses)",
    )
    p.add_argument(
        "--sign",
        action="store_true",
        help=f"add a signature column (key from {PRIVATE_KEY_ENV} or --key-file)",
    )
    p.add_argument("--key-file", metavar="FILE", help="file holding the order-signing private key")
    p.set_defaults(handler=_cmd_order_ids)

    p = sub.add_parser(
        "salts",
        help="print N order salts",
        description="Print N salts, uniform on [0, 10**12] from the OS CSPRNG, one per line.",
    )
    p.add_argument("n", type=_positive, metavar="N", help="how many")
    p.set_defaults(handler=_cmd_salts)

    p = sub.add_parser(
        "amounts",
        help="exact maker/taker amounts of an order",
        description=(
            "Exchange amounts in 6-decimal units for a limit order of SIZE shares at PRICE, "
            "or with --market for SIZE = USDC to spend (BUY) or shares to sell (SELL)."
        ),
    )
    p.add_argument("side", metavar="SIDE", help="BUY or SELL")
    p.add_argument("price", metavar="PRICE", help="price, e.g. 0.55")
    p.add_argument("size", metavar="SIZE", help="shares (limit) or amount (--market)")
    p.add_argument(
        "--tick", default="0.01", help="tick size: 0.1, 0.01, 0.005, 0.0025, 0.001, 0.0001"
    )
    p.add_argument("--market", action="store_true", help="market-order rounding")
    p.add_argument("--round-price", action="store_true", help="round an off-grid price")
    p.set_defaults(handler=_cmd_amounts)

    p = sub.add_parser(
        "sign",
        help="print a request's signed headers (or a curl command)",
        description=(
            "Sign METHOD PATH (with its query string; /wallet means /api/ext/v1/wallet) and "
            "print the four X-API-* headers, or with --curl a ready curl command. The "
            "signature is valid only briefly (the server's clock-skew window)."
        ),
    )
    p.add_argument("method", metavar="METHOD", help="GET, POST or DELETE")
    p.add_argument("path", metavar="PATH", help="e.g. '/api/ext/v1/events?league=nba'")
    p.add_argument("--body", metavar="BODY", help="request body, @FILE or @- (stdin)")
    p.add_argument("--curl", action="store_true", help="print a curl command instead")
    p.add_argument(
        "--sign-bare-path", action="store_true", help="sign the path without its query string"
    )
    _add_connection(p)
    p.set_defaults(handler=_cmd_sign)

    p = sub.add_parser(
        "call",
        help="send a signed request and print the JSON envelope",
        description=(
            "Send METHOD PATH signed with your key and pretty-print the response envelope "
            "(exit 1 when it says success: false). /wallet means /api/ext/v1/wallet."
        ),
    )
    p.add_argument("method", metavar="METHOD", help="GET, POST or DELETE")
    p.add_argument("path", metavar="PATH", help="e.g. /wallet or '/events?league=nba'")
    p.add_argument("--json", metavar="BODY", help="JSON body, @FILE or @- (stdin)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="default 30")
    p.add_argument(
        "--sign-bare-path", action="store_true", help="sign the path without its query string"
    )
    _add_connection(p)
    p.set_defaults(handler=_cmd_call)

    p = sub.add_parser(
        "sandbox",
        help="run the local sandbox service",
        description="Run the local External Trading API on loopback until interrupted.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port; 0 picks a free one (default 8080)")
    p.add_argument("--config", metavar="FILE", help="JSON config (users, limits); docs/sandbox.md")
    p.add_argument(
        "--strict-query-signing",
        action="store_true",
        help="accept only signatures over the path with its query string",
    )
    p.add_argument("--state", metavar="FILE", help="SQLite file keeping the state across restarts")
    p.add_argument(
        "--forwarded-allow-ips",
        metavar="IPS",
        help="comma-separated proxies whose X-Forwarded-For is trusted (default: none)",
    )
    _add_replay(p)
    p.set_defaults(handler=_cmd_sandbox)

    p = sub.add_parser(
        "record",
        help="record the books of some markets into Parquet files",
        description=(
            "Subscribe to the book topics of the markets named (by id, event or league) and "
            "write every update as a Parquet row into DIR, rotated by time or size; Ctrl-C "
            "writes the open file and prints the summary. Needs the data extra. See "
            "docs/backtesting.md."
        ),
    )
    p.add_argument("--out", required=True, metavar="DIR", help="directory of the recording")
    p.add_argument("--market", action="append", default=[], metavar="ID", help="a market id")
    p.add_argument("--event", action="append", default=[], metavar="ID", help="an event's markets")
    p.add_argument(
        "--league", action="append", default=[], metavar="NAME", help="a league's open markets"
    )
    p.add_argument("--duration", type=float, metavar="SECONDS", help="default: until Ctrl-C")
    p.add_argument("--outcomes", default="ab", choices=("a", "b", "ab"), help="tokens (default ab)")
    p.add_argument(
        "--rotate-seconds", type=float, default=30.0, metavar="S", help="a file every S (30)"
    )
    p.add_argument(
        "--rotate-mb", type=float, default=32.0, metavar="MB", help="or every MB held (32)"
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress line on stderr (default: when stderr is a terminal)",
    )
    _add_connection(p)
    p.set_defaults(handler=_cmd_record)

    p = sub.add_parser(
        "bench",
        help="run the benchmarks",
        description="Run the benchmark suite; every argument is passed to clobkit._bench.",
        add_help=False,
    )
    p.set_defaults(handler=None)
    return parser


def _version() -> str:
    """``--version``: clobkit's version and which core is loaded (``clobkit._core``)."""
    from ._core import IMPLEMENTATION

    core = "compiled core" if IMPLEMENTATION == "c" else "pure-Python core"
    return f"clobkit {__version__} ({core})"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``clobkit`` with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C before a command runs (parsing, imports)
        print("clobkit: interrupted", file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        args, extra = parser.parse_known_args(args_list)
        if args.command is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        if args.command == "bench":
            return _run(lambda: _cmd_bench(extra), "bench")
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        handler: Callable[[argparse.Namespace], int] = args.handler
        return _run(lambda: handler(args), args.command)
    except _Exit as exc:
        return exc.code


def _run(call: Callable[[], int], command: str) -> int:
    prog = f"clobkit {command}"
    try:
        return call()
    except Usage as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Failed as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except ApiError as exc:
        print(f"{prog}: API error {exc}", file=sys.stderr)
        return EXIT_FAILED
    except TransportError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except ValidationError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ClobkitError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # clobkit salts 1000000 | head: __main__ quiets the exit
        return EXIT_OK
    except OSError as exc:  # disk full, a file vanished mid-run
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"{prog}: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except RecursionError:  # a last guard: input nested too deeply for some parser
        print(f"{prog}: error: the input is nested too deeply", file=sys.stderr)
        return EXIT_USAGE
