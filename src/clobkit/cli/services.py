"""``clobkit demo``, ``sandbox``, ``record`` and ``bench``: the commands that run a service."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Coroutine
from typing import Any

from ..core.spec import ENV_BASE_URL
from .base import Connection, Failed, Usage
from .common import EXIT_OK, EXIT_USAGE, Commands, add_connection, check_positive, extra_missing


def add_demo(sub: Commands) -> None:
    """``clobkit demo``."""
    p = sub.add_parser(
        "demo",
        help="walk a market maker's loop on the embedded sandbox",
        description=(
            "Start the sandbox in this process and walk a market maker's loop with the real "
            "client: events, book, amounts, precomputed clob_order_id, raw GTC order, partial "
            f"fill, cancel, positions. With a base URL (flag or ${ENV_BASE_URL}) it runs the "
            "read-only part against that service instead."
        ),
    )
    p.add_argument("--league", default="nba", help="league to browse (default nba)")
    add_connection(p, clob=True)
    p.set_defaults(handler=_cmd_demo)


def add_sandbox(sub: Commands) -> None:
    """``clobkit sandbox``."""
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


def add_record(sub: Commands) -> None:
    """``clobkit record``."""
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
    p.add_argument(
        "--duration", type=float, metavar="SECONDS", help="default: until Ctrl-C or SIGTERM"
    )
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
    add_connection(p)
    p.set_defaults(handler=_cmd_record)


def add_bench(sub: Commands) -> None:
    """``clobkit bench`` (its arguments go to clobkit.bench)."""
    p = sub.add_parser(
        "bench",
        help="run the benchmarks",
        description="Run the benchmark suite; every argument is passed to clobkit.bench.",
        add_help=False,
    )
    p.set_defaults(handler=None)


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    conn = Connection.from_args(args)
    if conn.base_url is not None:
        conn.require("api_key", "api_secret")
    return run_demo(conn, league=args.league, out=sys.stdout)


def _cmd_sandbox(args: argparse.Namespace) -> int:
    try:
        from ..sandbox.__main__ import main as sandbox_main
    except ModuleNotFoundError as exc:
        raise Failed(extra_missing("sandbox", exc)) from None
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
    # the replay's options go on even without --replay: the sandbox refuses them then
    argv += ["--replay", args.replay] if args.replay is not None else []
    argv += [f"--speed={args.speed}"] if args.speed is not None else []
    argv += [f"--start={args.start}"] if args.start is not None else []
    argv += [f"--end={args.end}"] if args.end is not None else []
    argv += ["--step"] if args.step else []
    return sandbox_main(argv)


def _cmd_record(args: argparse.Namespace) -> int:
    try:
        from ..record import Recorder, RecordStats, resolve_markets
    except ModuleNotFoundError as exc:
        raise Failed(extra_missing("data", exc)) from None
    if not (args.market or args.event or args.league):
        raise Usage("name what to record: --market ID, --event ID or --league NAME")
    check_positive(args, "duration", "rotate_seconds", "rotate_mb")
    conn = Connection.from_args(args)
    conn.require("base_url", "api_key", "api_secret")
    show = sys.stderr.isatty() if args.progress is None else args.progress

    def progress(stats: RecordStats) -> None:
        print(f"\r{stats.line()}", end="", file=sys.stderr, flush=True)

    async def run() -> RecordStats:
        from ..client import AsyncClient

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

    until_stopped(run())
    return EXIT_OK


def until_stopped(main: Coroutine[Any, Any, Any]) -> None:
    """Run ``main`` until it ends, or Ctrl-C, SIGTERM (a service manager, a timeout,
    docker stop) or SIGHUP cancels it: a recorder, cancelled, writes the file it holds."""
    import asyncio
    import contextlib
    import signal

    async def stoppable() -> None:
        task, loop = asyncio.current_task(), asyncio.get_running_loop()
        assert task is not None
        for name in ("SIGTERM", "SIGHUP"):
            # no SIGHUP (Windows), no loop signal handlers (Windows), not the main thread
            with contextlib.suppress(AttributeError, NotImplementedError, RuntimeError):
                loop.add_signal_handler(getattr(signal, name), task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await main

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(stoppable())


def run_bench(extra: list[str]) -> int:
    try:
        bench = importlib.import_module("clobkit.bench")
    except ModuleNotFoundError as exc:
        if exc.name == "clobkit.bench":
            raise Failed(
                "the benchmark suite (clobkit.bench) is not part of this install"
            ) from None
        raise Failed(extra_missing("bench", exc)) from None
    try:
        return int(bench.main(extra) or 0)
    except SystemExit as exc:  # its own argparse: --help, usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE


def _add_replay(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("replay a recording (clobkit record; docs/backtesting.md)")
    group.add_argument("--replay", metavar="DIR", help="serve the recorded books of DIR")
    group.add_argument("--speed", metavar="X", help="virtual seconds a second (1)")
    group.add_argument("--start", metavar="T", help="seconds from the recording's start, or ISO")
    group.add_argument("--end", metavar="T", help="seconds from the recording's start, or ISO")
    group.add_argument(
        "--step", action="store_true", help="no clock: POST /admin/replay/step moves it"
    )
