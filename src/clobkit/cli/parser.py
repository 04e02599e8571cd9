"""The ``clobkit`` command: demo, offline order ids, salts, amounts, signed requests,
cancel-all, sentinel, sandbox, record.

Exit codes: 0 ok, 1 API error or rejected rows, 2 usage. An expected failure
prints one line on stderr (never a traceback). Credentials and URLs come from
``--base-url/--api-key/--api-secret/--clob-url`` or ``CLOBKIT_BASE_URL``,
``CLOBKIT_API_KEY``, ``CLOBKIT_API_SECRET``, ``CLOBKIT_CLOB_URL``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from .. import __version__
from ..errors import ApiError, ClobkitError, TransportError, ValidationError
from . import offline, order_ids, protect, services, signed
from .base import Failed, Usage
from .common import EXIT_FAILED, EXIT_OK, EXIT_USAGE

__all__ = ["main"]


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

    for add in (
        services.add_demo,
        order_ids.add_order_ids,
        offline.add_salts,
        offline.add_amounts,
        signed.add_sign,
        signed.add_call,
        protect.add_cancel_all,
        protect.add_sentinel,
        services.add_sandbox,
        services.add_record,
        services.add_bench,
        offline.add_extras,
    ):
        add(sub)
    return parser


def _version() -> str:
    """``--version``: clobkit's version and which core is loaded (``clobkit.core.select``)."""
    from ..core.select import IMPLEMENTATION

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
        if args.command is None and extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        if args.command is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        if args.command == "bench":
            return _run(lambda: services.run_bench(extra), "bench")
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        handler: Callable[[argparse.Namespace], int] = args.handler
        return _run(lambda: handler(args), args.command)
    except _Exit as exc:
        return exc.code


#: each expected failure, first match wins: its class, what precedes its text, the exit code
_FAILURES: tuple[tuple[type[Exception], str, int], ...] = (
    (Usage, "error: ", EXIT_USAGE),
    (Failed, "", EXIT_FAILED),
    (ApiError, "API error ", EXIT_FAILED),
    (TransportError, "", EXIT_FAILED),
    (ValidationError, "error: ", EXIT_USAGE),
    (ClobkitError, "", EXIT_FAILED),
)


def _run(call: Callable[[], int], command: str) -> int:
    prog = f"clobkit {command}"
    try:
        return call()
    except (Usage, Failed, ClobkitError) as exc:
        prefix, code = next((p, c) for kind, p, c in _FAILURES if isinstance(exc, kind))
        print(f"{prog}: {prefix}{exc}", file=sys.stderr)
        return code
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
