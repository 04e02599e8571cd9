"""Sync and async clients of the External Trading API, and its WebSocket stream.

``Client`` and ``AsyncClient`` share one sans-I/O core (``_core.ClientCore``):
request building and signing, retries, caches, validation and response
parsing live there once; the two classes only perform I/O.

The raw-order seam, for a loop of one's own (as ``clobkit.mm.Quoter`` runs):
``prepare_raw_order[_amounts]`` builds an order and its ids without a request,
``post_raw_order`` sends it; ``market_info`` and ``exchange_version`` give what
the order is signed with; ``UNKNOWN_OUTCOME`` are the failures after which a
request may or may not have taken effect; ``within`` bounds an await without
losing a cancellation; ``paced`` lets a budget of one's own count the requests
an ``AsyncClient`` sends again (its retries).
"""

from __future__ import annotations

from ..amounts import MAX_ORDER_USDC
from ._aio import paced, within
from ._async import AsyncClient
from ._cancel_all import CancelAllResult
from ._config import ClientConfig
from ._core import UNKNOWN_OUTCOME, PreparedRawOrder
from ._endpoints import MarketInfo
from ._stream import Stream, StreamItem, book_topic, orders_topic
from ._sync import Client
from ._sync_stream import SyncStream

__all__ = [
    "MAX_ORDER_USDC",
    "UNKNOWN_OUTCOME",
    "AsyncClient",
    "CancelAllResult",
    "Client",
    "ClientConfig",
    "MarketInfo",
    "PreparedRawOrder",
    "Stream",
    "StreamItem",
    "SyncStream",
    "book_topic",
    "orders_topic",
    "paced",
    "within",
]
