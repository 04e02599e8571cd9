"""A KMS answer made an exchange signature (clobkit.signing.ecdsa), held to independent
writers and readers: ``cryptography`` encodes the DER and the SubjectPublicKeyInfo,
coincurve signs, eth-account recovers. And the sign budget's window."""

from __future__ import annotations

import os

import pytest
from coincurve import PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from clobkit.signing.budget import SignBudget
from clobkit.signing.ecdsa import (
    N,
    ShapeError,
    address_of,
    der_signature,
    pem_public_key,
    recoverable,
    spki_public_key,
)

from ..conftest import examples, import_extra
from .oracle import low_s, recovered

crypto = import_extra("cryptography.hazmat.primitives.asymmetric.utils", "kms-aws")
encode_dss_signature = crypto.encode_dss_signature


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(1, N - 1), st.integers(1, N - 1))
def test_der_is_read_as_cryptography_writes_it(r: int, s: int) -> None:
    assert der_signature(encode_dss_signature(r, s)) == (r, s)


@pytest.mark.parametrize(
    "der",
    [
        b"",
        bytes.fromhex("3006020101020101") + b"\x00",  # a byte after the sequence
        bytes.fromhex("300702020001020101"),  # r padded with a needless zero
        bytes.fromhex("3006020181020101"),  # r negative
        bytes.fromhex("3006020100020101"),  # r zero
        bytes.fromhex("3006020101020100"),  # s zero
        bytes.fromhex("3106020101020101"),  # not a SEQUENCE
        bytes.fromhex("3007020101020101"),  # the length of the sequence wrong
    ],
)
def test_anything_but_strict_der_is_refused(der: bytes) -> None:
    with pytest.raises(ShapeError):
        der_signature(der)


@settings(max_examples=examples(100), deadline=None)
@given(st.binary(min_size=32, max_size=32), st.booleans())
def test_high_s_made_low_and_v_found(digest: bytes, flip: bool) -> None:
    key = PrivateKey(os.urandom(32))
    compact = key.sign_recoverable(digest, hasher=None)
    r, s = int.from_bytes(compact[:32], "big"), int.from_bytes(compact[32:64], "big")
    if flip:
        s = N - s  # what a KMS returns half of the time
    public = key.public_key.format(compressed=False)
    signature = recoverable(digest, r, s, public)
    assert signature is not None
    assert low_s(signature)
    assert recovered(digest, signature) == address_of(public)
    other = PrivateKey(os.urandom(32)).public_key.format(compressed=False)
    assert recoverable(digest, r, s, other) is None  # not this key's: no v found


def test_public_keys_as_cryptography_writes_them() -> None:
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    secp = ec.generate_private_key(ec.SECP256K1()).public_key()
    point = secp.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
    der = secp.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    pem = secp.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()
    assert spki_public_key(der) == point
    assert pem_public_key(pem) == point
    p256 = ec.generate_private_key(ec.SECP256R1()).public_key()
    with pytest.raises(ShapeError, match="not a secp256k1 public key"):
        spki_public_key(p256.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo))
    compressed = secp.public_bytes(Encoding.X962, PublicFormat.CompressedPoint)
    with pytest.raises(ShapeError):
        spki_public_key(der[:23] + compressed)
    with pytest.raises(ShapeError, match="not on secp256k1"):
        spki_public_key(der[:24] + bytes(64))
    for bad in ("", pem.replace("PUBLIC KEY-----\n", "PUBLIC KEY-----\n!", 1), pem[:-30]):
        with pytest.raises(ShapeError):
            pem_public_key(bad)


def test_the_budget_bucket() -> None:
    budget = SignBudget(rate=3, max_in_flight=2, burst=3)
    assert [budget.delay() for _ in range(3)] == [0.0, 0.0, 0.0]  # a burst at once
    waits = [budget.delay() for _ in range(3)]
    assert 0.0 < waits[0] < waits[1] < waits[2] <= 1.0  # reserved in turn, at the rate
    assert budget.counts() == {"calls": 6, "throttled": 0, "retries": 0, "waited": 3}
    assert 0.0 <= budget.backoff(1, throttled=True) <= 0.05
    assert 0.0 <= budget.backoff(10, throttled=False) <= 2.0
    assert budget.counts()["throttled"] == 1
    assert budget.counts()["retries"] == 2
