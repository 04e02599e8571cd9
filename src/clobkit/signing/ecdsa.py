"""What a KMS's ECDSA answer needs before an exchange takes it: the DER ``(r, s)``
decoded, ``s`` made low (EIP-2), ``v`` found by recovering against the key's public
key (read once), and the public key read out of its SubjectPublicKeyInfo.

A KMS signs the 32-byte digest it is sent with the key it holds and returns DER;
it knows nothing of Ethereum: half of its signatures have a high ``s`` (the
exchange, like every EVM contract using OpenZeppelin's ECDSA, refuses those) and
none carries the recovery id. Both are fixed here, and a signature that recovers
to neither parity of the key is refused (``SignatureMismatch``), never sent.
"""

from __future__ import annotations

import base64
import binascii

from ..core.choice import keccak256
from ..core.wallet import checksum

__all__ = [
    "N",
    "address_of",
    "der_signature",
    "pem_public_key",
    "recoverable",
    "spki_public_key",
]

#: secp256k1's group order.
N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_HALF_N = N // 2

# SubjectPublicKeyInfo of an uncompressed secp256k1 point, up to the point:
# SEQUENCE { SEQUENCE { id-ecPublicKey (1.2.840.10045.2.1), secp256k1
# (1.3.132.0.10) }, BIT STRING (0 unused bits) 04 || X || Y }. DER has one encoding
# of it; any other key (another curve, RSA, a compressed point) differs here.
_SPKI_PREFIX = bytes.fromhex("3056301006072a8648ce3d020106052b8104000a034200")


class ShapeError(ValueError):
    """A DER signature or a public key that is not what a secp256k1 key gives."""


def _der_int(data: bytes, at: int) -> tuple[int, int]:
    """A positive DER INTEGER at ``data[at]``: its value and where the next item starts."""
    if data[at : at + 1] != b"\x02" or at + 2 > len(data):
        raise ShapeError("an INTEGER was expected")
    size = data[at + 1]
    body = data[at + 2 : at + 2 + size]
    if size == 0 or size > 33 or len(body) != size:
        raise ShapeError("an INTEGER of a bad length")
    if body[0] & 0x80 or (size > 1 and body[0] == 0 and not body[1] & 0x80):
        raise ShapeError("an INTEGER not in its one DER form")  # negative, or padded
    return int.from_bytes(body, "big"), at + 2 + size


def der_signature(der: bytes) -> tuple[int, int]:
    """``(r, s)`` of a DER ``ECDSA-Sig-Value``; ``ShapeError`` unless strictly DER
    with ``r`` and ``s`` in ``[1, n)``."""
    if len(der) < 8 or der[0] != 0x30 or der[1] != len(der) - 2:
        raise ShapeError(f"not a DER ECDSA signature ({len(der)} bytes)")
    r, at = _der_int(der, 2)
    s, at = _der_int(der, at)
    if at != len(der):
        raise ShapeError("bytes after the signature")
    if not (0 < r < N and 0 < s < N):
        raise ShapeError("r or s out of range")
    return r, s


def recoverable(digest: bytes, r: int, s: int, public_key: bytes) -> str | None:
    """``"0x"`` + 130 hex digits: ``r || s || v`` with ``s`` low and ``v`` 27/28 such that
    the signature recovers to ``public_key`` (65 bytes, uncompressed); ``None`` when
    it recovers to neither parity (not this key's signature of ``digest``)."""
    from coincurve import PublicKey

    if s > _HALF_N:
        s = N - s  # the same signature, the other parity: low-s (EIP-2)
    body = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    for recid in (0, 1):
        try:
            found = PublicKey.from_signature_and_message(
                body + bytes((recid,)), digest, hasher=None
            ).format(compressed=False)
        except ValueError:  # no point for this parity
            continue
        if found == public_key:
            return "0x" + body.hex() + format(27 + recid, "02x")
    return None


def spki_public_key(der: bytes) -> bytes:
    """The 65-byte uncompressed point of a secp256k1 SubjectPublicKeyInfo (DER), checked
    to lie on the curve; ``ShapeError`` for any other key."""
    from coincurve import PublicKey

    if len(der) != len(_SPKI_PREFIX) + 65 or not der.startswith(_SPKI_PREFIX):
        raise ShapeError("not a secp256k1 public key (SubjectPublicKeyInfo)")
    point = der[len(_SPKI_PREFIX) :]
    try:
        PublicKey(point)
    except ValueError:
        raise ShapeError("a point not on secp256k1") from None
    return point


def pem_public_key(pem: str) -> bytes:
    """``spki_public_key`` of a PEM ``PUBLIC KEY`` block."""
    lines = [line.strip() for line in pem.strip().splitlines()]
    if len(lines) < 3 or lines[0] != "-----BEGIN PUBLIC KEY-----":
        raise ShapeError("not a PEM public key")
    if lines[-1] != "-----END PUBLIC KEY-----":
        raise ShapeError("not a PEM public key")
    try:
        der = base64.b64decode("".join(lines[1:-1]), validate=True)
    except binascii.Error:
        raise ShapeError("a PEM public key that is not base64") from None
    return spki_public_key(der)


def address_of(public_key: bytes) -> str:
    """The EIP-55 address of a 65-byte uncompressed public key."""
    return "0x" + checksum(keccak256(public_key[1:])[12:].hex(), keccak256)
