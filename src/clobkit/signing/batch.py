"""The native batch path of signing: libsecp256k1 (``secp``'s backend, chosen by the
first ``OrderSigner``), one signature (``sign_hex``), and a batch cut into chunks over
a pool of Python threads (``sign_batch``) or, with the compiled core live and the
backend's handle, over the core's native workers (``native``, ``handle``).

``BACKEND`` and the pool start afresh in a forked child. ``import clobkit`` loads
none of it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import chain
from typing import Any

from ..core.choice import COMPILED
from . import secp as _secp

__all__ = ["BACKEND", "backend", "handle", "native", "sign_batch", "sign_chunk", "sign_hex"]

# libsecp256k1, chosen by the first OrderSigner (``import clobkit`` loads none of it)
BACKEND: _secp.Backend | None = None
_LOAD_LOCK = threading.Lock()


def backend() -> _secp.Backend:
    global BACKEND
    backend = BACKEND
    if backend is None:
        with _LOAD_LOCK:
            if BACKEND is None:
                BACKEND = _secp.load(compiled=COMPILED)
            backend = BACKEND
    return backend


def native() -> Any:
    """The compiled core when it signs batches (the live twin, and the backend gives it
    libsecp256k1's functions), else None."""
    if backend().handle is None:
        return None
    return COMPILED


def handle() -> tuple[int, int, int]:
    handle = backend().handle
    assert handle is not None  # asked for only when native() is the compiled core
    return handle


def sign_hex(key: Any, digest: bytes) -> str:
    """``"0x"`` + 130 hex digits: r || s || v of one 32-byte digest."""
    return backend().sign_chunk(key, [digest], 0, 1)[0]


def sign_chunk(key: Any, digests: list[bytes], start: int, stop: int) -> list[str]:
    """Signatures of ``digests[start:stop]``."""
    return backend().sign_chunk(key, digests, start, stop)


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The signing workers: created on first use, reused, bounded by the stdlib default
    (min(32, cores + 4)); a batch asking for more threads than that shares them."""
    global _POOL
    pool = _POOL
    if pool is None:
        with _POOL_LOCK:
            if _POOL is None:
                _POOL = ThreadPoolExecutor(thread_name_prefix="clobkit-sign")
            pool = _POOL
    return pool


def _after_fork() -> None:
    # A forked child has none of the parent's worker threads, and a copy of its
    # blinding seed: start both afresh.
    global _POOL, _POOL_LOCK, _LOAD_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()
    _LOAD_LOCK = threading.Lock()
    if BACKEND is not None:
        BACKEND.after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


# A batch is cut into about this many chunks per thread, claimed one at a time:
# on a busy machine a stalled thread's share is taken over by the others
# instead of holding up the whole batch.
_CHUNKS_PER_THREAD = 8


def _drain(
    key: Any, digests: list[bytes], size: int, claim: Callable[[], int], parts: list[list[str]]
) -> None:
    """Sign chunks until none is left unclaimed."""
    n = len(digests)
    while True:
        try:
            k = claim()
        except StopIteration:
            return
        start = k * size
        parts[k] = sign_chunk(key, digests, start, min(start + size, n))


def sign_batch(key: Any, digests: list[bytes], workers: int) -> list[str]:
    """Signatures of every digest, in order, over ``workers`` threads (the caller's included)."""
    n = len(digests)
    workers = min(workers, n)
    if workers <= 1:
        return sign_chunk(key, digests, 0, n)
    size = -(-n // (workers * _CHUNKS_PER_THREAD))
    parts: list[list[str]] = [[] for _ in range(0, n, size)]
    claim = iter(range(len(parts))).__next__  # one C call under the GIL: each chunk once
    pool = _pool()
    futures = [pool.submit(_drain, key, digests, size, claim, parts) for _ in range(workers - 1)]
    _drain(key, digests, size, claim, parts)
    for future in futures:
        if not future.cancel():  # a worker that never started has nothing left to do
            future.result()
    return list(chain.from_iterable(parts))
