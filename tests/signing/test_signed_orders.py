"""Orders signed by a signer of the protocol: ``hasher.sign`` / ``sign_many`` and the
async twins on V2/V3 wallets of every signature type (eth-account and the
POLY_1271 oracle), the raw-order flow with ``signer=`` against the sandbox (the
signature recovers to the wallet's signer; a wrong signer or a failing one sends
nothing), and the market maker's ``signer=`` (a requote signed concurrently, the
sign latency histogram, pre-signed orders, the check on enter)."""

from __future__ import annotations

import asyncio
import os
from types import ModuleType
from typing import Any

import pytest

from clobkit import AsyncClient, Client, OrderHasher, OrderSigner
from clobkit.errors import (
    OrderFieldError,
    SignatureMismatch,
    SignerError,
    SignerThrottled,
    SignerTimeout,
)
from clobkit.mm import Desk, Quote, Quoter
from clobkit.signing import AwsKmsSigner, sign_order_async, sign_orders_async

from ..core import signing_oracle as oracle
from .oracle import low_s, recovered
from .sandboxes import RAW, eventually, options, pick_market, sandbox_for
from .test_hasher import V3_EXCHANGE, message, wallet

KEY = "0x" + "5a" * 32
LOCAL = OrderSigner(KEY)
COLUMNS: dict[str, Any] = {
    "token_ids": [1234, 5678, 9],
    "maker_amounts": [100_000_000, 5_000_000, 7],
    "taker_amounts": [50_000_000, 9_000_000, 11],
    "sides": [0, 1, 0],
    "salts": [1, 2, 3],
    "timestamps": [1710000000000, 1710000000001, 1710000000002],
}


def rows() -> list[dict[str, Any]]:
    keys = {"token_ids": "token_id", "maker_amounts": "maker_amount"}
    keys |= {"taker_amounts": "taker_amount", "sides": "side", "salts": "salt"}
    keys |= {"timestamps": "timestamp"}
    return [{keys[k]: v[i] for k, v in COLUMNS.items()} for i in range(3)]


def test_hasher_sign_many_through_a_kms_signer(aws_url: str, aws_key: str) -> None:
    with AwsKmsSigner(aws_key, endpoint_url=aws_url) as signer:
        for exchange, version in (
            ({}, "2"),
            ({"ctf_exchange": V3_EXCHANGE, "neg_risk_exchange": V3_EXCHANGE}, "3"),
        ):
            w = wallet(2, signer.address, maker="0x" + "12" * 20, **exchange)
            hasher = OrderHasher(w)
            signed = hasher.sign_many(signer, **COLUMNS)
            one = hasher.sign(signer, **rows()[0])
            assert one.order_id == signed[0].order_id
            verifying = w["ctf_exchange"]
            for row, s in zip(rows(), signed, strict=True):
                order_id = oracle.order_id(137, verifying, version, message(w, row))
                assert s.order_id == order_id
                assert recovered(bytes.fromhex(order_id[2:]), s.signature) == signer.address
                assert low_s(s.signature)


def test_a_kms_signer_of_another_wallet_is_refused(aws_url: str, aws_key: str) -> None:
    with AwsKmsSigner(aws_key, endpoint_url=aws_url) as signer:
        hasher = OrderHasher(wallet(0, LOCAL.address))
        with pytest.raises(OrderFieldError, match="signer: is not this wallet's signer"):
            hasher.sign_many(signer, **COLUMNS)
        assert signer.counts()["calls"] == 0  # refused before anything was signed


async def test_async_signing_of_a_deposit_wallet(aws_url: str, aws_key: str) -> None:
    """Type 3: the ERC-7739 wrapper signed by the deposit wallet's owner (the KMS key)."""
    deposit = "0x" + "de" * 20
    w = wallet(3, deposit)
    hasher = OrderHasher(w)
    async with AwsKmsSigner(aws_key, endpoint_url=aws_url) as signer:
        signed = await sign_orders_async(hasher, signer, COLUMNS)
        one = await sign_order_async(hasher, signer, rows()[1])
    assert one.order_id == signed[1].order_id
    local = hasher.sign_many(LOCAL, **COLUMNS)  # the same ids, the same wrapper after r||s||v
    for row, s, mine in zip(rows(), signed, local, strict=True):
        digest = oracle.poly_1271_digest(137, w["ctf_exchange"], "2", message(w, row), deposit)
        assert recovered(digest, s.signature) == signer.address
        assert (s.order_id, s.signature[132:]) == (mine.order_id, mine.signature[132:])


async def test_async_signing_with_the_local_key(core: ModuleType) -> None:
    hasher = core.OrderHasher(wallet(0, LOCAL.address))
    signed = await sign_orders_async(hasher, LOCAL, COLUMNS)
    assert signed == hasher.sign_many(LOCAL, **COLUMNS)
    assert await sign_order_async(hasher, LOCAL, rows()[2]) == signed[2]
    assert await LOCAL.sign_digests([os.urandom(32) for _ in range(100)])  # off the loop


def test_something_that_is_no_signer() -> None:
    hasher = OrderHasher(wallet(0, LOCAL.address))
    with pytest.raises(OrderFieldError, match=r"signer: must be a Signer \(OrderSigner"):
        hasher.sign(KEY, **rows()[0])  # a key passed by mistake: never echoed
    with pytest.raises(OrderFieldError) as caught:
        hasher.sign(KEY, **rows()[0])
    assert KEY not in str(caught.value)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_raw_orders_signed_by_the_wallets_signer(version: int) -> None:
    with sandbox_for(LOCAL.address, version) as sb, Client(**options(sb)) as client:
        market = pick_market(sb)
        result = client.place_raw_order(market, "a", "BUY", "0.05", 20, signer=LOCAL)
        assert sb.engine.orders[result.order_id].status in ("live", "matched")
        assert recovered(bytes.fromhex(result.signed_order_id[2:]), result.signature) == (
            LOCAL.address
        )
        if version == 1:  # the very order the service stores
            assert result.signed_order_id == result.clob_order_id
            assert not result.timestamp
        else:  # stamped with the client's clock: the service stamps its own
            assert result.timestamp > 0
            hasher = OrderHasher(client.get_wallet())
            assert result.signed_order_id == hasher.order_id(
                token_id=result.token_id,
                maker_amount=result.maker_amount,
                taker_amount=result.taker_amount,
                side=result.side,
                salt=result.salt,
                timestamp=result.timestamp,
                neg_risk=result.neg_risk,
            )
        unsigned = client.place_raw_order(market, "a", "BUY", "0.05", 20)
        assert (unsigned.signature, unsigned.signed_order_id, unsigned.timestamp) == ("", "", 0)


async def test_a_wrong_signer_sends_nothing() -> None:
    with sandbox_for(LOCAL.address, 2) as sb:
        async with AsyncClient(**options(sb)) as client:
            market = pick_market(sb)
            other = OrderSigner("0x" + "77" * 32)
            with pytest.raises(OrderFieldError, match=f"{LOCAL.address}.*{other.address}"):
                await client.place_raw_order(market, "a", "BUY", "0.05", 20, signer=other)
            with pytest.raises(OrderFieldError, match="AsyncSigner"):
                await client.prepare_raw_order(market, "a", "BUY", "0.05", 20, signer=object())  # type: ignore[arg-type]
            assert await client.check_signer(LOCAL) == LOCAL.address
        assert sb.requests.count(*RAW) == 0


async def test_a_failing_kms_signer_sends_nothing(aws_key: str, misbehaving: Any) -> None:
    """A throttling storm, then a hanging KMS: each place raises the signer's error,
    nothing unsigned is posted."""
    async with AwsKmsSigner(
        aws_key, endpoint_url=misbehaving.url, timeout=1.0, retries=1
    ) as signer:
        with sandbox_for(signer.address, 2) as sb:
            async with AsyncClient(**options(sb)) as client:
                market = pick_market(sb)
                placed = await client.place_raw_order(market, "a", "BUY", "0.05", 20, signer=signer)
                assert recovered(bytes.fromhex(placed.signed_order_id[2:]), placed.signature) == (
                    signer.address
                )
                misbehaving.throttle = 10**6
                with pytest.raises(SignerThrottled, match=aws_key):
                    await client.place_raw_order(market, "a", "BUY", "0.05", 20, signer=signer)
                misbehaving.throttle, misbehaving.hang = 0, True
                with pytest.raises(SignerTimeout, match=aws_key):
                    await client.place_raw_order(market, "a", "BUY", "0.05", 20, signer=signer)
            assert sb.requests.count(*RAW) == 1  # the signed one only


async def test_a_quoter_signs_its_requote(aws_url: str, aws_key: str) -> None:
    async with AwsKmsSigner(aws_key, endpoint_url=aws_url) as signer:
        with sandbox_for(signer.address, 2) as sb:
            async with AsyncClient(**options(sb)) as client:
                market = pick_market(sb)
                ladder = [Quote("BUY", f"0.0{i}", 200) for i in range(1, 5)]
                async with Quoter(client, market, "a", signer=signer) as q:
                    report = await q.requote(ladder)
                    assert len(report.placed) == 4
                    orders = q.execution.cache.orders(q.owner)
                    for t in orders:
                        assert t.prepared is not None
                        result = t.prepared.result
                        digest = bytes.fromhex(result.signed_order_id[2:])
                        assert recovered(digest, result.signature) == signer.address
                    assert q.execution.gate.counters.sign.count == 4
                    # pre-signed: the next requote's new levels wait for no signature
                    calls = signer.counts()["calls"]
                    await q.presign([Quote("BUY", "0.07", 200), Quote("BUY", "0.08", 200)])
                    assert signer.counts()["calls"] == calls + 2
                    await q.requote([*ladder, Quote("BUY", "0.07", 200), Quote("BUY", "0.08", 200)])
                    assert signer.counts()["calls"] == calls + 2
                    assert q.execution.sender.presigned.used == 2
                    assert sb.requests.count(*RAW) == 6


def live_prices(sb: Any, user: str) -> list[str]:
    """The prices of ``user``'s live orders on the sandbox, sorted."""
    orders = sb.engine.list_orders(user).items
    return sorted(str(r.clob_price) for r in orders if r.status == "live")


async def test_a_quoter_whose_signer_fails_sends_nothing(aws_key: str, misbehaving: Any) -> None:
    async with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url) as signer:
        with sandbox_for(signer.address, 3) as sb:
            async with AsyncClient(**options(sb)) as client:
                market = pick_market(sb)
                async with Quoter(client, market, "a", signer=signer) as q:
                    from .aws_kms import kms_client

                    other = kms_client(misbehaving.upstream).create_key(
                        KeySpec="ECC_SECG_P256K1", KeyUsage="SIGN_VERIFY"
                    )
                    misbehaving.tamper = other["KeyMetadata"]["KeyId"]
                    ladder = [Quote("BUY", f"0.0{i}", 200) for i in range(1, 4)]
                    with pytest.raises(SignatureMismatch, match=aws_key):
                        await q.requote(ladder)
                    assert q.open_orders == []
                    assert q.execution.cache.orders(q.owner) == []
            assert sb.requests.count(*RAW) == 0


async def test_a_requotes_cancels_leave_while_its_new_orders_are_signed(
    aws_key: str, misbehaving: Any
) -> None:
    """The KMS hangs while a requote's new ladder is signed: the orders no longer wanted
    are cancelled meanwhile (stale quotes rest no longer than a cancel takes) and
    nothing new is sent; the signer failing then leaves them cancelled and nothing
    placed (no order of the ladder was signed). Before, the cancels waited for
    the signatures: a remote signer's tens of ms, here for as long as it hung."""
    async with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url, timeout=60.0) as signer:
        with sandbox_for(signer.address, 2) as sb:
            async with AsyncClient(**options(sb)) as client:
                market = pick_market(sb)
                user = sb.users[1].user_id
                old = [Quote("BUY", f"0.0{i}", 200) for i in range(1, 4)]
                new = [Quote("BUY", f"0.0{i}", 200) for i in range(5, 8)]

                async with Quoter(client, market, "a", signer=signer) as q:
                    await q.requote(old)
                    assert live_prices(sb, user) == ["0.01", "0.02", "0.03"]
                    misbehaving.hang = True
                    requote = asyncio.ensure_future(q.requote(new))
                    # cancelled while the KMS still hangs (30 s: a hang guard only)
                    await eventually(
                        lambda: not live_prices(sb, user) and misbehaving.signs >= 6, 30
                    )
                    assert live_prices(sb, user) == []
                    assert not requote.done()
                    assert sb.requests.count(*RAW) == 3  # nothing new sent
                    misbehaving.reset()  # the hung calls answer 503: the signer fails
                    with pytest.raises(SignerError, match=aws_key):
                        await asyncio.wait_for(requote, 30)
                    assert live_prices(sb, user) == []
                    assert sb.requests.count(*RAW) == 3
                    assert q.open_orders == []
                    await q.requote(new)  # signed now: placed whole
                    assert live_prices(sb, user) == ["0.05", "0.06", "0.07"]


@pytest.mark.parametrize("then", ["answered", "failed"])
async def test_each_new_order_leaves_once_it_is_signed(
    aws_key: str, misbehaving: Any, then: str
) -> None:
    """The KMS answers two of a ladder's three signatures and holds the third: the two
    signed orders are placed meanwhile (a requote's places do not wait for its slowest
    signature). Answered, the third is placed too; failed, the requote raises the
    signer's error once the rest is done, the two placed stay, the third is not sent,
    and the next requote places it alone. Before, nothing left until all three were
    signed, and a failure sent none."""
    async with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url, timeout=60.0) as signer:
        with sandbox_for(signer.address, 2) as sb:
            async with AsyncClient(**options(sb)) as client:
                market, user = pick_market(sb), sb.users[1].user_id
                ladder = [Quote("BUY", f"0.0{i}", 200) for i in range(1, 4)]
                async with Quoter(client, market, "a", signer=signer) as q:
                    misbehaving.hold_from = misbehaving.signs + 2
                    requote = asyncio.ensure_future(q.requote(ladder))
                    # placed, the third still signing (30 s: a hang guard only)
                    await eventually(lambda: len(live_prices(sb, user)) == 2, 30)
                    assert len(live_prices(sb, user)) == 2
                    assert sb.requests.count(*RAW) == 2
                    assert not requote.done()
                    if then == "answered":
                        misbehaving.let_go()
                        report = await asyncio.wait_for(requote, 30)
                        assert len(report.placed) == 3
                    else:
                        misbehaving.reset()  # the held call answers 503: the signer fails
                        with pytest.raises(SignerError, match=aws_key):
                            await asyncio.wait_for(requote, 30)
                        assert len(live_prices(sb, user)) == 2
                        assert len(q.open_orders) == 2
                        assert sb.requests.count(*RAW) == 2
                        report = await q.requote(ladder)  # the missing level alone
                        assert len(report.placed) == 1
                        assert len(report.kept) == 2
                    assert live_prices(sb, user) == ["0.01", "0.02", "0.03"]
                    assert sb.requests.count(*RAW) == 3


async def test_places_that_wait_for_the_cancels_send_what_was_signed(
    aws_key: str, misbehaving: Any
) -> None:
    """Old and new ladders together would pass ``max_notional``: the new orders wait for
    the old ones' cancels. The KMS fails one of the three new signatures: the two
    signed are placed once the cancels are done, the requote raises the signer's
    error, the third is never sent."""
    async with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url, timeout=60.0) as signer:
        with sandbox_for(signer.address, 2) as sb:
            async with AsyncClient(**options(sb)) as client:
                market, user = pick_market(sb), sb.users[1].user_id
                old = [Quote("BUY", f"0.0{i}", 200) for i in range(1, 4)]  # 12 USDC
                new = [Quote("BUY", f"0.0{i}", 200) for i in range(5, 8)]  # 36 USDC
                async with Quoter(client, market, "a", signer=signer, max_notional=40) as q:
                    await q.requote(old)
                    misbehaving.hold_from = misbehaving.signs + 2
                    requote = asyncio.ensure_future(q.requote(new))
                    await eventually(
                        lambda: not live_prices(sb, user) and misbehaving.signs >= 6, 30
                    )
                    assert live_prices(sb, user) == []  # cancelled; nothing new before all signed
                    assert sb.requests.count(*RAW) == 3
                    misbehaving.reset()
                    with pytest.raises(SignerError, match=aws_key):
                        await asyncio.wait_for(requote, 30)
                    assert len(live_prices(sb, user)) == 2
                    assert sb.requests.count(*RAW) == 5
                    assert len(q.open_orders) == 2


async def test_a_desk_checks_its_signer_on_enter() -> None:
    with sandbox_for(LOCAL.address, 2) as sb:
        async with AsyncClient(**options(sb)) as client:
            with pytest.raises(OrderFieldError, match="is not this wallet's signer"):
                async with Desk(client, signer=OrderSigner("0x" + "66" * 32)):
                    pass
            async with Desk(client, signer=LOCAL) as desk:
                q = desk.quoter(pick_market(sb), "a")
                await desk.requote({q: [Quote("BUY", "0.02", 200)]})
                assert desk.metrics()["sign_latency"]["count"] == 1
                with pytest.raises(Exception, match="signer: is the desk's"):
                    Quoter(client, q.market_id, "b", desk=desk, signer=LOCAL)


def test_the_sync_client_signs_through_a_kms_signers_twin(aws_url: str, aws_key: str) -> None:
    with AwsKmsSigner(aws_key, endpoint_url=aws_url) as signer:
        with sandbox_for(signer.address, 2) as sb, Client(**options(sb)) as client:
            placed = client.place_raw_order(pick_market(sb), "a", "BUY", "0.05", 20, signer=signer)
            assert sb.engine.orders[placed.order_id]
        digest = bytes.fromhex(placed.signed_order_id[2:])
        assert recovered(digest, placed.signature) == signer.address
        assert low_s(placed.signature)
