"""What the KMS signers share: the sign budget, retries after throttling, the timeout,
and turning a KMS's DER answer into the signature an exchange takes.

A subclass says how to reach its KMS, in both flavours: ``_open_async`` /
``_sign_async`` (the async client's own, on the signer's own event loop in a
thread by default, ``home.Home``, else on the caller's) and ``_open_sync`` /
``_sign_sync`` (the sync twin, each call in one of ``max_in_flight`` threads), and
``_settings`` (what remakes it in a process of its own: ``worker.Worker``); and
which failures are worth another try (``_retryable``: throttling, a dropped
connection, a corrupted answer) and how each other one reads (``_error``). The
key's public key is read once, at start; every signature is checked to recover to
it before it is returned.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, ExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from ..core.checks import positive_int, seconds
from ..errors import (
    SignatureMismatch,
    SignerError,
    SignerThrottled,
    SignerTimeout,
    ValidationError,
)
from .budget import SignBudget, _Retry
from .ecdsa import ShapeError, address_of, der_signature, recoverable
from .home import Home

if TYPE_CHECKING:  # the signers' **options (Unpack[RemoteOptions])
    from typing import Unpack as Unpack

    from .worker import Worker

__all__ = ["RemoteOptions", "RemoteSigner", "digest_list"]

S = TypeVar("S", bound="RemoteSigner")


def digest_list(digests: Sequence[bytes | str]) -> list[bytes]:
    """The 32-byte digests of a batch (``0x`` + 64 hex or 32 bytes each), checked."""
    from .keys import parse_order_id

    if isinstance(digests, (str, bytes, bytearray)):
        from ..errors import OrderFieldError

        raise OrderFieldError("digests", digests, "must be a sequence of 32-byte digests")
    return [parse_order_id(d, f"digests[{i}]") for i, d in enumerate(digests)]


class RemoteOptions(TypedDict, total=False):
    """What every KMS signer takes beside its key (``RemoteSigner`` holds the defaults)."""

    rate: int
    burst: int
    max_in_flight: int
    timeout: float
    retries: int
    thread: bool
    process: bool | int


#: Most processes of one signer (``process=N``): more than any host's cores a signer
#: could use, few enough that a typo does not start thousands.
MAX_PROCESSES = 64


def _processes(value: object) -> int:
    """``process``: ``True`` (one), ``False`` (none) or a number of processes."""
    if isinstance(value, bool):
        return int(value)
    if not isinstance(value, int) or not 0 <= value <= MAX_PROCESSES:
        reason = f"must be True, False or a number of processes from 0 to {MAX_PROCESSES}"
        raise ValidationError("process", value, reason)
    return value


class RemoteSigner:
    """A signer whose key lives in a KMS. ``rate``: calls started a second at most,
    after a first ``burst`` at once; ``max_in_flight``: calls at once; ``timeout``
    (s): one call's answer; ``retries``: further tries of a throttled or dropped call
    (with back-off); ``thread``: the async client on an event loop of its own;
    ``process``: in a process of its own (``worker``), or ``N`` of them (``process=4``:
    the SDK's CPU a call spread over four cores; one budget, kept here)."""

    #: The KMS's name, in errors.
    kind = "KMS"

    def __init__(
        self,
        key: str,
        *,
        rate: int = 250,  # under AWS's default quota of 300 ECC signs a second
        burst: int = 32,
        max_in_flight: int = 64,
        timeout: float = 5.0,
        retries: int = 6,
        thread: bool = True,
        process: bool | int = False,
    ) -> None:
        if not isinstance(key, str) or not key.strip():
            raise ValidationError("key", key, "must be a KMS key's id or name")
        self.key = key
        self.budget = SignBudget(rate, max_in_flight, burst)
        self.timeout = seconds(timeout, "timeout")
        self.retries = 0 if retries == 0 else positive_int(retries, "retries")
        self._public_key: bytes | None = None
        self._address: str | None = None
        self._async_stack: AsyncExitStack | None = None
        self._sync_stack: ExitStack | None = None
        self._slots: asyncio.Semaphore | None = None
        self.thread = bool(thread)
        #: The processes the async client runs in (0: none, in this one).
        self.process = _processes(process)
        self._home: Home | None = None
        self._workers: list[Worker] = []
        self._pool: ThreadPoolExecutor | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(key={self.key!r}, address={self._address})"

    # -- what a subclass provides ---------------------------------------------------

    async def _open_async(self, stack: AsyncExitStack) -> None:
        """Open the async client (closed by ``stack``)."""
        raise NotImplementedError

    async def _key_async(self) -> bytes:
        """The key's 65-byte public key, its spec checked (one KMS call)."""
        raise NotImplementedError

    async def _sign_async(self, digest: bytes) -> bytes:
        """The KMS's DER signature of ``digest`` (raises the SDK's own errors)."""
        raise NotImplementedError

    def _open_sync(self, stack: ExitStack) -> None:
        """Open the sync client (closed by ``stack``)."""
        raise NotImplementedError

    def _key_sync(self) -> bytes:
        raise NotImplementedError

    def _sign_sync(self, digest: bytes) -> bytes:
        raise NotImplementedError

    def _retryable(self, exc: BaseException) -> _Retry | None:
        """``_Retry`` when ``exc`` is worth another try, else ``None``."""
        raise NotImplementedError

    def _error(self, exc: BaseException) -> SignerError:
        """The ``SignerError`` that names ``exc``'s cause."""
        raise NotImplementedError

    def _settings(self) -> dict[str, Any]:
        """The keyword arguments, beyond the key, that make this signer again (in a
        process of its own); a subclass adds its own to these."""
        budget = self.budget
        return {
            "rate": budget.rate,
            "burst": budget.burst,
            "max_in_flight": budget.max_in_flight,
            "timeout": self.timeout,
            "retries": self.retries,
        }

    # -- the key --------------------------------------------------------------------

    @property
    def address(self) -> str:
        """The key's EIP-55 address (known once the signer is entered)."""
        if self._address is None:
            raise SignerError(self.key, "not started: enter the signer first (async with / with)")
        return self._address

    @property
    def public_key(self) -> bytes:
        """The key's 65-byte uncompressed public key (known once entered)."""
        self.address  # noqa: B018 - raises when not started
        assert self._public_key is not None
        return self._public_key

    def _take_key(self, public_key: bytes) -> None:
        if self._public_key is not None and public_key != self._public_key:
            raise SignatureMismatch(self.key, "its public key changed since it was first read")
        self._public_key = public_key
        self._address = address_of(public_key)

    def counts(self) -> dict[str, int]:
        """The sign budget's counts: ``calls``, ``throttled``, ``retries``, ``waited``."""
        return self.budget.counts()

    # -- async ----------------------------------------------------------------------

    async def start(self) -> None:
        """Open the async client and read the key's public key (once); with ``thread``,
        on an event loop of the signer's own (``home.Home``)."""
        if self._async_stack is not None:
            return
        if self.process:
            await self._start_worker()
            return
        if not self.thread:
            await self._start_here()
            return
        home = Home(f"clobkit-kms-{self.kind}")
        try:
            await home.call(self._start_here())
        except BaseException:
            home.stop()
            raise
        self._home = home

    async def _start_worker(self) -> None:
        from .worker import Worker

        recipe = (type(self), self.key, self._settings())
        workers = [Worker(recipe) for _ in range(self.process)]
        stack = AsyncExitStack()
        for worker in workers:
            stack.push_async_callback(worker.stop)
        # all at once (each a second or so: an interpreter, the SDK, a key read), every
        # start ended before any is stopped (none left starting behind a failure)
        try:
            keys = await asyncio.gather(*(w.start() for w in workers), return_exceptions=True)
            for key in keys:
                if isinstance(key, BaseException):
                    raise key
                self._take_key(key)  # each read the key itself: the same one
        except BaseException:
            await stack.aclose()
            raise
        self._workers, self._async_stack = workers, stack
        self._slots = asyncio.Semaphore(self.budget.max_in_flight)

    def _least_busy(self) -> Worker:
        """The process for the next call: the least busy (the SDK's CPU spread over
        them), or one that is gone (then every call fails, as with one process)."""
        workers = self._workers
        return next((w for w in workers if w.gone), None) or min(workers, key=len)

    async def _start_here(self) -> None:
        stack = AsyncExitStack()
        try:
            try:
                await self._open_async(stack)  # no call yet, no timeout: the SDK's client
                self._take_key(await self._call_async(self._key_async()))
            except Exception as exc:
                raise self._start_error(exc) from None
        except BaseException:
            await stack.aclose()
            raise
        self._async_stack = stack
        self._slots = asyncio.Semaphore(self.budget.max_in_flight)

    async def aclose(self) -> None:
        """Close the async client (a client given to the signer is left open)."""
        home, self._home = self._home, None
        if home is None:
            await self._aclose_here()
            return
        try:
            await home.call(self._aclose_here())
        finally:
            home.stop()

    async def _aclose_here(self) -> None:
        stack, self._async_stack = self._async_stack, None
        self._workers, self._slots = [], None  # closed: a later call is "not started"
        if stack is not None:
            await stack.aclose()

    async def __aenter__(self: S) -> S:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _call_async(self, call: Any) -> Any:
        """One KMS call within ``timeout``; its failure as a ``SignerError``."""
        try:
            return await asyncio.wait_for(call, self.timeout)
        except TimeoutError:
            raise self._timeout() from None
        except Exception as exc:
            raise self._failure(exc) from None

    async def _sign_one(self, digest: bytes) -> str:
        slots = self._slots
        if slots is None:
            raise SignerError(self.key, "not started: enter it with 'async with' first")
        attempt = 0
        while True:
            async with slots:
                wait = self.budget.delay()
                if wait:
                    await asyncio.sleep(wait)
                call = self._sign_checked if not self._workers else self._least_busy().sign
                try:
                    signature: str = await self._call_async(call(digest))
                except _Retry as retry:
                    attempt += 1
                    pause = self._after(retry, attempt)
                else:
                    return signature
            await asyncio.sleep(pause)  # the slot free meanwhile

    async def _sign_checked(self, digest: bytes) -> str:
        """One KMS call's signature, made the exchange's and checked against the key
        (in a worker, there: the recovery's CPU stays off the trading process)."""
        return self._finish(digest, await self._sign_async(digest))

    async def sign_digests(self, digests: Sequence[bytes | str], /) -> list[str]:
        """Signatures of ``digests`` (``"0x"`` + 130 hex each, low s, v 27/28), requested
        concurrently within the budget. The first failure is raised once every other
        request of the batch is stopped: a batch is signed whole or not at all."""
        batch = digest_list(digests)
        if self._home is not None:
            return await self._home.call(self._sign_batch(batch))
        return await self._sign_batch(batch)

    async def _sign_batch(self, batch: list[bytes]) -> list[str]:
        if len(batch) == 1:
            return [await self._sign_one(batch[0])]
        tasks = [asyncio.ensure_future(self._sign_one(d)) for d in batch]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()
            await asyncio.wait(tasks)
        # every failure read, not only the first: asyncio logs a task whose exception
        # nobody read ("never retrieved") when the garbage collector takes it, wherever
        # that happens to run (under CPython 3.11 an ast.parse that it interrupts then
        # fails: gh-106905)
        failures = [task.exception() for task in tasks if not task.cancelled()]
        for failure in failures:
            if failure is not None:
                raise failure
        return [task.result() for task in tasks]

    # -- sync -----------------------------------------------------------------------

    def open(self) -> None:
        """Open the sync client and read the key's public key (once)."""
        if self._sync_stack is not None:
            return
        stack = ExitStack()
        try:
            try:
                self._open_sync(stack)
                self._take_key(self._call_sync(self._key_sync))
            except Exception as exc:
                raise self._start_error(exc) from None
        except BaseException:
            stack.close()
            raise
        self._sync_stack = stack
        self._pool = ThreadPoolExecutor(self.budget.max_in_flight, thread_name_prefix="clobkit-kms")

    def close(self) -> None:
        """Close the sync client and its threads."""
        stack, self._sync_stack = self._sync_stack, None
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        if stack is not None:
            stack.close()

    def __enter__(self: S) -> S:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _call_sync(self, call: Any) -> Any:
        try:
            return call()
        except Exception as exc:
            raise self._failure(exc) from None

    def _start_error(self, exc: Exception) -> SignerError:
        """A failed start (the client not made: no credentials in the chain, as Google's
        ADC raises; the key not read) as a ``SignerError``: nothing is tried again."""
        failure = exc if isinstance(exc, _Retry) else self._failure(exc)
        return SignerError(self.key, failure.cause) if isinstance(failure, _Retry) else failure

    def _failure(self, exc: Exception) -> SignerError | _Retry:
        """What a failed call raises: a ``SignerError`` as it is, a timeout, a ``_Retry``
        for what is worth another try, else the SDK's error read as a ``SignerError``."""
        if isinstance(exc, (SignerError, _Retry)):  # already read (a worker's answer)
            return exc
        if self._timed_out(exc):
            return self._timeout()
        retry = self._retryable(exc)
        return retry if retry is not None else self._error(exc)

    def _sign_one_sync(self, digest: bytes) -> str:
        attempt = 0
        while True:
            wait = self.budget.delay()
            if wait:
                time.sleep(wait)
            try:
                der = self._call_sync(lambda: self._sign_sync(digest))
            except _Retry as retry:
                attempt += 1
                time.sleep(self._after(retry, attempt))
                continue
            return self._finish(digest, der)

    def sign_many(self, digests: Sequence[bytes | str], /) -> list[str]:
        """``sign_digests``'s sync twin: the batch over ``max_in_flight`` threads."""
        batch = digest_list(digests)
        pool = self._pool
        if pool is None:
            raise SignerError(self.key, "not started: enter it with 'with' first")
        if len(batch) == 1:
            return [self._sign_one_sync(batch[0])]
        futures = [pool.submit(self._sign_one_sync, d) for d in batch]
        try:
            return [f.result() for f in futures]
        finally:
            for f in futures:
                f.cancel()

    # -- shared ---------------------------------------------------------------------

    def _timed_out(self, exc: BaseException) -> bool:
        """Whether the sync client's ``exc`` is its own timeout (async: ``wait_for``'s)."""
        return isinstance(exc, TimeoutError)

    def _timeout(self) -> SignerTimeout:
        return SignerTimeout(self.key, f"{self.kind} gave no answer within {self.timeout:g} s")

    def _after(self, retry: _Retry, attempt: int) -> float:
        """The pause before try ``attempt + 1``; past the retries, the error."""
        if attempt > self.retries:
            if retry.throttled:
                raise SignerThrottled(
                    self.key,
                    f"{self.kind} throttled {attempt} tries in a row ({retry.cause}); "
                    f"{self.budget.throttled} throttled answers so far: lower the signer's "
                    "rate or raise the quota",
                )
            raise SignerError(self.key, f"{retry.cause} ({attempt} tries)")
        return self.budget.backoff(attempt, throttled=retry.throttled)

    def _finish(self, digest: bytes, der: bytes) -> str:
        """The exchange's signature of ``digest`` from the KMS's DER, checked."""
        try:
            r, s = der_signature(der)
        except ShapeError as exc:
            raise SignatureMismatch(self.key, f"{self.kind} answered {exc}") from None
        assert self._public_key is not None
        signature = recoverable(digest, r, s, self._public_key)
        if signature is None:
            raise SignatureMismatch(
                self.key,
                f"{self.kind} returned a signature that does not recover to the key's "
                f"address {self._address}: refused, nothing signed",
            )
        return signature
