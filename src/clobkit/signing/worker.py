"""A KMS signer's calls in a process of its own (``process=True``).

A KMS SDK's client costs CPU on every call (botocore's request building, SigV4 and
parsing: 1.6 to 3.4 ms a call on the project's 2-core machines, more than twice
aiohttp's own POST: ``benchmarks/bench_kms.py``), and at AWS's default quota of
300 signs a second that is most of a core.
In a thread of the trading process it shares the interpreter lock with the
trading loop (``home.Home``); in a child process it runs on another core, and the
trading process only writes digests to a pipe and reads the signatures back.

The child is ``python -m clobkit.signing.worker`` (a fresh interpreter: no fork of a
process that holds sockets and threads, and, unlike ``multiprocessing``'s spawn,
no second run of the caller's own script), given the signer's recipe (its class,
key and settings) as its first message on stdin; it opens the async client, reads
the key's public key and answers each ``Sign`` as soon as the KMS does, many in
flight. Messages are pickles behind a 4-byte length, both ways. What the parent
keeps: the sign budget (the rate, the calls in flight, retries and back-off, the
counts) and the timeout; the child turns each DER answer into the exchange's
signature and checks that it recovers to the key (the same code as in the
parent, its CPU off the trading process). A failed call comes back classified
by the signer's own rules (worth another try, or a ``SignerError``, a
``SignatureMismatch`` among them), never as the SDK's exception object. Both sides
bound a call by ``timeout``: the child to stop the SDK's call, the parent in case
the child itself hangs. The child ends when its stdin closes: the signer's
``aclose``, or the parent's death.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import signal
import struct
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import SignerError
from .budget import _Retry

__all__ = ["Worker"]

#: Seconds the child may take to start: import the SDK, open its client, read the key.
START_TIMEOUT = 60.0
_LENGTH = struct.Struct(">I")

#: What makes the signer again in the child: its class, its key, its settings.
Recipe = tuple[type[Any], str, dict[str, Any]]


def _frame(message: object) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(body)) + body


async def _read(reader: asyncio.StreamReader) -> Any:
    """The next message (``asyncio.IncompleteReadError`` at the end of the pipe)."""
    (size,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
    return pickle.loads(await reader.readexactly(size))


class Worker:
    """The parent's side: ``start`` (the key's public key), ``sign`` (a checked
    signature, or the classified failure raised), ``stop``."""

    def __init__(self, recipe: Recipe) -> None:
        self.key = recipe[1]
        self._recipe = recipe
        self._process: asyncio.subprocess.Process | None = None
        self._waiting: dict[int, asyncio.Future[tuple[Any, ...]]] = {}
        self._next = 0
        self._ended: SignerError | None = None
        self._reading: asyncio.Task[None] | None = None

    @property
    def gone(self) -> bool:
        """Whether the child has ended (every call fails)."""
        return self._ended is not None

    @property
    def sent(self) -> int:
        """Calls sent to the child so far."""
        return self._next

    def __len__(self) -> int:
        """Calls waiting for their answer (the least busy of a signer's processes
        gets the next call)."""
        return len(self._waiting)

    async def start(self) -> bytes:
        """Start the child; the key's public key, once it has read it (or its error)."""
        # the child finds this clobkit (clobkit/signing/worker.py: three folders up)
        # whatever put it on the caller's path
        home = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (home, os.environ.get("PYTHONPATH")) if p)
        try:
            self._process = process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "clobkit.signing.worker",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": path},
            )
        except OSError as exc:
            raise SignerError(self.key, f"the signer's process could not start: {exc}") from None
        assert process.stdin is not None
        assert process.stdout is not None
        ready = asyncio.get_running_loop().create_future()
        self._waiting[-1] = ready
        self._reading = asyncio.ensure_future(self._read_answers(process.stdout))
        try:
            process.stdin.write(_frame(self._recipe))
            answer = await asyncio.wait_for(ready, START_TIMEOUT)
        except TimeoutError:
            await self.stop()
            raise SignerError(
                self.key, f"the signer's process did not start in {START_TIMEOUT:g} s"
            ) from None
        except BaseException:
            await self.stop()
            raise
        if answer[0] == "error":
            await self.stop()
            raise answer[2]
        public_key: bytes = answer[2]
        return public_key

    def sign(self, digest: bytes) -> Awaitable[str]:
        """The signature of ``digest``, made the exchange's and checked against the key
        in the child; a ``_Retry`` or ``SignerError`` raised. The call is sent now (it
        counts in ``len`` at once: the next call's choice of process sees it)."""
        if self._ended is not None:
            raise self._gone()
        assert self._process is not None
        assert self._process.stdin is not None
        self._next += 1
        ask = self._next
        answer = self._waiting[ask] = asyncio.get_running_loop().create_future()
        self._process.stdin.write(_frame((ask, digest)))
        return self._answer(ask, answer)

    async def _answer(self, ask: int, answer: asyncio.Future[tuple[Any, ...]]) -> str:
        try:
            got = await answer
        finally:
            self._waiting.pop(ask, None)  # cancelled: the answer, when it comes, is dropped
        if got[0] == "ok":
            signature: str = got[2]
            return signature
        if got[0] == "retry":
            raise _Retry(got[2], throttled=got[3])
        raise got[2]

    async def _read_answers(self, stdout: asyncio.StreamReader) -> None:
        try:
            while True:
                got = await _read(stdout)
                waiting = self._waiting.pop(got[1], None)
                if waiting is not None and not waiting.done():
                    waiting.set_result(got)
        except (asyncio.IncompleteReadError, OSError):
            self._end("it ended")
        except Exception as exc:  # an answer that is no pickle of ours: nothing more is read
            self._end(f"its answer could not be read ({type(exc).__name__}: {exc})")

    def _end(self, why: str) -> None:
        """Every call waiting, and every later one, fails: the child is gone."""
        if self._ended is None:
            self._ended = SignerError(self.key, f"the signer's process is gone: {why}")
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_exception(self._gone())
        self._waiting.clear()

    def _gone(self) -> SignerError:
        """The child's end, a new exception for each call (one raised in many tasks
        would gather every one's traceback)."""
        assert self._ended is not None
        return SignerError(self.key, self._ended.cause)

    async def stop(self) -> None:
        """Close the child's stdin (it closes its client and ends) and wait for it."""
        process = self._process
        if process is None:
            return
        if self._ended is None:
            self._end("stopped")
        assert process.stdin is not None
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10.0)
        except TimeoutError:  # a client that would not close
            process.kill()
            await process.wait()
        if self._reading is not None:
            await self._reading


# -- the child --------------------------------------------------------------------


def main() -> None:
    """The child's body: the signer's client on this process's loop until stdin closes."""
    # Ctrl-C in a terminal reaches the whole process group: the caller decides when
    # this process ends (by closing its stdin), not the keyboard
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # anything else printed goes to stderr, never into the answers
    asyncio.run(_serve(out))


async def _serve(out: BinaryIO) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    kind, key, settings = await _read(reader)
    # the parent paces, retries and checks: here one try of each call, on this loop
    signer = kind(key, **{**settings, "thread": False, "process": False, "retries": 0})
    try:
        await signer._start_here()
    except SignerError as exc:
        out.write(_frame(("error", -1, exc)))
        return
    out.write(_frame(("ok", -1, signer.public_key)))
    calls: set[asyncio.Task[None]] = set()

    async def call(ask: int, digest: bytes) -> None:
        try:
            signature = await signer._call_async(signer._sign_checked(digest))
        except _Retry as retry:
            answer: tuple[Any, ...] = ("retry", ask, retry.cause, retry.throttled)
        except SignerError as exc:
            answer = ("error", ask, exc)
        else:
            answer = ("ok", ask, signature)
        with contextlib.suppress(OSError):  # the parent is gone: stdin's end ends this
            out.write(_frame(answer))  # a few dozen bytes: the parent reads them as they come

    try:
        while True:
            try:
                ask, digest = await _read(reader)
            except asyncio.IncompleteReadError:
                break  # stdin closed: the signer closed, or its process died
            task = loop.create_task(call(ask, digest))
            calls.add(task)
            task.add_done_callback(calls.discard)
    finally:
        for task in [*calls]:
            task.cancel()
        await asyncio.gather(*calls, return_exceptions=True)
        await signer._aclose_here()


if __name__ == "__main__":
    main()
