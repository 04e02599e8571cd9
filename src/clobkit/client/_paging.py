"""Walking paged lists: one typed pager per list endpoint (events, orders, positions,
portfolio orders), each knowing how its pages are numbered and when they end."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..errors import ServerError
from ..models import (
    Event,
    EventPage,
    Order,
    OrderPage,
    PortfolioOrder,
    PortfolioOrderPage,
    Position,
    PositionPage,
)

if TYPE_CHECKING:
    from ._ops import Operation

__all__ = ["EventsPager", "OrdersPager", "Pager", "PortfolioOrdersPager", "PositionsPager"]

P = TypeVar("P")  # the page model
T = TypeVar("T")  # the item model


class Pager(Generic[P, T]):
    """Walks a paged list: ``params`` of the next page or ``None`` at the end; ``fetch``
    (the endpoint's, given by ``EndpointCore``) is the operation reading a page."""

    def __init__(
        self, params: dict[str, Any], fetch: Callable[[dict[str, Any]], Operation[P]]
    ) -> None:
        self.params: dict[str, Any] | None = params
        self.fetch = fetch
        self._previous: list[T] = []

    def items(self, page: P) -> list[T]:
        """The items of ``page``."""
        raise NotImplementedError

    def next_params(self, page: P, params: dict[str, Any], count: int) -> dict[str, Any] | None:
        """``params`` of the page after ``page`` (which held ``count`` items), or ``None``."""
        raise NotImplementedError

    def advance(self, page: P) -> list[T]:
        """Items of ``page``; moves ``params`` to the next page (or ``None``)."""
        params = self.params
        assert params is not None
        items = self.items(page)
        if items and items == self._previous:  # a server ignoring the page asked for
            raise ServerError(
                f"the page of {params} repeats the page before it: the server ignores"
                " its paging (walking on would never end)",
                status=200,
            )
        self._previous = items
        self.params = self.next_params(page, params, len(items))
        return items


class EventsPager(Pager[EventPage, Event]):
    """``GET /events``: ``limit`` / ``offset`` paging (limit 20 by default)."""

    def items(self, page: EventPage) -> list[Event]:
        return list(page.events)

    def next_params(
        self, page: EventPage, params: dict[str, Any], count: int
    ) -> dict[str, Any] | None:
        limit = params.get("limit") or 20
        offset = (params.get("offset") or 0) + count
        done = count < limit or (page.total_count is not None and offset >= page.total_count)
        return None if done or not count else {**params, "offset": offset}


class _NumberedPager(Pager[P, T]):
    """Pages numbered from 1 with a size under ``size_key`` (default ``default_size``)."""

    size_key = "per_page"
    default_size = 10

    def done(self, page: P, number: int, size: int) -> bool:
        raise NotImplementedError

    def next_params(self, page: P, params: dict[str, Any], count: int) -> dict[str, Any] | None:
        size = params.get(self.size_key) or self.default_size
        number = params.get("page") or 1
        if self.done(page, number, size) or count < size:
            return None
        return {**params, "page": number + 1}


class OrdersPager(_NumberedPager[OrderPage, Order]):
    """``GET /orders``: ``page`` / ``page_size`` paging, ended by ``total_count``."""

    size_key = "page_size"
    default_size = 20

    def items(self, page: OrderPage) -> list[Order]:
        return list(page.orders)

    def done(self, page: OrderPage, number: int, size: int) -> bool:
        return page.total_count is not None and number * size >= page.total_count


class PositionsPager(_NumberedPager[PositionPage, Position]):
    """``GET /portfolio/positions``: ``page`` / ``per_page``, ended by ``total_pages``."""

    def items(self, page: PositionPage) -> list[Position]:
        return list(page.positions)

    def done(self, page: PositionPage, number: int, size: int) -> bool:
        pages = page.pagination.total_pages
        return pages is not None and number >= pages


class PortfolioOrdersPager(_NumberedPager[PortfolioOrderPage, PortfolioOrder]):
    """``GET /portfolio/orders``: ``page`` / ``per_page``, ended by ``total_pages``."""

    def items(self, page: PortfolioOrderPage) -> list[PortfolioOrder]:
        return list(page.orders)

    def done(self, page: PortfolioOrderPage, number: int, size: int) -> bool:
        pages = page.pagination.total_pages
        return pages is not None and number >= pages
