"""``GcpKmsSigner``: orders signed by a Cloud KMS key version of algorithm
``EC_SIGN_SECP256K1_SHA256``.

``AsymmetricSign`` with the 32-byte EIP-712 digest as the request's ``digest.sha256``
(Cloud KMS signs it as given), the public key read once with ``GetPublicKey``.
google-cloud-kms's async client (gRPC on the event loop), its sync client for the
sync twin (the ``kms-gcp`` extra). Each request carries the digest's CRC32C and each
answer's CRC32C is checked, as Google's guide for the call asks: a corrupted answer
is tried again. Credentials come from Application Default Credentials (the
environment's service account, ``gcloud auth application-default login``, the
workload's identity), never from clobkit's settings; the client's own retries are
off (the signer's budget retries, counts and backs off).
"""

from __future__ import annotations

from contextlib import AsyncExitStack, ExitStack
from typing import TYPE_CHECKING, Any

from ..errors import MissingExtra, SignerDenied, SignerError, SignerKeyError, ValidationError
from .budget import _Retry
from .remote import RemoteSigner

if TYPE_CHECKING:
    from .remote import RemoteOptions, Unpack

__all__ = ["GcpKmsSigner"]

ALGORITHM = "EC_SIGN_SECP256K1_SHA256"


def _kms() -> Any:
    try:
        import google_crc32c  # noqa: F401 - checked here, used by _crc
        from google.cloud import kms_v1
    except ImportError:
        raise MissingExtra(
            "GcpKmsSigner needs google-cloud-kms: pip install 'clobkit[kms-gcp]'"
        ) from None
    return kms_v1


def _crc(data: bytes) -> int:
    import google_crc32c

    return int(google_crc32c.value(data))


class _Corrupted(Exception):
    """An answer whose CRC32C does not match: corrupted on its way."""


class GcpKmsSigner(RemoteSigner):
    """Signs with the Cloud KMS key version ``key_name``
    (``projects/P/locations/L/keyRings/R/cryptoKeys/K/cryptoKeyVersions/V``).

    ``async with GcpKmsSigner(name) as signer:`` (or ``with``) reads the public key
    once and checks its algorithm; ``signer.address`` is its EIP-55 address.
    ``client``: a ``KeyManagementServiceAsyncClient`` (for ``async with``) or a
    ``KeyManagementServiceClient`` (for ``with``) built your way, left open by the
    signer; else one is made with Application Default Credentials, at
    ``api_endpoint`` when given. ``client`` may also be a callable making
    the client, called on the loop (or in the thread) that uses it: a gRPC aio
    channel belongs to the loop it was made on, and with ``thread`` (the default)
    the async client runs on the signer's own. ``rate``, ``burst``,
    ``max_in_flight``, ``timeout``, ``retries``, ``thread`` and ``process`` as for
    ``AwsKmsSigner`` (a ``client`` given cannot go to another process).
    """

    kind = "Cloud KMS"

    def __init__(
        self,
        key_name: str,
        *,
        client: Any = None,
        api_endpoint: str | None = None,
        **options: Unpack[RemoteOptions],
    ) -> None:
        super().__init__(key_name, **options)
        if client is not None and self.process:
            raise ValidationError(
                "process",
                options.get("process"),
                "a client given to the signer cannot go to another process",
            )
        self.client = client
        self.api_endpoint = api_endpoint
        self._async_client: Any = None
        self._sync_client: Any = None

    def _settings(self) -> dict[str, Any]:
        return {**super()._settings(), "api_endpoint": self.api_endpoint}

    def _options(self) -> dict[str, Any] | None:
        return None if self.api_endpoint is None else {"api_endpoint": self.api_endpoint}

    def _given(self, kind: Any, flavour: str) -> Any:
        """The client given (or made by the callable given), when it is of ``kind``;
        else None (one is made)."""
        client = self.client
        if client is None:
            return None
        if callable(client) and not isinstance(client, kind):
            client = client()
        if not isinstance(client, kind):
            raise SignerError(
                self.key,
                f"client must be a {kind.__name__} for {flavour}, not {type(client).__name__}",
            )
        return client

    async def _open_async(self, stack: AsyncExitStack) -> None:
        kms = _kms()
        client = self._given(kms.KeyManagementServiceAsyncClient, "'async with'")
        if client is None:
            client = kms.KeyManagementServiceAsyncClient(client_options=self._options())
            stack.push_async_callback(client.transport.close)
        self._async_client = client

    async def _key_async(self) -> bytes:
        request = {"name": self.key}
        return self._public(
            await self._async_client.get_public_key(
                request=request, retry=None, timeout=self.timeout
            )
        )

    async def _sign_async(self, digest: bytes) -> bytes:
        answer = await self._async_client.asymmetric_sign(
            request=self._request(digest), retry=None, timeout=self.timeout
        )
        return self._signature(answer)

    def _open_sync(self, stack: ExitStack) -> None:
        kms = _kms()
        client = self._given(kms.KeyManagementServiceClient, "'with'")
        if client is None:
            client = kms.KeyManagementServiceClient(client_options=self._options())
            stack.callback(client.transport.close)
        self._sync_client = client

    def _key_sync(self) -> bytes:
        request = {"name": self.key}
        return self._public(
            self._sync_client.get_public_key(request=request, retry=None, timeout=self.timeout)
        )

    def _sign_sync(self, digest: bytes) -> bytes:
        answer = self._sync_client.asymmetric_sign(
            request=self._request(digest), retry=None, timeout=self.timeout
        )
        return self._signature(answer)

    def _request(self, digest: bytes) -> dict[str, Any]:
        return {"name": self.key, "digest": {"sha256": digest}, "digest_crc32c": _crc(digest)}

    def _signature(self, answer: Any) -> bytes:
        """The DER signature of an ``AsymmetricSign`` answer, its integrity checked."""
        signature = bytes(answer.signature)
        if answer.name != self.key:
            raise SignerKeyError(self.key, f"Cloud KMS answered for another key: {answer.name}")
        if not answer.verified_digest_crc32c or answer.signature_crc32c != _crc(signature):
            raise _Corrupted("an answer whose CRC32C does not match")
        return signature

    def _public(self, answer: Any) -> bytes:
        from .ecdsa import ShapeError, pem_public_key

        algorithm = getattr(answer.algorithm, "name", str(answer.algorithm))
        if algorithm != ALGORITHM:
            raise SignerKeyError(
                self.key, f"is a {algorithm} key; orders need an {ALGORITHM} key version"
            )
        pem = str(answer.pem)
        if answer.pem_crc32c is not None and answer.pem_crc32c != _crc(pem.encode()):
            raise SignerKeyError(self.key, "GetPublicKey's answer does not match its CRC32C")
        try:
            return pem_public_key(pem)
        except ShapeError as exc:
            raise SignerKeyError(self.key, f"GetPublicKey answered {exc}") from None

    def _timed_out(self, exc: BaseException) -> bool:
        from google.api_core import exceptions

        return isinstance(exc, (exceptions.DeadlineExceeded, TimeoutError))

    def _retryable(self, exc: BaseException) -> _Retry | None:
        from google.api_core import exceptions

        if isinstance(exc, exceptions.ResourceExhausted):
            return _Retry(f"RESOURCE_EXHAUSTED: {exc.message}", throttled=True)
        if isinstance(exc, (exceptions.ServiceUnavailable, exceptions.InternalServerError)):
            return _Retry(f"{type(exc).__name__}: {exc.message}", throttled=False)
        if isinstance(exc, _Corrupted):
            return _Retry(str(exc), throttled=False)
        return None

    def _error(self, exc: BaseException) -> SignerError:
        from google.api_core import exceptions
        from google.auth.exceptions import DefaultCredentialsError

        if isinstance(exc, DefaultCredentialsError):
            return SignerDenied(self.key, f"no Google credentials (ADC): {exc}")
        if isinstance(exc, (exceptions.PermissionDenied, exceptions.Unauthenticated)):
            return SignerDenied(
                self.key,
                f"{type(exc).__name__}: {exc.message} (the key needs "
                "roles/cloudkms.signerVerifier, or cloudkms.cryptoKeyVersions.useToSign "
                "and viewPublicKey)",
            )
        if isinstance(
            exc, (exceptions.FailedPrecondition, exceptions.NotFound, exceptions.InvalidArgument)
        ):
            return SignerKeyError(self.key, f"{type(exc).__name__}: {exc.message}")
        if isinstance(exc, exceptions.GoogleAPICallError):
            return SignerError(self.key, f"{type(exc).__name__}: {exc.message}")
        return SignerError(self.key, f"{type(exc).__name__}: {exc}")
