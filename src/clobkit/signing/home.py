"""An event loop of the signer's own, in a thread: where a KMS SDK's async client runs.

A KMS SDK's client costs the loop it runs on CPU on every call (botocore's request
building, SigV4 and parsing: milliseconds a call), and a desk signs hundreds of
orders a second; on the trading loop that CPU is lag every other coroutine pays.
On a loop of its own the client's work stays off the caller's loop: the caller
only hands coroutines over and awaits their futures (microseconds), and the
thread contends with it for the interpreter lock alone, which Python hands over
at least every switch interval (5 ms). Cancelling the caller's await cancels the
call on the signer's loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["Home"]

T = TypeVar("T")


class Home:
    """A daemon thread running its own event loop until ``stop``."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    async def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """``coro`` run on this loop; its result (or exception) in the caller's."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def stop(self) -> None:
        """Stop the loop and the thread (nothing may still run on it)."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()
