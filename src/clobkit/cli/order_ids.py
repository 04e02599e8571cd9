"""``clobkit order-ids``: a file of orders in, the same rows with their ids out."""

from __future__ import annotations

import argparse
import os
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from ..core.spec import ENV_PRIVATE_KEY
from ..errors import ValidationError
from .base import Failed, Usage
from .common import EXIT_OK, Commands

if TYPE_CHECKING:
    from ..signing import OrderSigner, Signer
    from .orderids.run import Summary


def add_order_ids(sub: Commands) -> None:
    """``clobkit order-ids``."""
    p = sub.add_parser(
        "order-ids",
        help="clob_order_ids for a CSV, JSONL or Parquet file of orders",
        description=(
            "Read orders (token_id, maker_amount, taker_amount, side, salt; for a V1 wallet "
            "optional fee_rate_bps, nonce, expiration; for a V2/V3 wallet timestamp (ms) and "
            "optional metadata, builder; optional neg_risk) from INPUT, hash them in batches "
            "and write the rows plus order_id (and signature with --sign) to OUTPUT, in any "
            "of the formats (Parquet needs pyarrow; a dataset's files are written in "
            "parallel, in the input's order by name). The order version comes from the "
            "wallet's exchange "
            "addresses unless --exchange-version says. Sides are BUY/SELL in any case "
            "or 0/1, neg_risk a bool, 0/1 or true/false; an empty cell or a null in an "
            "optional column is its default (0, false, the zero word), as clobkit.dask "
            "reads a frame (docs/scale.md, 'Accepted forms'). Rejected rows are reported as "
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
    p.add_argument(
        "output",
        metavar="OUTPUT",
        help="where to write the rows with order_id: .csv, .jsonl, .parquet, or DIR/ "
        "(a Parquet dataset, part-000000.parquet, ...)",
    )
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
    _add_signing(p)
    p.set_defaults(handler=_cmd_order_ids)


def _add_signing(p: argparse.ArgumentParser) -> None:
    """``--sign`` and where its key comes from."""
    p.add_argument(
        "--sign",
        action="store_true",
        help=f"add a signature column (key in {ENV_PRIVATE_KEY})",
    )
    p.add_argument("--key-file", metavar="FILE", help="or the key in this file")
    p.add_argument(
        "--kms",
        metavar="KEY",
        type=_kms_key,
        help="or a KMS key: aws:KEY_ID or gcp:KEY_VERSION",
    )


def _cmd_order_ids(args: argparse.Namespace) -> int:
    from .orderids.run import InputError, describe, format_of

    # --batch-size is checked by run(), its one home: an InputError, a usage error here
    if args.threads is not None and args.threads < 1:
        raise Usage("--threads must be at least 1")
    kms = _kms_signer(args)
    if kms is not None or not args.sign:
        signer: Signer | None = kms
    else:
        signer = _order_signer(args.key_file)
    if args.key_file and not args.sign:
        raise Usage("--key-file goes with --sign")
    try:
        with ExitStack() as stack:
            if kms is not None:
                stack.enter_context(kms)  # the key's public key read once, checked
            summary = _run(args, signer)
    except InputError as exc:
        raise Usage(str(exc)) from None
    print(describe(summary, args.output))
    if summary.rejected:
        where = "row" if format_of(args.input) == "parquet" else "line"
        raise Failed(f"{_rows(summary.rejected)} rejected (listed above as {where} N: reason)")
    return EXIT_OK


def _run(args: argparse.Namespace, signer: Signer | None) -> Summary:
    from .orderids.run import run

    return run(
        args.wallet,
        args.input,
        args.output,
        threads=args.threads,
        batch_size=args.batch_size,
        progress=args.progress,
        version=args.exchange_version,
        signer=signer,
    )


def _kms_key(text: str) -> tuple[str, str]:
    """``--kms``'s value: (``aws`` or ``gcp``, the key's id or version name)."""
    provider, _, key = text.partition(":")
    if provider not in ("aws", "gcp") or not key:
        raise argparse.ArgumentTypeError(f"{text!r}: expected aws:KEY_ID or gcp:KEY_VERSION")
    return provider, key


def _kms_signer(args: argparse.Namespace) -> Any:
    """The KMS signer ``--kms`` names (not entered yet), or None: an AWS KMS key of
    spec ECC_SECG_P256K1 (credentials, region and endpoint from the AWS chain) or a
    Cloud KMS key version of EC_SIGN_SECP256K1_SHA256 (Application Default
    Credentials)."""
    if args.kms is None:
        return None
    if not args.sign:
        raise Usage("--kms goes with --sign")
    if args.key_file:
        raise Usage("give one of --key-file, --kms")
    provider, key = args.kms
    if provider == "aws":
        from ..signing import AwsKmsSigner

        return AwsKmsSigner(key)
    from ..signing import GcpKmsSigner

    return GcpKmsSigner(key)


def _order_signer(key_file: str | None) -> OrderSigner:
    """The order-signing key from ``--key-file`` or ``CLOBKIT_PRIVATE_KEY``, never argv."""
    from ..signing import OrderSigner

    if key_file is not None:
        try:
            with open(key_file, encoding="ascii") as file:
                key = file.read(200).strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not ASCII text"
            raise Usage(f"--key-file {key_file}: cannot read it ({reason or exc})") from None
        where = f"--key-file {key_file}"
    else:
        key = os.environ.get(ENV_PRIVATE_KEY, "").strip()
        if not key:
            raise Usage(f"--sign needs the key in {ENV_PRIVATE_KEY} or a --key-file")
        where = ENV_PRIVATE_KEY
    try:
        return OrderSigner(key)
    except ValidationError:  # its message hides the key; so does ours
        raise Usage(f"{where}: not a secp256k1 private key (0x + 64 hex digits)") from None


def _rows(n: int) -> str:
    return f"{n:,} row" if n == 1 else f"{n:,} rows"
