"""``python -m clobkit.sandbox [--host H] [--port P] [--config FILE] [--strict-query-signing]
[--forwarded-allow-ips IPS]``.

Prints ``listening on http://HOST:PORT`` once connections are accepted (and the
default keys when no config file is given), then serves until interrupted.
``--state FILE`` keeps the state in an SQLite file across restarts.
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import TYPE_CHECKING

from ..errors import ValidationError
from .config import ConfigError, SandboxConfig, describe_users, load_config
from .server import Sandbox
from .store import StateFileError

if TYPE_CHECKING:
    from .replay import Replay


def build_config(path: str | None, proxies: Sequence[str] | None) -> SandboxConfig:
    """The config file (or the defaults) with ``--forwarded-allow-ips`` applied over it."""
    config = load_config(path)
    if proxies is not None:
        config = dataclasses.replace(config, forwarded_allow_ips=tuple(proxies))
    return config


class _Refused(Exception):
    """A start refused: ``error: <message>`` on stderr and exit status ``code``."""

    def __init__(self, message: object, code: int = 2) -> None:
        super().__init__(str(message))
        self.code = code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m clobkit.sandbox",
        description="Run the clobkit sandbox: a local External Trading API on loopback.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=8080, help="port to bind; 0 picks a free one (default 8080)"
    )
    parser.add_argument(
        "--config", help="JSON config file (users, rate limit, risk); see docs/sandbox.md"
    )
    parser.add_argument(
        "--strict-query-signing",
        action="store_true",
        help="accept only signatures over the path with its query string",
    )
    parser.add_argument(
        "--state",
        metavar="FILE",
        help="SQLite file keeping orders, balances and nonces across restarts (default: memory)",
    )
    parser.add_argument(
        "--forwarded-allow-ips",
        metavar="IPS",
        help="comma-separated proxy addresses / networks whose X-Forwarded-For is trusted "
        "for the client address (default: none; no forwarding header is trusted)",
    )
    parser.add_argument(
        "--replay", metavar="DIR", help="serve a recording's books (clobkit record)"
    )
    parser.add_argument("--speed", help="replay clock speed (default 1)")
    parser.add_argument("--start", help="replay from T: seconds from the recording's start, or ISO")
    parser.add_argument("--end", help="replay up to T: seconds from the recording's start, or ISO")
    parser.add_argument(
        "--step", action="store_true", help="replay clock moved only by POST /admin/replay/step"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        _check(args)
        sandbox = _sandbox(args)
        replay = _replay(args, sandbox)
        _start(args, sandbox)
    except _Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    done = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    _announce(args, sandbox, replay)
    try:
        while not done.wait(0.5):
            pass
    finally:
        sandbox.stop()
    return 0


def _check(args: argparse.Namespace) -> None:
    """The options that cannot go together."""
    if args.replay is not None and args.state is not None:
        raise _Refused("--replay and --state cannot be combined")
    if args.replay is None:  # the replay's own options, given without one, do nothing
        given = [flag for flag, on in _REPLAY_OPTIONS.items() if on(args)]
        if given:
            raise _Refused(f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'} --replay")
    else:
        from .replay import parse_speed

        try:  # read as given (its text in a refusal), a float from here on
            args.speed = parse_speed("1" if args.speed is None else args.speed, "--speed")
        except ValidationError as exc:
            raise _Refused(str(exc)) from None
    if not args.host.strip():  # "" binds every interface: name it if that is meant
        raise _Refused("--host must name an address (0.0.0.0 for every interface)")


_REPLAY_OPTIONS: dict[str, Callable[[argparse.Namespace], bool]] = {
    "--speed": lambda args: args.speed is not None,
    "--start": lambda args: args.start is not None,
    "--end": lambda args: args.end is not None,
    "--step": lambda args: bool(args.step),
}


def _sandbox(args: argparse.Namespace) -> Sandbox:
    """The sandbox of the options (not yet serving); its state file opened and restored."""
    proxies = None
    if args.forwarded_allow_ips is not None:
        proxies = [p.strip() for p in args.forwarded_allow_ips.split(",") if p.strip()]
    try:
        config = build_config(args.config, proxies)
    except (ConfigError, OSError) as exc:
        raise _Refused(exc) from None
    try:
        return Sandbox(
            config,
            host=args.host,
            port=args.port,
            strict_query_signing=args.strict_query_signing,
            state=args.state,
        )
    except StateFileError as exc:
        raise _Refused(exc) from None


def _replay(args: argparse.Namespace, sandbox: Sandbox) -> Replay | None:
    """The recording of ``--replay``, read and checked (None without the option)."""
    if args.replay is None:
        return None
    from ..errors import ClobkitError
    from .replay import Replay

    try:
        return Replay(sandbox.engine, args.replay, start=args.start, end=args.end)
    except ClobkitError as exc:
        raise _Refused(exc) from None


def _start(args: argparse.Namespace, sandbox: Sandbox) -> None:
    try:
        sandbox.start()
    except (OSError, RuntimeError) as exc:
        sandbox.close_state()
        raise _Refused(f"cannot serve on {args.host}:{args.port}: {exc}", 1) from None


def replay_line(replay: Replay, speed: float, step: bool) -> str:
    """What a replay serves: markets, updates (the figure of ``GET /admin/replay``, and how
    many are still to come after those shown at the start) of the books recorded (the
    recorder's count, ``recorded`` there), virtual seconds and how its clock moves."""
    # a run stops with the last update when --end lies past it; steps may go on to --end
    end = replay.end_ms if step else replay.stop_ms
    clock = "step: POST /admin/replay/step" if step else f"speed {speed:g}"
    stale = f", {replay.stale:,} stale left out" if replay.stale else ""
    return (
        f"{len(replay.market_ids)} markets, {replay.update_count:,} updates "
        f"({replay.update_count - replay.index:,} to come{stale}) of the {replay.recorded:,} "
        f"recorded, {(end - replay.start_ms) / 1000:g} s, {clock}"
    )


def _announce(args: argparse.Namespace, sandbox: Sandbox, replay: Replay | None) -> None:
    """Print where the sandbox serves (and the replay and default users); attach the replay."""
    print(f"listening on {sandbox.base_url}", flush=True)
    print(f"  API       {sandbox.base_url}/api/ext/v1", flush=True)
    print(f"  WebSocket {sandbox.ws_url}", flush=True)
    print(f"  fee rate  {sandbox.clob_url}/fee-rate?token_id=...", flush=True)
    if replay is not None:
        from .replay import attach

        attach(sandbox, replay, None if args.step else args.speed)
        print(f"replaying {args.replay}: {replay_line(replay, args.speed, args.step)}", flush=True)
    if args.config is None:
        print("default users (see docs/sandbox.md):", flush=True)
        print(describe_users(sandbox.users), flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
