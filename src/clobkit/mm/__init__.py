"""Market making on the async client: a ``Quoter`` keeps a ladder of quotes on the
service equal to the wanted one, through timeouts, 5xx answers, dropped
connections and stream reconnects; a ``Desk`` runs many (docs/market-making.md).

The parts, each with one job, composed rather than layered:

* ``orders``: the order state machine (``State``, ``Event``, ``TRANSITIONS``), the
  one home of how an order's state may change;
* ``cache``: the execution cache (``ExecutionCache``) of every order sent or adopted,
  by key and id, unknown outcomes included; each outcome's position and fills;
* ``gate``: the one pre-trade gate (``Gate``): a quoter's and the desk's limits, the
  request budget learnt from the service's refusals (``budget``), and ``risk``'s sums;
* ``sender``, ``resolver``: places and cancels sent, unknown outcomes settled;
* ``killswitch``: ``KillSwitch`` (cancel what the cache knows first, then list until
  nothing rests) and its ``Watchdog``;
* ``renewal``: quotes that expire on their own (``order_ttl``: ``Expiry``), renewed
  before they do by a ``Renewer``; ``lifeline``: a desk's heartbeats to
  ``clobkit sentinel`` (``clobkit.sentinel``);
* ``execution``: those wired together for one desk or one lone quoter;
* ``ladder``: quotes read exactly and diffed against the live orders; ``plan``: the
  orders a requote may keep, and its report; ``options``: the options checked;
* ``feed``, ``book``: what a quoter hears (its book mirror, its order records);
* ``router``, ``reads``: a desk's streams and the reads its quoters share;
* ``quoter``, ``desk``: the strategies' loop (``Quoter``, ``Desk``);
* ``metrics``: the desk's counters and histograms, and its ``prometheus_client``
  collector; ``tasks``: requests run together, none left running untracked.
"""

from __future__ import annotations

from ..errors import QuoteRefused
from .book import BookMirror
from .budget import Budget, Slots
from .cache import ExecutionCache
from .desk import Desk
from .execution import Execution
from .gate import Gate, Halted, Paced
from .killswitch import KillSwitch, Watchdog
from .ladder import Level, Quote
from .orders import TRANSITIONS, Event, Fill, State, TrackedOrder
from .quoter import Quoter, RequoteReport
from .renewal import Expiry, Renewer
from .risk import DeskLimits, Exposure, Limits

__all__ = [
    "TRANSITIONS",
    "BookMirror",
    "Budget",
    "Desk",
    "DeskLimits",
    "Event",
    "Execution",
    "ExecutionCache",
    "Expiry",
    "Exposure",
    "Fill",
    "Gate",
    "Halted",
    "KillSwitch",
    "Level",
    "Limits",
    "Paced",
    "Quote",
    "QuoteRefused",
    "Quoter",
    "Renewer",
    "RequoteReport",
    "Slots",
    "State",
    "TrackedOrder",
    "Watchdog",
]
