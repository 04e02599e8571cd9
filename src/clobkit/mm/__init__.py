"""Market making on the async client: a ``Quoter`` keeps a ladder of quotes on the
service equal to the wanted one, through timeouts, 5xx answers, dropped
connections and stream reconnects (docs/market-making.md).

* ``ladder``: quotes read exactly, limits, the diff against the live orders;
* ``book``: a local mirror of an outcome's book from the stream;
* ``quoter``: the loop (``Quoter``, ``RequoteReport``, ``Fill``);
* ``desk``: many quoters on one stream, limits over all of them, a kill switch (``Desk``);
* ``metrics``: the desk's counters and histograms, and its ``prometheus_client`` collector.
"""

from __future__ import annotations

from ..errors import QuoteRefused
from .book import BookMirror
from .desk import Budget, Desk, Exposure, Slots
from .ladder import Level, Limits, Quote
from .quoter import Fill, Quoter, RequoteReport

__all__ = [
    "BookMirror",
    "Budget",
    "Desk",
    "Exposure",
    "Fill",
    "Level",
    "Limits",
    "Quote",
    "QuoteRefused",
    "Quoter",
    "RequoteReport",
    "Slots",
]
