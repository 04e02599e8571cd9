"""The raw-order seam of ``Client``: build an order and know its ids with no request,
send it later (``post_raw_order`` / ``send_raw_order``), read the caches an order is
signed with. ``clobkit.mm``'s loop is built on these alone."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, TypeVar

from ..core.types import OrderType, Side
from ..models import PlacedOrder, RawOrderResult
from ..signing.protocol import Signer
from ._core import ClientCore, PreparedRawOrder
from ._endpoints import MarketInfo
from ._ops import Operation

__all__ = ["RawOrderSeam"]

T = TypeVar("T")
Number = Decimal | str | int | float


class RawOrderSeam:
    """What ``Client`` inherits: the raw-order seam (its ``_core`` and ``_run``)."""

    if TYPE_CHECKING:
        _core: ClientCore

        def _run(self, op: Operation[T]) -> T: ...

    def prepare_raw_order(
        self,
        market_id: str,
        outcome: str,
        side: Side | str | int,
        price: Number,
        size: Number | None = None,
        order_type: OrderType | str = "GTC",
        expiration: int | datetime | None = None,
        client_order_id: str | None = None,
        *,
        amount: Number | None = None,
        salt: int | None = None,
        nonce: int = 0,
        tick_size: Number = "0.01",
        round_price: bool = False,
        signer: Signer | None = None,
    ) -> PreparedRawOrder:
        """Everything of ``place_raw_order`` but the POST: the order's amounts (6-decimal
        units), salt, ``client_order_id`` and, on a V1 wallet, its ``clob_order_id``
        (``result``), and the body to send (``post_raw_order``). No request once
        ``prepare([market_id])`` warmed the wallet, market and fee-rate caches.

        ``signer`` (the wallet's signer; a KMS signer's call is a request of its own):
        the exchange order is signed before the call returns, and a signer that
        fails raises here, so nothing unsigned is ever sent. The API's raw order has
        no field for the signature: it is kept in ``result.signature`` with the id it
        signs (``result.signed_order_id``; on V2/V3 the order stamped with this
        client's clock, ``result.timestamp`` ms, not the id the service stores)."""
        return self._run(
            self._core.prepare_raw_order(
                market_id,
                outcome,
                side,
                price,
                size,
                order_type,
                expiration,
                client_order_id,
                amount=amount,
                salt=salt,
                nonce=nonce,
                tick_size=tick_size,
                round_price=round_price,
                signer=signer,
            )
        )

    def prepare_raw_order_amounts(
        self,
        market_id: str,
        outcome: str,
        side: Side | str | int,
        maker_amount: int | str,
        taker_amount: int | str,
        *,
        order_type: OrderType | str = "GTC",
        expiration: int | datetime | None = None,
        client_order_id: str | None = None,
        salt: int | None = None,
        nonce: int = 0,
        fee_rate_bps: int | None = None,
        signer: Signer | None = None,
    ) -> PreparedRawOrder:
        """``prepare_raw_order`` with explicit amounts in 6-decimal units (1 USDC =
        1_000_000): the order built and hashed, not sent; no request once the caches
        are warm. ``result.clob_order_id`` is precomputed on a V1 wallet, empty on
        V2/V3 (the service signs its own timestamp: read it from the order's record).
        ``signer`` as for ``prepare_raw_order``."""
        return self._run(
            self._core.prepare_raw_order_amounts(
                market_id,
                outcome,
                side,
                maker_amount,
                taker_amount,
                order_type=order_type,
                expiration=expiration,
                client_order_id=client_order_id,
                salt=salt,
                nonce=nonce,
                fee_rate_bps=fee_rate_bps,
                signer=signer,
            )
        )

    def post_raw_order(self, prepared: PreparedRawOrder) -> PlacedOrder:
        """``POST /orders/raw`` of a prepared order, once: the service's answer
        (``order_id``). Safe to send again (the very same body, under its
        ``client_order_id``); a failure of unknown outcome (``UNKNOWN_OUTCOME``)
        carries the order as ``error.order``. A V2/V3 order's ``clob_order_id`` is
        not read back (``send_raw_order`` does)."""
        return self._run(self._core.post_raw_order(prepared))

    def send_raw_order(self, prepared: PreparedRawOrder) -> RawOrderResult:
        """``post_raw_order`` with retries, and on a V2/V3 wallet the read of the
        ``clob_order_id`` the service stored: ``place_raw_order`` of a prepared order."""
        return self._run(self._core.send_raw_order(prepared))

    def market_info(self, market_id: str) -> MarketInfo:
        """The market's two token ids and ``neg_risk``, as orders are signed with them
        (``GET /markets/:id`` once; cached for the client's life)."""
        return self._run(self._core.market_info(market_id))

    def exchange_version(self) -> int:
        """The wallet's exchange version (1, 2 or 3), which fixes how order ids are
        computed (``GET /wallet`` once; cached for the client's life)."""
        hasher = self._run(self._core.ensure_hasher())
        return hasher.version

    def check_signer(self, signer: Signer) -> str:
        """``signer``'s address, checked against the wallet's signer (signature types
        0-2 need the signer's own key: ``OrderFieldError`` naming both else). ``GET
        /wallet`` once; the ``Quoter`` and ``Desk`` check theirs on enter."""
        return self._run(self._core.signer_address(signer))
