"""``SyncStream``: a ``Stream`` for synchronous code, run on a private event loop in a
daemon thread (``Client.stream``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any

from ..errors import TransportError
from ._core import ClientCore, StreamItem
from ._stream import END, End, Listener, Stream

__all__ = ["SyncStream"]

log = logging.getLogger("clobkit.client.stream")  # the stream's logger, both shells


class SyncStream:
    """A ``Stream`` for synchronous code: runs on its own loop in a daemon thread.

    Iterate it (``for msg in client.stream([...])``) or call ``get(timeout)``;
    ``close()`` (or leaving a ``with`` block) stops the thread. Listeners are
    called on the stream's thread.
    """

    def __init__(self, core: ClientCore, topics: Iterable[str] | str, **options: Any) -> None:
        # built here, where a bad option is refused to the caller (asyncio's queue and
        # event bind to the stream thread's loop on first use, not when made)
        self._stream = Stream(core, topics, **options)
        self._max_queue = options.get("max_queue", 10_000)
        # bounded by _amain (the end marker and a failure always fit)
        self._items: queue.Queue[StreamItem | End | BaseException] = queue.Queue()
        self._listeners: list[Listener] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._closed = False
        self._closing: asyncio.Future[None] | None = None

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("open" if self._thread is not None else "idle")
        return f"SyncStream(topics={self.topics!r}, {state})"

    @property
    def topics(self) -> list[str]:
        """The subscribed topics."""
        return self._stream.topics

    @property
    def closed(self) -> bool:
        """True once ``close()`` ran or the stream failed for good."""
        return self._closed or self._stream.closed

    @property
    def reconnects(self) -> int:
        """Reconnects so far."""
        return self._stream.reconnects

    @property
    def bad_frames(self) -> int:
        """Frames skipped because they were not JSON."""
        return self._stream.bad_frames

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(item)`` for every item (on the stream's thread)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling ``listener``."""
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def start(self) -> None:
        """Connect and subscribe (blocks until subscribed or failed)."""
        if self._thread is None:
            if self._closed:
                raise TransportError("stream is closed")
            self._thread = threading.Thread(target=self._main, name="clobkit-stream", daemon=True)
            self._thread.start()
        self._started.wait()
        if self._error is not None:
            raise self._error

    def subscribe(self, topics: Iterable[str] | str) -> None:
        """Add topics; sent at once when connected, and after every reconnect."""
        self.start()
        loop = self._loop
        assert loop is not None
        asyncio.run_coroutine_threadsafe(self._stream.subscribe(topics), loop).result()

    def get(self, timeout: float | None = None) -> StreamItem | None:
        """The next item, or ``None`` when none came within ``timeout`` seconds."""
        self.start()
        try:
            item = self._items.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(item, End):
            self._items.put(item)
            raise StopIteration
        if isinstance(item, BaseException):
            self._items.put(END)
            raise item
        return item

    def __iter__(self) -> Iterator[StreamItem]:
        return self

    def __next__(self) -> StreamItem:
        item = self.get()
        assert item is not None
        return item

    def close(self) -> None:
        """Close the connection, end iteration and stop the thread."""
        self._closed = True
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(self._close_on_loop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        with contextlib.suppress(queue.Empty):
            while True:  # closing ends iteration: drop what was not read
                self._items.get_nowait()
        self._items.put(END)

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

    def _close_on_loop(self) -> None:
        self._closing = asyncio.ensure_future(self._stream.close())

    def _dispatch(self, item: StreamItem) -> None:
        for listener in tuple(self._listeners):
            try:
                listener(item)
            except Exception:  # noqa: PERF203
                log.exception("stream listener failed")

    def _main(self) -> None:
        asyncio.run(self._amain())

    async def _amain(self) -> None:
        self._loop = asyncio.get_running_loop()
        stream = self._stream
        stream.add_listener(self._dispatch)
        try:
            await stream.start()
        except BaseException as exc:
            self._error = exc
            self._closed = True
            self._started.set()
            self._items.put(exc)
            return
        self._started.set()
        try:
            async for item in stream:
                # a consumer that does not read pauses the stream (see Stream)
                while self._items.qsize() >= self._max_queue and not self._closed:
                    await asyncio.sleep(0.01)
                self._items.put(item)
        except BaseException as exc:
            self._items.put(exc)
        finally:
            await stream.close()
            self._items.put(END)
