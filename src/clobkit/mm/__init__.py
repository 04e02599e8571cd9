"""Market making on the async client: a ``Quoter`` keeps a ladder of quotes on the
service equal to the wanted one, through timeouts, 5xx answers, dropped
connections and stream reconnects (docs/market-making.md).

* ``ladder``: quotes read exactly, limits, the diff against the live orders;
* ``book``: a local mirror of an outcome's book from the stream;
* ``quoter``: the loop (``Quoter``, ``RequoteReport``), built in layers:
  ``tracking`` (orders matched to the service's records, fills, ``Fill``),
  ``sending`` (orders built, then sent; the desk's ``Host`` protocol) and
  ``resolve`` (unknown outcomes, V2/V3 ids, reconcile);
* ``desk``: many quoters on one stream, limits over all of them (``Desk``), built in
  layers: ``killswitch`` (halt, resume, watchdog), ``gate`` (requests within the
  budget, shared reads, the desk's limits) and ``routing`` (the one stream);
* ``risk``: what a ladder puts at risk and its sums over a desk (``Exposure``, ``DeskLimits``);
* ``budget``: the desk's request budget and requests in flight (``Budget``, ``Slots``);
* ``metrics``: the desk's counters and histograms, and its ``prometheus_client`` collector.
"""

from __future__ import annotations

from ..errors import QuoteRefused
from .book import BookMirror
from .budget import Budget, Slots
from .desk import Desk
from .ladder import Level, Limits, Quote
from .quoter import Fill, Quoter, RequoteReport
from .risk import DeskLimits, Exposure

__all__ = [
    "BookMirror",
    "Budget",
    "Desk",
    "DeskLimits",
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
