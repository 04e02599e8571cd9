"""AwsKmsSigner through the real aiobotocore / botocore clients against AWS KMS's API
on loopback (ministack: ``Sign`` with ``MessageType=DIGEST`` signs the digest as
given), and a stand-in in front of it that throttles, hangs or tampers."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
from typing import Any, TypedDict

import pytest

import clobkit
from clobkit.errors import (
    SignatureMismatch,
    SignerDenied,
    SignerError,
    SignerKeyError,
    SignerThrottled,
    SignerTimeout,
    ValidationError,
)
from clobkit.signing import AwsKmsSigner

from .aws_kms import kms_client
from .oracle import address_of_spki, low_s, recovered

DIGESTS = [os.urandom(32) for _ in range(8)]


#: Where the async client runs: its own loop in a thread, the caller's loop, a process.
class Home(TypedDict, total=False):
    """Where the async client runs (``RemoteOptions``' two keys of it)."""

    thread: bool
    process: bool | int


_HOMES: list[Home] = [{"thread": True}, {"thread": False}, {"process": True}, {"process": 2}]
HOMES = pytest.mark.parametrize(
    "home",
    _HOMES,
    ids=["own-loop", "caller-loop", "own-process", "two-processes"],
)


@HOMES
async def test_signatures_recover_to_the_keys_address(
    aws_url: str, aws_key: str, home: Home
) -> None:
    public = kms_client(aws_url).get_public_key(KeyId=aws_key)["PublicKey"]
    async with AwsKmsSigner(aws_key, endpoint_url=aws_url, **home) as signer:
        assert signer.address == address_of_spki(public)
        signatures = await signer.sign_digests(DIGESTS)
    assert all(recovered(d, s) == signer.address for d, s in zip(DIGESTS, signatures, strict=False))
    assert all(low_s(s) for s in signatures)  # KMS returns high s half of the time
    assert signer.counts()["calls"] == len(DIGESTS)


@HOMES
async def test_the_calls_carry_a_fixed_user_agent(
    aws_key: str, misbehaving: Any, home: Home
) -> None:
    # botocore's default User-Agent costs a quarter of a call's CPU: the signer's own
    async with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url, **home) as signer:
        await signer.sign_digests(DIGESTS[:2])
    with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url) as signer:
        signer.sign_many(DIGESTS[:2])
    assert {a.split()[0] for a in misbehaving.agents} == {f"clobkit/{clobkit.__version__}"}


def test_the_sync_twin_signs_alike(aws_url: str, aws_key: str) -> None:
    with AwsKmsSigner(aws_key, endpoint_url=aws_url) as signer:
        signatures = signer.sign_many(DIGESTS[:6])
        assert [recovered(d, s) for d, s in zip(DIGESTS, signatures, strict=False)] == [
            signer.address
        ] * 6
        assert all(low_s(s) for s in signatures)
        assert signer.sign_many([DIGESTS[0].hex().join(("0x", ""))])  # hex digests too


@HOMES
async def test_a_key_of_another_spec_is_refused_at_start(aws_url: str, home: Home) -> None:
    key = kms_client(aws_url).create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")
    key_id = key["KeyMetadata"]["KeyId"]
    with pytest.raises(SignerKeyError, match=f"{key_id}.*ECC_NIST_P256.*ECC_SECG_P256K1"):
        async with AwsKmsSigner(key_id, endpoint_url=aws_url, **home):
            pass


@HOMES
async def test_a_disabled_key_names_the_key_and_the_cause(
    aws_url: str, caplog: pytest.LogCaptureFixture, home: Home
) -> None:
    kms = kms_client(aws_url)
    key_id = kms.create_key(KeySpec="ECC_SECG_P256K1", KeyUsage="SIGN_VERIFY")["KeyMetadata"][
        "KeyId"
    ]
    async with AwsKmsSigner(key_id, endpoint_url=aws_url, **home) as signer:
        kms.disable_key(KeyId=key_id)
        with pytest.raises(SignerKeyError, match=f"signer key {key_id}: DisabledException"):
            await signer.sign_digests(DIGESTS[:3])
    # every request of the batch failed: each failure was read, none is left for the
    # garbage collector to log as "never retrieved"
    gc.collect()
    assert "never retrieved" not in caplog.text


@HOMES
async def test_a_missing_key(aws_url: str, home: Home) -> None:
    with pytest.raises(SignerKeyError, match=r"nope.*NotFoundException"):
        async with AwsKmsSigner("nope", endpoint_url=aws_url, **home):
            pass


@HOMES
async def test_a_signature_by_another_key_is_refused(
    aws_url: str, aws_key: str, misbehaving: Any, home: Home
) -> None:
    other = kms_client(aws_url).create_key(KeySpec="ECC_SECG_P256K1", KeyUsage="SIGN_VERIFY")
    async with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url, **home) as signer:
        misbehaving.tamper = other["KeyMetadata"]["KeyId"]
        with pytest.raises(SignatureMismatch, match=f"{aws_key}.*does not recover"):
            await signer.sign_digests(DIGESTS[:4])


async def test_a_denied_call_and_no_credentials(
    aws_key: str, misbehaving: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url) as signer:
        misbehaving.deny = True
        with pytest.raises(SignerDenied, match=f"{aws_key}: AccessDeniedException.*kms:Sign"):
            await signer.sign_digests(DIGESTS[:2])
    # the usual chain, empty: no variables, no files, no instance role
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(SignerDenied, match=f"{aws_key}: no AWS credentials in the usual chain"):
        async with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url):
            pass
    s = AwsKmsSigner(aws_key, endpoint_url=misbehaving.url)
    with pytest.raises(SignerDenied, match="no AWS credentials"), s:
        pass


@HOMES
async def test_throttling_backs_off_and_is_counted(
    aws_key: str, misbehaving: Any, home: Home
) -> None:
    async with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url, **home) as signer:
        misbehaving.throttle = 5
        signatures = await signer.sign_digests(DIGESTS[:2])
        assert [recovered(d, s) for d, s in zip(DIGESTS, signatures, strict=False)] == [
            signer.address
        ] * 2
        assert signer.counts()["throttled"] == 5
        assert signer.counts()["retries"] == 5


@HOMES
async def test_a_throttling_storm_ends_in_an_error(
    aws_key: str, misbehaving: Any, home: Home
) -> None:
    async with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url, retries=2, **home) as signer:
        misbehaving.throttle = 10**6
        with pytest.raises(SignerThrottled, match=f"{aws_key}.*ThrottlingException"):
            await signer.sign_digests(DIGESTS[:8])
    assert signer.counts()["throttled"] >= 3


def test_a_throttling_storm_ends_in_an_error_sync(aws_key: str, misbehaving: Any) -> None:
    with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url, retries=1) as signer:
        misbehaving.throttle = 10**6
        with pytest.raises(SignerThrottled, match=aws_key):
            signer.sign_many(DIGESTS[:2])


@HOMES
async def test_a_kms_that_hangs_times_out(aws_key: str, misbehaving: Any, home: Home) -> None:
    async with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url, timeout=1.0, **home) as signer:
        misbehaving.hang = True
        with pytest.raises(SignerTimeout, match=f"{aws_key}: AWS KMS gave no answer within 1 s"):
            await signer.sign_digests(DIGESTS[:3])
        assert isinstance(SignerTimeout("k", "c"), TimeoutError)


def test_a_kms_that_hangs_times_out_sync(aws_key: str, misbehaving: Any) -> None:
    with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url, timeout=1.0, retries=0) as signer:
        misbehaving.hang = True
        with pytest.raises(SignerTimeout, match=aws_key):
            signer.sign_many(DIGESTS[:1])


@HOMES
async def test_an_unreachable_kms(aws_key: str, home: Home) -> None:
    from .aws_kms import free_port

    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(SignerError, match=f"{aws_key}: could not reach AWS KMS"):
        async with AwsKmsSigner(aws_key, endpoint_url=url, retries=1, **home):
            pass


async def test_before_start_and_bad_arguments(aws_url: str, aws_key: str) -> None:
    signer = AwsKmsSigner(aws_key, endpoint_url=aws_url)
    with pytest.raises(SignerError, match="not started"):
        signer.address  # noqa: B018
    with pytest.raises(SignerError, match="not started"):
        await signer.sign_digests(DIGESTS[:1])
    with pytest.raises(ValidationError, match="key"):
        AwsKmsSigner("")
    with pytest.raises(ValidationError, match="rate"):
        AwsKmsSigner(aws_key, rate=0)
    with pytest.raises(ValidationError, match="timeout"):
        AwsKmsSigner(aws_key, timeout=float("nan"))
    for processes in (-1, 65, "2", 1.5, None):
        with pytest.raises(
            ValidationError, match=rf"process: .*from 0 to 64 \(got {processes!r}\)"
        ):
            AwsKmsSigner(aws_key, process=processes)  # type: ignore[arg-type]
    assert [AwsKmsSigner(aws_key, process=p).process for p in (False, True, 0, 3)] == [0, 1, 0, 3]
    async with signer:
        with pytest.raises(ValidationError, match=r"digests\[1\]"):
            await signer.sign_digests([DIGESTS[0], b"short"])
        assert signer.counts()["calls"] == 0  # a bad digest: nothing was sent
    assert "AwsKmsSigner" in repr(signer)
    assert aws_key in repr(signer)


async def test_the_rate_bounds_calls_started_per_second(aws_url: str, aws_key: str) -> None:
    """More digests than the burst at once: the rest wait for the rate (counted)."""
    async with AwsKmsSigner(aws_key, endpoint_url=aws_url, rate=4, burst=2) as signer:
        await asyncio.gather(signer.sign_digests(DIGESTS[:3]), signer.sign_digests(DIGESTS[3:6]))
    assert signer.counts()["waited"] >= 2


async def test_a_signer_process_that_dies_fails_its_calls_and_signs_nothing(
    aws_key: str, misbehaving: Any
) -> None:
    async with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url, process=True) as signer:
        assert await signer.sign_digests(DIGESTS[:1])
        (worker,) = signer._workers
        assert worker._process is not None
        misbehaving.hang = True  # the calls in flight when it dies
        batch = asyncio.ensure_future(signer.sign_digests(DIGESTS[:4]))
        await asyncio.sleep(0.5)
        os.kill(worker._process.pid, signal.SIGKILL)
        with pytest.raises(SignerError, match=f"{aws_key}: the signer's process is gone"):
            await asyncio.wait_for(batch, 10)
        with pytest.raises(SignerError, match="the signer's process is gone"):
            await signer.sign_digests(DIGESTS[:1])  # and every later call, at once
    assert worker._process.returncode == -signal.SIGKILL


async def test_calls_are_spread_over_the_signers_processes(aws_url: str, aws_key: str) -> None:
    """``process=2``: each call goes to the less busy process (the SDK's CPU a call on
    two cores), under one budget; every signature recovers to the key."""
    async with AwsKmsSigner(aws_key, endpoint_url=aws_url, process=2) as signer:
        first, second = signer._workers
        digests = [os.urandom(32) for _ in range(16)]
        signatures = await signer.sign_digests(digests)
        assert {recovered(d, s) for d, s in zip(digests, signatures, strict=True)} == {
            signer.address
        }
        assert first.sent > 0
        assert second.sent > 0
        assert first.sent + second.sent == signer.counts()["calls"] == 16
    assert [w._process.returncode for w in (first, second) if w._process] == [0, 0]


async def test_one_of_the_signers_processes_dying_fails_every_later_call(
    aws_key: str, misbehaving: Any
) -> None:
    """One process of two killed: the calls it held fail, and so does every later
    call, though the other still runs (a signer half gone is restarted whole)."""
    async with AwsKmsSigner(aws_key, endpoint_url=misbehaving.url, process=2) as signer:
        dying, other = signer._workers
        assert await signer.sign_digests(DIGESTS[:2])
        misbehaving.hang = True
        batch = asyncio.ensure_future(signer.sign_digests(DIGESTS[:4]))
        await asyncio.sleep(0.5)
        assert dying._process is not None
        os.kill(dying._process.pid, signal.SIGKILL)
        with pytest.raises(SignerError, match=f"{aws_key}: the signer's process is gone"):
            await asyncio.wait_for(batch, 10)
        misbehaving.hang = False
        sent = other.sent
        for _ in range(3):
            with pytest.raises(SignerError, match="the signer's process is gone"):
                await signer.sign_digests(DIGESTS[:1])
        assert other.sent == sent  # nothing more sent, even to the one alive
    assert other._process is not None
    assert other._process.returncode == 0


async def test_a_signer_process_ends_with_the_signer(aws_url: str, aws_key: str) -> None:
    signer = AwsKmsSigner(aws_key, endpoint_url=aws_url, process=True)
    async with signer:
        (worker,) = signer._workers
        assert worker._process is not None
        assert worker._process.returncode is None  # running
        # a cancelled call's answer, when it comes, is dropped; the next calls are whole
        call = asyncio.ensure_future(signer.sign_digests(DIGESTS[:2]))
        await asyncio.sleep(0)
        call.cancel()
        signatures = await signer.sign_digests(DIGESTS[2:5])
        assert [recovered(d, s) for d, s in zip(DIGESTS[2:5], signatures, strict=True)] == [
            signer.address
        ] * 3
        # Ctrl-C in a terminal reaches the child too: the signer decides when it ends
        os.kill(worker._process.pid, signal.SIGINT)
        await asyncio.sleep(0.3)
        assert await signer.sign_digests(DIGESTS[5:6])
    assert worker._process.returncode == 0  # ended by the signer's close, not killed
    with pytest.raises(SignerError, match="not started"):
        await signer.sign_digests(DIGESTS[:1])
