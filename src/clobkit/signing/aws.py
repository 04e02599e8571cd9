"""``AwsKmsSigner``: orders signed by an AWS KMS key of spec ``ECC_SECG_P256K1``.

``Sign`` with ``MessageType=DIGEST`` and ``ECDSA_SHA_256`` on the 32-byte EIP-712
digest (KMS signs it as given: no second hash), the public key read once with
``GetPublicKey``. The async signer calls KMS through aiobotocore's client, on an
event loop of its own in a thread (``home.Home``) unless ``thread=False``; the
sync twin through botocore's client, a call per thread (the ``kms-aws`` extra;
``docs/keys-off-host.md`` says why: measured).
Credentials come from the usual AWS chain (environment, profile, SSO, the
instance's or task's role), never from clobkit's settings. botocore's own retries
are off: the signer's budget retries, counts and backs off.
"""

from __future__ import annotations

from contextlib import AsyncExitStack, ExitStack
from typing import TYPE_CHECKING, Any

from ..errors import MissingExtra, SignerDenied, SignerError, SignerKeyError
from .budget import _Retry
from .remote import RemoteSigner

if TYPE_CHECKING:
    from .remote import RemoteOptions, Unpack

__all__ = ["AwsKmsSigner"]

#: The key spec and usage an order signer needs.
KEY_SPEC = "ECC_SECG_P256K1"
KEY_USAGE = "SIGN_VERIFY"
ALGORITHM = "ECDSA_SHA_256"

_THROTTLED = frozenset({"ThrottlingException", "LimitExceededException"})
_TRANSIENT = frozenset(
    {"KMSInternalException", "DependencyTimeoutException", "KeyUnavailableException"}
)
_DENIED = frozenset(
    {
        "AccessDeniedException",
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "ExpiredTokenException",
        "IncompleteSignature",
    }
)
_KEY = frozenset(
    {
        "DisabledException",
        "KMSInvalidStateException",
        "NotFoundException",
        "InvalidKeyUsageException",
        "InvalidKeyUsage",
    }
)


def _botocore() -> Any:
    try:
        import botocore.exceptions
    except ImportError:
        raise MissingExtra(
            "AwsKmsSigner needs aiobotocore: pip install 'clobkit[kms-aws]'"
        ) from None
    return botocore.exceptions


class AwsKmsSigner(RemoteSigner):
    """Signs with the AWS KMS key ``key_id`` (a key id, ARN, or ``alias/...``).

    ``async with AwsKmsSigner(key_id) as signer:`` (or ``with`` for the sync twin)
    reads the key's public key once and checks its spec; ``signer.address`` is its
    EIP-55 address. ``region`` and ``profile`` choose within the usual AWS chain;
    ``endpoint_url`` a KMS endpoint (a VPC endpoint, a FIPS one, a local emulator).
    ``Sign`` calls start at ``rate`` a second at most (default 250: under the
    default quota of 300 ECC signs a second per account and region) after a first
    ``burst`` at once (a requote's orders: 32), at most ``max_in_flight`` at once;
    ``timeout`` (s) bounds one call; a throttled or dropped call is tried again up
    to ``retries`` times, backing off. ``thread`` (default): the async client runs
    on an event loop of the signer's own, in a thread, so that botocore's CPU a
    call (milliseconds) stays off the caller's loop; ``False``: on the caller's.
    ``process=True``: the async client in a process of its own (``worker``), off the
    caller's CPU and interpreter lock: a desk's choice (docs/keys-off-host.md
    measures both); ``process=N``: in ``N`` processes, each call to the least busy
    (the SDK's CPU a call spread over ``N`` cores: a requote's signatures sooner),
    the budget still one; the sync twin keeps its threads.
    """

    kind = "AWS KMS"

    def __init__(
        self,
        key_id: str,
        *,
        region: str | None = None,
        profile: str | None = None,
        endpoint_url: str | None = None,
        **options: Unpack[RemoteOptions],
    ) -> None:
        super().__init__(key_id, **options)
        self.region = region
        self.profile = profile
        self.endpoint_url = endpoint_url
        self._client: Any = None
        self._sync_client: Any = None

    def _settings(self) -> dict[str, Any]:
        return {
            **super()._settings(),
            "region": self.region,
            "profile": self.profile,
            "endpoint_url": self.endpoint_url,
        }

    def _options(self) -> dict[str, Any]:
        # one attempt each (the signer retries), a pool as wide as the calls in flight,
        # botocore's own timeouts inside the signer's, and a User-Agent of its own: the
        # default one is rebuilt from a dozen parts twice a request, a quarter of a
        # ``Sign`` call's CPU (1.43 -> 1.07 ms here; docs/keys-off-host.md)
        return {
            "retries": {"total_max_attempts": 1},
            "user_agent": user_agent(),
            "connect_timeout": self.timeout,
            "read_timeout": self.timeout,
            "max_pool_connections": self.budget.max_in_flight,
        }

    async def _open_async(self, stack: AsyncExitStack) -> None:
        _botocore()
        from aiobotocore.config import AioConfig
        from aiobotocore.session import AioSession

        session = AioSession(profile=self.profile)
        self._client = await stack.enter_async_context(
            session.create_client(
                "kms",
                region_name=self.region,
                endpoint_url=self.endpoint_url,
                config=AioConfig(**self._options()),
            )
        )

    async def _key_async(self) -> bytes:
        return self._public(await self._client.get_public_key(KeyId=self.key))

    async def _sign_async(self, digest: bytes) -> bytes:
        answer = await self._client.sign(
            KeyId=self.key, Message=digest, MessageType="DIGEST", SigningAlgorithm=ALGORITHM
        )
        return bytes(answer["Signature"])

    def _open_sync(self, stack: ExitStack) -> None:
        _botocore()
        from botocore.config import Config
        from botocore.session import Session

        client = Session(profile=self.profile).create_client(
            "kms",
            region_name=self.region,
            endpoint_url=self.endpoint_url,
            config=Config(**self._options()),
        )
        stack.callback(client.close)
        self._sync_client = client

    def _key_sync(self) -> bytes:
        return self._public(self._sync_client.get_public_key(KeyId=self.key))

    def _sign_sync(self, digest: bytes) -> bytes:
        answer = self._sync_client.sign(
            KeyId=self.key, Message=digest, MessageType="DIGEST", SigningAlgorithm=ALGORITHM
        )
        return bytes(answer["Signature"])

    def _public(self, answer: dict[str, Any]) -> bytes:
        """The public key of a ``GetPublicKey`` answer, once its spec is checked."""
        from .ecdsa import ShapeError, spki_public_key

        spec, usage = answer.get("KeySpec"), answer.get("KeyUsage")
        algorithms = answer.get("SigningAlgorithms") or []
        if spec != KEY_SPEC or usage != KEY_USAGE or ALGORITHM not in algorithms:
            raise SignerKeyError(
                self.key,
                f"is a {spec} key for {usage}; orders need an {KEY_SPEC} key for "
                f"{KEY_USAGE} ({ALGORITHM})",
            )
        try:
            return spki_public_key(bytes(answer["PublicKey"]))
        except ShapeError as exc:
            raise SignerKeyError(self.key, f"GetPublicKey answered {exc}") from None

    def _timed_out(self, exc: BaseException) -> bool:
        errors = _botocore()
        return isinstance(exc, (errors.ReadTimeoutError, errors.ConnectTimeoutError, TimeoutError))

    def _retryable(self, exc: BaseException) -> _Retry | None:
        errors = _botocore()
        if isinstance(exc, errors.ClientError):
            code = exc.response.get("Error", {}).get("Code", "")
            if code in _THROTTLED or code in _TRANSIENT:
                return _Retry(f"{code}: {_message(exc)}", throttled=code in _THROTTLED)
            return None
        if isinstance(exc, (errors.EndpointConnectionError, errors.ConnectionClosedError)):
            return _Retry(f"could not reach {self.kind}: {exc}", throttled=False)
        return None

    def _error(self, exc: BaseException) -> SignerError:
        errors = _botocore()
        if isinstance(exc, errors.ClientError):
            code = exc.response.get("Error", {}).get("Code", "")
            cause = f"{code}: {_message(exc)}"
            if code in _DENIED:
                return SignerDenied(
                    self.key,
                    f"{cause} (the policy needs kms:Sign and kms:GetPublicKey on this key)",
                )
            if code in _KEY:
                return SignerKeyError(self.key, cause)
            return SignerError(self.key, cause)
        if isinstance(exc, errors.NoCredentialsError):
            return SignerDenied(
                self.key,
                "no AWS credentials in the usual chain (environment, profile, SSO, role)",
            )
        if isinstance(exc, errors.BotoCoreError):
            return SignerError(self.key, f"{type(exc).__name__}: {exc}")
        return SignerError(self.key, f"{type(exc).__name__}: {exc}")


def user_agent() -> str:
    """The ``User-Agent`` of the signer's KMS calls (aiobotocore adds botocore's): the
    installed distribution's version (``clobkit.__version__`` would be an import of
    the package from one of its own modules)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"clobkit/{version('clobkit')}"
    except PackageNotFoundError:  # run from a source tree, not installed
        return "clobkit"


def _message(exc: Any) -> str:
    error = exc.response.get("Error", {})
    return str(error.get("Message") or error.get("message") or "no message")
