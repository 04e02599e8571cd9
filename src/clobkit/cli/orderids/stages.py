"""The stages of ``clobkit order-ids``: read, work and write overlapped across threads.

``staged(source, work, finish, workers)`` runs three stages at once:

- a reader thread takes the items of ``source`` (a CSV block, a Parquet
  record batch, a parsed batch of lines) and hands each to ``work`` in a
  pool of ``workers`` threads; at most ``workers + 1`` items wait for their
  writer, so memory is bounded by them, whatever the file's size;
- the pool's threads run ``work`` (parsing, hashing, building the output),
  several items at once; the core and pyarrow's kernels do their part
  without the GIL;
- the caller's thread calls ``finish(item, result)`` for each item in the
  order read (writing, reporting refusals), while the next items are read
  and worked on.

So the output and the messages are those of a one-item-at-a-time loop, for
every ``workers``. An exception of the reader or of ``work`` is raised in the
caller's thread at that item's turn, after every earlier item is finished;
an exception of ``finish`` (or a KeyboardInterrupt) stops the reader and the
pool before it propagates.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from typing import Any, TypeVar

__all__ = ["item_threads", "staged", "workers_for"]

T = TypeVar("T")
R = TypeVar("R")

_END = object()  # the reader's last item
_NAME = "clobkit-order-ids"


def workers_for(threads: int | None) -> int:
    """Items worked on at once for ``--threads``: one per thread, up to the cores here.

    Each item's Python-side steps, pyarrow's kernels and the core's call run
    in its own pool thread, so more threads get more items worked on at once,
    not only more native threads inside one ``order_ids`` call. A thread
    beyond the cores would only hold one more item in memory.
    """
    return max(1, min(threads or 1, os.cpu_count() or 1))


def item_threads(threads: int | None) -> int:
    """The core's threads for one item's hashing: ``--threads`` less the other items at
    work (each hashing on one thread), at least 1.

    ``--threads N`` is the most hashing threads at once, whatever the cores:
    the native pool serves one call at a time (a concurrent call runs on its
    caller's thread alone), so ``workers`` items at once hash on at most
    ``workers - 1 + item_threads`` = N threads. Up to the cores that is N
    items of one thread each; beyond them, the item that has the pool gets
    the rest.
    """
    return max(1, (threads or 1) - workers_for(threads) + 1)


def staged(
    source: Iterable[T],
    work: Callable[[T], R],
    finish: Callable[[T, R], None],
    workers: int,
) -> None:
    """``finish(item, work(item))`` for every item of ``source``, in order, overlapped.

    See the module's docstring.
    """
    # one item more than the pool works on: a finished item waits for the writer
    # while the next ``workers`` are worked on
    handoff: queue.Queue[Any] = queue.Queue(workers + 1)
    stop = threading.Event()

    def put(entry: object) -> bool:
        """Hand ``entry`` to the caller's thread unless told to stop (False)."""
        while not stop.is_set():
            with suppress(queue.Full):
                handoff.put(entry, timeout=0.05)
                return True
        return False

    def read(pool: ThreadPoolExecutor) -> None:
        try:
            for item in source:
                # stop is read again after the put: one that the caller's draining let
                # through (after it set stop) must not read one item more
                if stop.is_set() or not put((item, pool.submit(work, item))) or stop.is_set():
                    return
        except BaseException as exc:
            put((None, _failed(exc)))
            return
        put(_END)

    with ThreadPoolExecutor(workers, thread_name_prefix=_NAME) as pool:
        reader = threading.Thread(target=read, args=(pool,), name=f"{_NAME}-read", daemon=True)
        reader.start()
        try:
            while (entry := handoff.get()) is not _END:
                item, job = entry
                finish(item, job.result())
        finally:
            stop.set()
            while reader.is_alive():  # the reader may wait on a full hand-off: free it
                try:
                    entry = handoff.get(timeout=0.05)
                except queue.Empty:
                    continue
                if entry is not _END:
                    entry[1].cancel()
            reader.join()
            # items read but not yet worked on are dropped (after an error or at the end)
            pool.shutdown(wait=True, cancel_futures=True)


def _failed(exc: BaseException) -> Future[Any]:
    done: Future[Any] = Future()
    done.set_exception(exc)
    return done
