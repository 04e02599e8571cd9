"""Sync and async clients of the External Trading API, and its WebSocket stream.

``Client`` and ``AsyncClient`` share one sans-I/O core (``_core.ClientCore``):
request building and signing, retries, caches, validation and response
parsing live there once; the two classes only perform I/O.
"""

from __future__ import annotations

from ..amounts import MAX_ORDER_USDC
from ._async import AsyncClient
from ._config import ClientConfig
from ._stream import Stream, StreamItem, SyncStream, book_topic, orders_topic
from ._sync import Client

__all__ = [
    "MAX_ORDER_USDC",
    "AsyncClient",
    "Client",
    "ClientConfig",
    "Stream",
    "StreamItem",
    "SyncStream",
    "book_topic",
    "orders_topic",
]
