"""The clients' checks of their arguments (``client/_validate.py``): arguments taken
unchecked, or refused by only one client (an audit's findings).

Each failed before its fix: ``Client.stream(max_queue=0)`` was refused on the
stream's own thread, which died and left ``start()`` waiting for ever;
``wait_for_order`` took a NaN timeout (never ending), a negative
``poll_interval`` (a bare ValueError on one client, a tight polling loop on
the other) and statuses that were not statuses; ``prepare`` read a market id
as its characters; and ``stream`` took negative, zero or NaN delays.
"""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest

from clobkit import errors


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_a_bad_max_queue_is_refused_by_both_clients_when_asked(api: Any, bad: Any) -> None:
    with pytest.raises(errors.ValidationError, match="max_queue"):
        api.stream(["market:x:book"], max_queue=bad)


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("backoff", -1),
        ("backoff", 0),
        ("backoff", math.nan),
        ("backoff_cap", math.inf),
        ("backoff_cap", 0.01),  # under the backoff
        ("open_timeout", "x"),
        ("open_timeout", 0),
        ("ping_interval", -1),
        ("ping_interval", math.nan),
        ("ack_timeout", -5),
        ("ack_timeout", True),
    ],
)
def test_stream_delays_are_checked_by_both_clients(api: Any, name: str, bad: Any) -> None:
    with pytest.raises(errors.ValidationError) as info:
        api.stream(["market:x:book"], **{name: bad})
    assert info.value.field == name


def test_stream_takes_its_edges(api: Any) -> None:
    client = getattr(api, "raw", api)  # the async client itself: its facade would iterate
    stream = client.stream(["market:x:book"], ping_interval=None, ack_timeout=0, backoff=1e-3)
    assert "idle" in repr(stream)  # made, not started: both clients say so
    if api.flavour == "sync":
        stream.close()


@pytest.mark.parametrize("bad", [5, None, 1.5])
def test_stream_topics_that_are_not_iterable_are_named(api: Any, bad: Any) -> None:
    with pytest.raises(errors.ValidationError) as info:
        api.stream(bad)
    assert info.value.field == "topics"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"poll_interval": -1}, "poll_interval"),
        ({"poll_interval": 0}, "poll_interval"),
        ({"poll_interval": "x"}, "poll_interval"),
        ({"poll_interval": math.nan}, "poll_interval"),
        ({"timeout": math.nan}, "timeout"),
        ({"timeout": math.inf}, "timeout"),
        ({"timeout": -1}, "timeout"),
        ({"statuses": 5}, "statuses"),
        ({"statuses": "bogus"}, "statuses"),
        ({"statuses": ["matched", "canceled"]}, "statuses"),
        ({"statuses": [["matched"]]}, "statuses"),
        ({"statuses": []}, "statuses"),
    ],
)
def test_wait_for_order_checks_its_arguments_before_any_request(
    api: Any, options: dict[str, Any], field: str
) -> None:
    with pytest.raises(errors.ValidationError) as info:
        api.wait_for_order(str(uuid.uuid4()), **options)
    assert info.value.field == field


@pytest.mark.parametrize("bad", [None, 5, "7d3f1c9e-0000-4000-8000-000000000000"])
def test_prepare_names_market_ids_that_are_not_an_iterable_of_ids(api: Any, bad: Any) -> None:
    with pytest.raises(errors.OrderFieldError) as info:
        api.prepare(bad)
    assert info.value.field == "market_ids"
