"""Fixtures of the signer tests: AWS KMS (ministack) on loopback with a key of spec
ECC_SECG_P256K1, credentials from the environment (the usual chain), and the Cloud
KMS stand-in."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from ..conftest import import_extra


@pytest.fixture(scope="session")
def aws_url() -> Iterator[str]:
    """ministack's KMS, one process per test session (per xdist worker)."""
    import_extra("aiobotocore", "kms-aws")
    import_extra("ministack", "kms-aws")
    from .aws_kms import CREDENTIALS, ministack

    saved = {k: os.environ.get(k) for k in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    try:
        with ministack() as url:
            yield url
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def aws_key(aws_url: str) -> str:
    """A secp256k1 signing key's id."""
    from .aws_kms import kms_client

    meta = kms_client(aws_url).create_key(KeySpec="ECC_SECG_P256K1", KeyUsage="SIGN_VERIFY")
    return str(meta["KeyMetadata"]["KeyId"])


@pytest.fixture(scope="module")
def _misbehaving(aws_url: str) -> Iterator[Any]:
    from .aws_kms import Misbehaving

    with Misbehaving(aws_url) as stand_in:
        yield stand_in


@pytest.fixture
def misbehaving(_misbehaving: Any) -> Iterator[Any]:
    """A stand-in in front of ministack that throttles, hangs or tampers when told
    (one a module, back to forwarding for each test)."""
    _misbehaving.reset()
    yield _misbehaving
    _misbehaving.reset()


@pytest.fixture(scope="module")
def _gcp() -> Iterator[Any]:
    import_extra("google.cloud.kms_v1", "kms-gcp")
    from .gcp_standin import GcpStandIn, serve

    stand_in = GcpStandIn()
    server, address = serve(stand_in)
    try:
        yield stand_in, address
    finally:
        stand_in.reset()
        server.stop(0)


@pytest.fixture
def gcp(_gcp: tuple[Any, str]) -> Iterator[tuple[Any, str]]:
    """The Cloud KMS stand-in on loopback (one a module, healthy for each test):
    (stand-in, address)."""
    _gcp[0].reset()
    yield _gcp
    _gcp[0].reset()
