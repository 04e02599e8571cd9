"""Sync and async clients of the External Trading API, and its WebSocket stream.

``Client`` and ``AsyncClient`` share one sans-I/O core (``_base.ClientCore``):
request building and signing, retries, caches, validation and response
parsing live there once; the two classes only perform I/O.
"""

from __future__ import annotations

from ._async import AsyncClient
from ._base import MAX_ORDER_USDC, ClientConfig
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
