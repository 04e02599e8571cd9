"""The issue's target: V2 and V3 orders signed through ``AwsKmsSigner`` (ministack's
KMS on loopback) recover, with eth-account, to the KMS key's address, each with a
low ``s``, and the service (the sandbox) takes every one. 200 of each here (a high
``s`` about half of the time: a signer that forgot one case fails 200 times over);
the issue's 1,000 of each: ``CLOBKIT_KMS_ORDERS=1000 python -m pytest -m slow
tests/signing/test_kms_many.py`` (docs/keys-off-host.md quotes its run)."""

from __future__ import annotations

import asyncio
import os

import pytest

from clobkit import AsyncClient
from clobkit.signing import AwsKmsSigner

from .oracle import low_s, recovered
from .sandboxes import RAW, options, pick_market, sandbox_for

ORDERS = int(os.environ.get("CLOBKIT_KMS_ORDERS", "200"))


@pytest.mark.slow
@pytest.mark.parametrize("version", [2, 3])
async def test_orders_signed_by_kms_recover_and_are_taken(
    aws_url: str, aws_key: str, version: int
) -> None:
    async with AwsKmsSigner(aws_key, endpoint_url=aws_url, rate=2_000) as signer:
        with sandbox_for(signer.address, version) as sb:
            async with AsyncClient(**options(sb, max_connections=32)) as client:
                market = pick_market(sb)
                await client.prepare([market])
                prepared = await asyncio.gather(
                    *(
                        client.prepare_raw_order_amounts(
                            market, "a", "BUY", 1_000_000 + i, 20_000_000, signer=signer
                        )
                        for i in range(ORDERS)
                    )
                )
                placed = await asyncio.gather(*(client.post_raw_order(p) for p in prepared))
            assert sb.requests.count(*RAW) == ORDERS
            assert all(sb.engine.orders[p.order_id] for p in placed)  # taken, every one
    for p in prepared:
        signature = p.result.signature
        assert recovered(bytes.fromhex(p.result.signed_order_id[2:]), signature) == signer.address
        assert low_s(signature)
    assert signer.counts()["calls"] == ORDERS
