"""A loopback stand-in of Cloud KMS's gRPC service: the documented ``GetPublicKey``
and ``AsymmetricSign`` calls of ``google.cloud.kms.v1.KeyManagementService``, served
by grpcio's own server with google-cloud-kms's own message types, so that the real
client (``KeyManagementServiceAsyncClient`` / ``KeyManagementServiceClient``) talks
to it over a real channel. It signs like the service: the digest as given, ECDSA
with a random nonce (coincurve over libsecp256k1), DER, and, as a KMS knows nothing
of Ethereum, a high ``s`` about half of the time; with CRC32C both ways.

Behaviours for the bad-input tests: ``disabled`` (FAILED_PRECONDITION), ``denied``
(PERMISSION_DENIED), ``throttle`` (RESOURCE_EXHAUSTED for the next N signs),
``hang`` (no answer), ``tamper`` (signs with another key), ``algorithm`` (the key's
reported algorithm).
"""

from __future__ import annotations

import os
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import google_crc32c
import grpc
from coincurve import PrivateKey
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from google.cloud import kms_v1

N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
SERVICE = "google.cloud.kms.v1.KeyManagementService"
Algorithm = kms_v1.CryptoKeyVersion.CryptoKeyVersionAlgorithm


def sign_like_a_kms(key: PrivateKey, digest: bytes) -> bytes:
    """A DER signature of ``digest`` as given; ``s`` high half of the time."""
    compact = key.sign_recoverable(digest, hasher=None)  # low-s, as libsecp256k1 makes it
    r, s = int.from_bytes(compact[:32], "big"), int.from_bytes(compact[32:64], "big")
    if random.random() < 0.5:
        s = N - s
    return encode_dss_signature(r, s)


@dataclass
class GcpStandIn:
    """The service's state: one key version and what it is told to do."""

    name: str = "projects/p/locations/global/keyRings/r/cryptoKeys/k/cryptoKeyVersions/1"
    key: PrivateKey = field(default_factory=lambda: PrivateKey(os.urandom(32)))
    algorithm: Any = Algorithm.EC_SIGN_SECP256K1_SHA256
    disabled: bool = False
    denied: bool = False
    throttle: int = 0
    hang: bool = False
    tamper: bool = False
    signs: int = 0
    release: threading.Event = field(default_factory=threading.Event)

    def get_public_key(self, request: Any, context: Any) -> Any:
        if request.name != self.name:
            context.abort(grpc.StatusCode.NOT_FOUND, f"{request.name} not found")
        pem = _pem(self.key)
        return kms_v1.PublicKey(
            pem=pem,
            algorithm=self.algorithm,
            pem_crc32c=google_crc32c.value(pem.encode()),
            name=self.name,
        )

    def reset(self) -> None:
        """Back to a healthy service (one stand-in serves a module's tests): hung calls let go."""
        self.algorithm = Algorithm.EC_SIGN_SECP256K1_SHA256
        self.disabled = self.denied = self.hang = self.tamper = False
        self.throttle = self.signs = 0
        released, self.release = self.release, threading.Event()
        released.set()

    def asymmetric_sign(self, request: Any, context: Any) -> Any:
        if self.hang:
            self.release.wait(30)
            context.abort(grpc.StatusCode.UNAVAILABLE, "no answer")  # the caller gave up
        if self.denied:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "cloudkms.useToSign denied")
        if self.disabled:
            context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"{self.name} is not enabled, current state is: DISABLED.",
            )
        if self.throttle:
            self.throttle -= 1
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "Quota exceeded")
        digest = request.digest.sha256
        if google_crc32c.value(digest) != request.digest_crc32c:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "digest_crc32c mismatch")
        self.signs += 1
        key = PrivateKey(os.urandom(32)) if self.tamper else self.key
        signature = sign_like_a_kms(key, digest)
        return kms_v1.AsymmetricSignResponse(
            signature=signature,
            signature_crc32c=google_crc32c.value(signature),
            verified_digest_crc32c=True,
            name=self.name,
        )

    def handler(self) -> grpc.GenericRpcHandler:
        def unary(fn: Any, req: Any, resp: Any) -> Any:
            return grpc.unary_unary_rpc_method_handler(
                fn, request_deserializer=req.deserialize, response_serializer=resp.serialize
            )

        return grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "GetPublicKey": unary(
                    self.get_public_key, kms_v1.GetPublicKeyRequest, kms_v1.PublicKey
                ),
                "AsymmetricSign": unary(
                    self.asymmetric_sign,
                    kms_v1.AsymmetricSignRequest,
                    kms_v1.AsymmetricSignResponse,
                ),
            },
        )


def _pem(key: PrivateKey) -> str:
    """The key's PEM SubjectPublicKeyInfo, written by ``cryptography`` (not clobkit)."""
    number = int.from_bytes(key.secret, "big")
    public = ec.derive_private_key(number, ec.SECP256K1()).public_key()
    return public.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()


def serve(stand_in: GcpStandIn) -> tuple[grpc.Server, str]:
    """``stand_in`` served on a free loopback port: the server and its address."""
    server = grpc.server(ThreadPoolExecutor(max_workers=16))
    server.add_generic_rpc_handlers((stand_in.handler(),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"
