"""The options of a ``Quoter`` and of a ``Desk``, checked before anything is built:
a ``ValidationError`` naming the first one out of its range."""

from __future__ import annotations

from collections.abc import Mapping

from ..core.checks import positive_int, seconds
from ..core.spec import OUTCOME_A, OUTCOME_B, OUTCOMES
from ..errors import ValidationError

__all__ = ["check_desk", "check_quoter"]


def check_quoter(
    market_id: object,
    outcome: object,
    max_open_orders: object,
    on_desk: bool,
    alone: Mapping[str, object],
) -> None:
    """A quoter's market, outcome and limit; ``alone``: the options a lone quoter has of
    its own (``orders_per_minute``, ``order_ttl``, ``signer``), which a desk's quoter (``on_desk``)
    takes from its desk."""
    if outcome not in OUTCOMES:
        raise ValidationError("outcome", outcome, f"must be {OUTCOME_A!r} or {OUTCOME_B!r}")
    if not isinstance(market_id, str) or not market_id.strip():
        raise ValidationError("market_id", market_id, "must be a non-empty string")
    positive_int(max_open_orders, "max_open_orders")
    per_minute = alone.get("orders_per_minute")
    if per_minute is not None:
        positive_int(per_minute, "orders_per_minute")
    for name, value in alone.items():
        if on_desk and value is not None:
            raise ValidationError(name, value, "is the desk's: set it on the Desk")


def check_desk(
    counts: Mapping[str, int | None], times: Mapping[str, float | None], max_error_rate: float
) -> None:
    """A desk's counts (positive ints), times (positive seconds) and error rate in
    (0, 1]; ``None``: not used."""
    for name, value in counts.items():
        if value is not None:
            positive_int(value, name)
    for name, given in times.items():
        if given is not None:
            seconds(given, name)
    rate = max_error_rate
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1:
        raise ValidationError("max_error_rate", rate, "must be in (0, 1]")
