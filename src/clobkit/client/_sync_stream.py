"""``SyncStream``: a ``Stream`` for synchronous code, run on a private event loop in a
daemon thread (``Client.stream``).

The thread holds a ``_Runner`` (the stream, its loop, the item queue, the
listeners), never the ``SyncStream`` itself: a stream dropped unclosed is
collected, and its finalizer ends the thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import queue
import threading
import weakref
from collections.abc import Coroutine, Iterable, Iterator
from types import TracebackType
from typing import Any

from ..errors import TransportError
from ._core import ClientCore, StreamItem
from ._stream import END, End, Listener, Stream, topic_list
from ._transport import this_process

__all__ = ["SyncStream"]

log = logging.getLogger("clobkit.client.stream")  # the stream's logger, both shells


class _Runner:
    """What the stream's thread runs and holds. ``lock`` orders ``start()``,
    ``close()`` and the thread's first step, so a ``close()`` from another thread
    at any moment ends the thread (none is left running, none joined unstarted)."""

    def __init__(self, stream: Stream, max_queue: int) -> None:
        self.stream = stream
        self.max_queue = max_queue
        # bounded by _amain (the end marker and a failure always fit)
        self.items: queue.Queue[StreamItem | End | BaseException] = queue.Queue()
        self.listeners: list[Listener] = []
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.started = threading.Event()
        self.error: BaseException | None = None
        self.closed = False
        self.closing: asyncio.Future[None] | None = None
        self.pid = this_process()

    def start(self) -> None:
        if self.pid != this_process():  # the thread did not survive the fork
            raise TransportError(
                f"this stream was made in process {self.pid}: its thread is not in this one "
                f"after the fork; make a new Client and stream in process {os.getpid()}"
            )
        with self.lock:
            if self.thread is None:
                if self.closed:
                    raise TransportError("stream is closed")
                thread = threading.Thread(target=self._main, name="clobkit-stream", daemon=True)
                thread.start()
                self.thread = thread
        self.started.wait()
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        if self.pid != this_process():  # a child's copy: no thread, and the lock unsure
            self.closed = True
            self.items.put(END)
            return
        with self.lock:
            self.closed = True
            loop, thread = self.loop, self.thread
        self.request_close(loop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        with contextlib.suppress(queue.Empty):
            while True:  # closing ends iteration: drop what was not read
                self.items.get_nowait()
        self.items.put(END)

    def abandon(self) -> None:
        """The ``SyncStream`` was collected unclosed: end the thread. No lock and no
        join: this runs wherever the garbage collector does."""
        if self.closed:  # closed already, or failed: the thread is ending
            return
        self.closed = True  # read by _amain after it set the loop
        if self.pid == this_process():
            self.request_close(self.loop)

    def request_close(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Close the stream on its loop (without one yet, ``_amain`` sees ``closed``)."""
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(self._close_on_loop)

    def _close_on_loop(self) -> None:
        self.closing = asyncio.ensure_future(self.stream.close())

    def dispatch(self, item: StreamItem) -> None:
        for listener in tuple(self.listeners):
            try:
                listener(item)
            except Exception:
                log.exception("stream listener failed")

    def _main(self) -> None:
        try:
            asyncio.run(self._amain())
        finally:
            self.started.set()  # whatever ended the loop, start() returns

    async def _amain(self) -> None:
        stream = self.stream
        with self.lock:
            self.loop = asyncio.get_running_loop()
            closed = self.closed
        if closed:  # close() came before the loop did: never connect
            await stream.close()
            self.error = TransportError("stream closed before it connected")
            self.started.set()
            self.items.put(END)
            return
        stream.add_listener(self.dispatch)
        try:
            await stream.start()
        except BaseException as exc:
            self.error = exc
            self.closed = True
            self.started.set()
            self.items.put(exc)
            return
        self.started.set()
        try:
            async for item in stream:
                # a consumer that does not read pauses the stream (see Stream)
                while self.items.qsize() >= self.max_queue and not self.closed:
                    await asyncio.sleep(0.01)
                self.items.put(item)
        except BaseException as exc:
            self.items.put(exc)
        finally:
            await stream.close()
            self.items.put(END)


class SyncStream:
    """A ``Stream`` for synchronous code: runs on its own loop in a daemon thread.

    Iterate it (``for msg in client.stream([...])``) or call ``get(timeout)``;
    ``close()`` (or leaving a ``with`` block) stops the thread, from any thread:
    an iteration running elsewhere ends. Listeners are called on the stream's
    thread. A stream dropped unclosed is closed when collected.
    """

    def __init__(self, core: ClientCore, topics: Iterable[str] | str, **options: Any) -> None:
        # built here, where a bad option is refused to the caller (asyncio's queue and
        # event bind to the stream thread's loop on first use, not when made)
        self._stream = Stream(core, topics, **options)
        self._runner = _Runner(self._stream, options.get("max_queue", 10_000))
        weakref.finalize(self, self._runner.abandon).atexit = False

    def __repr__(self) -> str:
        started = self._runner.thread is not None
        state = "closed" if self.closed else ("open" if started else "idle")
        return f"SyncStream(topics={self.topics!r}, {state})"

    @property
    def topics(self) -> list[str]:
        """The subscribed topics."""
        return self._stream.topics

    @property
    def closed(self) -> bool:
        """True once ``close()`` ran or the stream failed for good."""
        return self._runner.closed or self._stream.closed

    @property
    def reconnects(self) -> int:
        """Reconnects so far."""
        return self._stream.reconnects

    @property
    def bad_frames(self) -> int:
        """Frames skipped because they were not JSON."""
        return self._stream.bad_frames

    @property
    def refused(self) -> dict[str, str]:
        """The topics the service refused, with its words (``Stream.refused``)."""
        return self._stream.refused

    def refusal(self, topic: str) -> str | None:
        """Why the service refused ``topic``, else ``None`` (``Stream.refusal``)."""
        return self._stream.refusal(topic)

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(item)`` for every item (on the stream's thread)."""
        self._runner.listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling ``listener``."""
        with contextlib.suppress(ValueError):
            self._runner.listeners.remove(listener)

    def start(self) -> None:
        """Connect and subscribe (blocks until subscribed or failed); ``TransportError``
        once closed."""
        runner = self._runner
        runner.start()
        if runner.closed:
            raise TransportError("stream is closed")

    def subscribe(self, topics: Iterable[str] | str) -> None:
        """Add topics; sent at once when connected, and after every reconnect."""
        self.start()
        chosen = topic_list(topics)  # a bad topic is refused in the caller's thread
        self._on_loop(self._stream.subscribe(chosen))

    def unsubscribe(self, topics: Iterable[str] | str) -> None:
        """Drop topics (``Stream.unsubscribe``): never subscribed again after a reconnect."""
        self.start()
        chosen = topic_list(topics)
        self._on_loop(self._stream.unsubscribe(chosen))

    def _on_loop(self, coroutine: Coroutine[Any, Any, None]) -> None:
        """Run ``coroutine`` on the stream's loop and wait for it; ``TransportError`` once
        the stream is closed (the coroutine then never runs)."""
        runner = self._runner
        with runner.lock:
            loop, thread, closed = runner.loop, runner.thread, runner.closed
        if closed or loop is None or thread is None:
            coroutine.close()
            raise TransportError("stream is closed")
        try:
            future = asyncio.run_coroutine_threadsafe(coroutine, loop)
        except RuntimeError:  # the loop ended
            coroutine.close()
            raise TransportError("stream is closed") from None
        while not future.done():  # a loop ending before it ran the coroutine never answers
            concurrent.futures.wait([future], timeout=1.0)
            if not future.done() and not thread.is_alive():
                coroutine.close()  # never run: no "never awaited" warning
                raise TransportError("stream is closed")
        if future.cancelled():  # the loop ended meanwhile
            raise TransportError("stream is closed")
        future.result()

    def get(self, timeout: float | None = None) -> StreamItem | None:
        """The next item, or ``None`` when none came within ``timeout`` seconds;
        ``StopIteration`` once the stream is closed."""
        runner = self._runner
        if not runner.closed:  # a closed stream's end is queued: iteration ends
            runner.start()
        try:
            item = runner.items.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(item, End):
            runner.items.put(item)
            raise StopIteration
        if isinstance(item, BaseException):
            runner.items.put(END)
            raise item
        return item

    def __iter__(self) -> Iterator[StreamItem]:
        return self

    def __next__(self) -> StreamItem:
        item = self.get()
        assert item is not None
        return item

    def close(self) -> None:
        """Close the connection, end iteration and stop the thread (from any thread)."""
        self._runner.close()

    def __enter__(self) -> SyncStream:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
