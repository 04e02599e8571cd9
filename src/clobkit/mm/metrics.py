"""A desk's metrics: request counts and latency histograms by endpoint and outcome,
the sign latency histogram (a signer's orders), retries, 429s, stream reconnects and
message lag, fills, position and notional per market. Kept as plain counters
(``Desk.metrics()`` is a snapshot dict); with the
``metrics`` extra, ``collector(desk)`` exposes them to ``prometheus_client``."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["LAG_BUCKETS", "LATENCY_BUCKETS", "Counters", "Histogram", "collector"]

#: Upper bounds (s) of the request latency histogram's buckets.
LATENCY_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
#: Upper bounds (s) of the stream message lag histogram's buckets.
LAG_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0)


class Histogram:
    """Counts of observations per bucket (``le`` upper bounds, s), their sum and count."""

    __slots__ = ("bounds", "count", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one: above every bound
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.count += 1
        self.sum += value

    def snapshot(self) -> dict[str, Any]:
        """``{"buckets": {le: cumulative count}, "count", "sum"}`` (``le`` ``"+Inf"`` last)."""
        cumulative: dict[str, int] = {}
        total = 0
        for bound, n in zip((*map(str, self.bounds), "+Inf"), self.counts, strict=True):
            total += n
            cumulative[bound] = total
        return {"buckets": cumulative, "count": self.count, "sum": self.sum}


class Counters:
    """What a desk counts as it goes (the per-market figures are read from its quoters)."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, str], int] = {}  # (endpoint, outcome) -> count
        self.latency: dict[str, Histogram] = {}  # endpoint -> seconds
        self.rate_limited = 0  # 429 answers that reached the desk
        self.queued = 0  # requests that waited for the budget
        self.lag = Histogram(LAG_BUCKETS)  # order updates: receipt time - updated_at
        self.messages = 0  # stream items routed
        self.sign = Histogram(LATENCY_BUCKETS)  # an order's build with a signer: its signature

    def request(self, endpoint: str, outcome: str, seconds: float) -> None:
        key = (endpoint, outcome)
        self.requests[key] = self.requests.get(key, 0) + 1
        hist = self.latency.get(endpoint)
        if hist is None:
            hist = self.latency[endpoint] = Histogram(LATENCY_BUCKETS)
        hist.observe(seconds)


def collector(snapshot: Callable[[], dict[str, Any]]) -> Any:
    """A ``prometheus_client`` collector reading ``snapshot()`` (``Desk.metrics``) at each
    scrape: register it with ``prometheus_client.REGISTRY.register(...)``. Needs the
    ``metrics`` extra (``pip install clobkit[metrics]``)."""
    from prometheus_client.registry import Collector

    class DeskCollector(Collector):
        def collect(self) -> Iterator[Any]:
            snap = snapshot()
            yield from _request_families(snap)
            yield from _desk_families(snap)
            yield from _market_families(snap)

    return DeskCollector()


def _request_families(snap: dict[str, Any]) -> Iterator[Any]:
    """Requests by endpoint and outcome, and their latency."""
    from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

    requests = CounterMetricFamily(
        "clobkit_desk_requests", "Requests by endpoint and outcome", labels=["endpoint", "outcome"]
    )
    for row in snap["requests"]:
        requests.add_metric([row["endpoint"], row["outcome"]], row["count"])
    yield requests
    latency = HistogramMetricFamily(
        "clobkit_desk_request_seconds", "Request latency by endpoint", labels=["endpoint"]
    )
    for endpoint, hist in snap["latency"].items():
        latency.add_metric([endpoint], list(hist["buckets"].items()), sum_value=hist["sum"])
    yield latency


def _desk_families(snap: dict[str, Any]) -> Iterator[Any]:
    """The desk's counters, message lag, kill switch, open orders and notional."""
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
    )

    for name, key, text in (
        ("clobkit_desk_retries", "retries", "Places and cancels sent again"),
        ("clobkit_desk_rate_limited", "rate_limited", "429 answers"),
        ("clobkit_desk_reconnects", "reconnects", "Stream reconnects"),
        ("clobkit_desk_messages", "messages", "Stream messages routed"),
        ("clobkit_desk_frames", "frames", "Stream frames decoded"),
        ("clobkit_desk_halts", "halts", "Kill switch firings"),
        ("clobkit_desk_halt_retries", "halt_retries", "Cancels of a halted desk sent again"),
    ):
        yield CounterMetricFamily(name, text, value=snap[key])
    sign = snap["sign_latency"]
    yield HistogramMetricFamily(
        "clobkit_desk_sign_seconds",
        "An order's signature by the desk's signer (a KMS call)",
        buckets=list(sign["buckets"].items()),
        sum_value=sign["sum"],
    )
    lag = snap["lag"]
    yield HistogramMetricFamily(
        "clobkit_desk_message_lag_seconds",
        "Order updates: receipt time minus the record's updated_at",
        buckets=list(lag["buckets"].items()),
        sum_value=lag["sum"],
    )
    yield GaugeMetricFamily(
        "clobkit_desk_halted", "1 while the kill switch holds", value=snap["halted"] is not None
    )
    yield GaugeMetricFamily("clobkit_desk_streams", "Streams open", value=snap["streams"])
    yield GaugeMetricFamily(
        "clobkit_desk_refused_topics", "Topics the service refused", value=len(snap["refused"])
    )
    yield GaugeMetricFamily(
        "clobkit_desk_deaf", "1 while the order topic is refused", value=snap["deaf"] is not None
    )
    yield GaugeMetricFamily("clobkit_desk_open_orders", "Open orders", value=snap["open_orders"])
    yield GaugeMetricFamily(
        "clobkit_desk_notional", "Notional at risk (USDC)", value=float(snap["notional"])
    )


def _market_families(snap: dict[str, Any]) -> Iterator[Any]:
    """Fills, position and notional at risk per market."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    fills = CounterMetricFamily("clobkit_desk_fills", "Fills by market", labels=["market_id"])
    position = GaugeMetricFamily(
        "clobkit_desk_position", "Shares held", labels=["market_id", "outcome"]
    )
    notional = GaugeMetricFamily(
        "clobkit_desk_market_notional", "Notional at risk by market (USDC)", labels=["market_id"]
    )
    for market_id, row in snap["markets"].items():
        fills.add_metric([market_id], row["fills"])
        notional.add_metric([market_id], float(row["notional"]))
        for outcome, shares in row["position"].items():
            position.add_metric([market_id, outcome], float(shares))
    yield fills
    yield position
    yield notional
