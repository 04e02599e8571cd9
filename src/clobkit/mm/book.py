"""A local mirror of one outcome's order book, fed by the stream's book topic."""

from __future__ import annotations

from decimal import Decimal
from time import monotonic
from typing import TYPE_CHECKING, Any

from ..client import book_topic
from ..models import Orderbook, OrderbookLevel

if TYPE_CHECKING:
    from ..client import Stream

__all__ = ["BookMirror"]


class BookMirror:
    """The latest book of a token (``market:<token>:book``): prices in USDC per share,
    level sizes in USDC as the API gives them. Updating keeps the payload as it came;
    reading converts (and caches), so a message costs a few attribute stores and one
    clock read. A level that is not one (no price, a price outside (0, 1), a size that
    is not positive, not a number) is left out of every read.

    Freshness: ``received_at`` is when it last took a book (``time.monotonic()``
    seconds), ``age`` the seconds since, and ``stale`` says whether the book may
    be behind the market: no book yet, no ``feed`` (the stream that keeps it
    current) or that stream down or closed, or messages lost (``mark_stale``, on a
    reconnect) and no book taken since, or the service refused its topic
    (``refused``: its words) and no book came on the stream since."""

    __slots__ = (
        "_asks",
        "_best",
        "_bids",
        "_gap",
        "_topic",
        "asset_id",
        "feed",
        "hash",
        "min_order_size",
        "received_at",
        "updates",
    )

    def __init__(self, asset_id: str) -> None:
        self.asset_id = asset_id
        self._bids: list[Any] = []
        self._asks: list[Any] = []
        self._best: tuple[Decimal | None, Decimal | None] | None = (None, None)
        #: ``min_order_size`` of the market in USDC, when the book said.
        self.min_order_size: Decimal | None = None
        self.hash: str | None = None
        #: Book messages applied so far.
        self.updates = 0
        #: ``time.monotonic()`` (s) when the last book was taken; ``None`` before any.
        self.received_at: float | None = None
        #: The stream whose book topic keeps the mirror current (its ``down_since`` and
        #: ``closed`` are read by ``stale``); ``None`` when nothing feeds it.
        self.feed: Stream | None = None
        self._gap = False  # messages were lost (a reconnect): stale until the next book
        self._topic = book_topic(asset_id)  # what ``feed`` carries for this mirror

    def __repr__(self) -> str:
        return f"BookMirror(best_bid={self.best_bid}, best_ask={self.best_ask})"

    def apply(self, data: Any) -> None:
        """Take a book payload (a snapshot or an update: the whole book)."""
        if type(data) is not dict:
            return
        bids = data.get("bids")
        asks = data.get("asks")
        self._bids = bids if type(bids) is list else []
        self._asks = asks if type(asks) is list else []
        self._best = None
        self.hash = data.get("hash")
        low = _number(data.get("min_order_size"))
        if low is not None and low >= 0:  # the market may change it: the latest holds
            self.min_order_size = low
        self.updates += 1
        self.received_at = monotonic()
        self._gap = False

    def mark_stale(self) -> None:
        """Messages of the book topic were lost (the feed reconnected): ``stale`` until
        the next book is taken (a subscription's snapshot, or an update)."""
        self._gap = True

    @property
    def refused(self) -> str | None:
        """Why the service refused the book topic (its words: ``feed.refusal(topic)``),
        until the topic is subscribed again or a message comes on it; else ``None``."""
        feed = self.feed
        return None if feed is None else feed.refusal(self._topic)

    @property
    def missed(self) -> bool:
        """True from ``mark_stale`` until the next book is taken."""
        return self._gap

    def take(self, book: Orderbook) -> None:
        """Take a book read over REST (``GET /orderbooks/:token_id``); a refused topic
        stays refused (the read is current only now)."""
        self.apply(
            {
                "bids": [{"price": str(lv.price), "size": str(lv.size)} for lv in book.bids],
                "asks": [{"price": str(lv.price), "size": str(lv.size)} for lv in book.asks],
                "hash": book.hash,
                "min_order_size": book.min_order_size,
            }
        )

    @property
    def age(self) -> float | None:
        """Seconds since the last book was taken (``time.monotonic()``), ``None``
        before any. It grows while no message comes, however fresh the feed."""
        at = self.received_at
        return None if at is None else monotonic() - at

    @property
    def stale(self) -> bool:
        """True when the book may be behind the market: none taken yet, nothing feeds
        it (``feed`` is ``None``: never subscribed, a ``Desk(books=False)``, a closed
        quoter), its feed is down or closed, or it reconnected (or its topic was
        refused) and no book came since."""
        feed = self.feed
        return (
            self._gap
            or self.refused is not None
            or self.received_at is None
            or feed is None
            or feed.closed
            or feed.down_since is not None
        )

    def _edges(self) -> tuple[Decimal | None, Decimal | None]:
        best = self._best
        if best is None:
            bid = max((lv.price for lv in _levels(self._bids)), default=None)
            ask = min((lv.price for lv in _levels(self._asks)), default=None)
            best = self._best = (bid, ask)
        return best

    @property
    def best_bid(self) -> Decimal | None:
        """The highest bid (USDC per share), or ``None`` when there is none."""
        return self._edges()[0]

    @property
    def best_ask(self) -> Decimal | None:
        """The lowest ask (USDC per share), or ``None`` when there is none."""
        return self._edges()[1]

    @property
    def mid(self) -> Decimal | None:
        """Half-way between the best bid and ask, when both exist."""
        bid, ask = self._edges()
        return None if bid is None or ask is None else (bid + ask) / 2

    @property
    def bids(self) -> list[OrderbookLevel]:
        """Bids, best first."""
        return sorted(_levels(self._bids), key=lambda level: level.price, reverse=True)

    @property
    def asks(self) -> list[OrderbookLevel]:
        """Asks, best first."""
        return sorted(_levels(self._asks), key=lambda level: level.price)


def _number(value: object) -> Decimal | None:
    """A finite number from a payload's value, or None."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float, Decimal)):
        return None
    try:
        number = Decimal(str(value))
    except ArithmeticError:
        return None
    return number if number.is_finite() else None


def _levels(levels: list[Any]) -> list[OrderbookLevel]:
    """The levels of a payload that are levels: a price in (0, 1), a positive size."""
    out = []
    for level in levels:
        if type(level) is not dict:
            continue
        price, size = _number(level.get("price")), _number(level.get("size"))
        if price is not None and size is not None and 0 < price < 1 and size > 0:
            out.append(OrderbookLevel(price=price, size=size))
    return out
