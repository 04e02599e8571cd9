"""GcpKmsSigner through google-cloud-kms's real async and sync clients, over a real
gRPC channel, against a loopback stand-in of Cloud KMS's ``GetPublicKey`` and
``AsymmetricSign`` (tests/signing/gcp_standin.py)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from clobkit.errors import (
    SignatureMismatch,
    SignerDenied,
    SignerError,
    SignerKeyError,
    SignerThrottled,
    SignerTimeout,
)

from ..conftest import import_extra
from .oracle import low_s, recovered

DIGESTS = [os.urandom(32) for _ in range(8)]


def async_client(address: str) -> Any:
    import grpc
    from google.cloud import kms_v1
    from google.cloud.kms_v1.services.key_management_service.transports import (
        KeyManagementServiceGrpcAsyncIOTransport,
    )

    channel = grpc.aio.insecure_channel(address)
    transport = KeyManagementServiceGrpcAsyncIOTransport(channel=channel)
    return kms_v1.KeyManagementServiceAsyncClient(transport=transport)


def sync_client(address: str) -> Any:
    import grpc
    from google.cloud import kms_v1
    from google.cloud.kms_v1.services.key_management_service.transports import (
        KeyManagementServiceGrpcTransport,
    )

    transport = KeyManagementServiceGrpcTransport(channel=grpc.insecure_channel(address))
    return kms_v1.KeyManagementServiceClient(transport=transport)


def signer(name: str, client: Any, **options: Any) -> Any:
    signing = import_extra("clobkit.signing.gcp", "kms-gcp")
    return signing.GcpKmsSigner(name, client=client, **options)


async def test_signatures_recover_to_the_keys_address(gcp: Any) -> None:
    stand_in, address = gcp
    async with signer(stand_in.name, lambda: async_client(address)) as s:
        signatures = await s.sign_digests(DIGESTS)
    from eth_keys import keys

    point = stand_in.key.public_key.format(compressed=False)[1:]
    assert s.address == keys.PublicKey(point).to_checksum_address()
    assert [recovered(d, sig) for d, sig in zip(DIGESTS, signatures, strict=False)] == [
        s.address
    ] * 8
    assert all(low_s(sig) for sig in signatures)
    assert stand_in.signs == 8


def test_the_sync_twin(gcp: Any) -> None:
    stand_in, address = gcp
    with signer(stand_in.name, sync_client(address)) as s:
        signatures = s.sign_many(DIGESTS[:4])
    assert [recovered(d, sig) for d, sig in zip(DIGESTS, signatures, strict=False)] == [
        s.address
    ] * 4


async def test_a_key_of_another_algorithm(gcp: Any) -> None:
    from .gcp_standin import Algorithm

    stand_in, address = gcp
    stand_in.algorithm = Algorithm.EC_SIGN_P256_SHA256
    with pytest.raises(SignerKeyError, match=r"EC_SIGN_P256_SHA256.*EC_SIGN_SECP256K1_SHA256"):
        async with signer(stand_in.name, lambda: async_client(address)):
            pass


async def test_a_disabled_key_and_a_denied_call(gcp: Any) -> None:
    stand_in, address = gcp
    async with signer(stand_in.name, lambda: async_client(address)) as s:
        stand_in.disabled = True
        with pytest.raises(SignerKeyError, match=f"{stand_in.name}: FailedPrecondition.*DISABLED"):
            await s.sign_digests(DIGESTS[:2])
        stand_in.disabled, stand_in.denied = False, True
        with pytest.raises(SignerDenied, match=f"{stand_in.name}.*signerVerifier"):
            await s.sign_digests(DIGESTS[:2])


async def test_a_missing_key(gcp: Any) -> None:
    _, address = gcp
    with pytest.raises(SignerKeyError, match=r"projects/x.*NotFound"):
        async with signer("projects/x", lambda: async_client(address)):
            pass


async def test_tampering_throttling_and_a_storm(gcp: Any) -> None:
    stand_in, address = gcp
    async with signer(stand_in.name, lambda: async_client(address), retries=3) as s:
        stand_in.throttle = 2
        signatures = await s.sign_digests(DIGESTS[:1])
        assert recovered(DIGESTS[0], signatures[0]) == s.address
        assert s.counts()["throttled"] == 2
        stand_in.throttle = 10**6
        with pytest.raises(SignerThrottled, match=f"{stand_in.name}.*RESOURCE_EXHAUSTED"):
            await s.sign_digests(DIGESTS[:2])
        stand_in.throttle = 0
        stand_in.tamper = True
        with pytest.raises(SignatureMismatch, match=stand_in.name):
            await s.sign_digests(DIGESTS[:2])


async def test_a_kms_that_hangs(gcp: Any) -> None:
    stand_in, address = gcp
    async with signer(stand_in.name, lambda: async_client(address), timeout=1.0) as s:
        stand_in.hang = True
        with pytest.raises(SignerTimeout, match=f"{stand_in.name}: Cloud KMS gave no answer"):
            await s.sign_digests(DIGESTS[:1])


async def test_a_client_of_the_other_flavour(gcp: Any) -> None:
    stand_in, address = gcp
    s = signer(stand_in.name, lambda: async_client(address))
    with pytest.raises(SignerError, match="KeyManagementServiceClient for 'with'"), s:
        pass


async def test_no_credentials_in_the_chain(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No Application Default Credentials: the client is never made, a ``SignerDenied``
    naming the key, in both flavours and through the command (no traceback)."""
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))  # no gcloud login
    monkeypatch.setenv("NO_GCE_CHECK", "True")  # not a Google Cloud machine
    name = "projects/p/locations/global/keyRings/r/cryptoKeys/k/cryptoKeyVersions/1"
    with pytest.raises(SignerDenied, match=f"{name}: no Google credentials"):
        async with signer(name, None):
            pass
    with pytest.raises(SignerDenied, match=f"{name}: no Google credentials"), signer(name, None):
        pass
    from clobkit import cli

    from ..cli.test_cli_order_ids import write_csv
    from ..cli.test_cli_order_ids_v2 import V2_WALLET, v2_orders, wallet_file

    src = tmp_path / "in.csv"
    write_csv(src, v2_orders(1, full=False))
    wallet = str(wallet_file(tmp_path, V2_WALLET))
    args = ["order-ids", "--wallet", wallet, "--sign", "--kms", f"gcp:{name}", str(src)]
    assert cli.main([*args, str(tmp_path / "out.csv")]) == 1  # a failure, as an API error
    err = capsys.readouterr().err
    assert f"{name}: no Google credentials" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out.csv").exists()


def test_a_given_client_cannot_go_to_a_signer_process(gcp: Any) -> None:
    from clobkit.errors import ValidationError

    stand_in, address = gcp
    with pytest.raises(ValidationError, match=r"process.*cannot go to another process"):
        signer(stand_in.name, lambda: async_client(address), process=True)
