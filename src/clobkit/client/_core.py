"""The client's operations (ClientCore): endpoints, pagers, the raw-order flow and
waiting on orders (``_wait.WaitCore``), written once for the sync and async shells.
"""

from __future__ import annotations

import logging
import reprlib
from collections.abc import Iterable
from typing import Any, NamedTuple, TypeVar

import msgspec

from ..core.select import OrderHasher
from ..core.spec import API_PREFIX, MAX_FEE_RATE_BPS
from ..errors import (
    ApiError,
    OrderFieldError,
    OutcomeUnknown,
    ServerError,
    TransportError,
    ValidationError,
)
from ..models import Order, PlacedOrder, RawOrderResult
from . import _decode as shapes
from ._cancel_all import CancelAllResult, cancel_all
from ._endpoints import MarketInfo
from ._errors import UNKNOWN_OUTCOME as UNKNOWN_OUTCOME  # the shells import it from here
from ._ops import KEYED, NEVER, SAFE, Call, Copies, Gather, Operation, Sign, Sleep
from ._validate import (
    RawOrderFields,
    RawOrderSpec,
    _market_ids,
    _segment,
    order_body,
    raw_order_fields,
)
from ._wait import OrderFeed as OrderFeed  # the shells import it from here
from ._wait import StreamItem as StreamItem  # and _stream this
from ._wait import WaitCore

log = logging.getLogger("clobkit.client")
T = TypeVar("T")
P = TypeVar("P")
_encoder = msgspec.json.Encoder(decimal_format="number")


# ---------------------------------------------------------------------------
# The core


def raw_order_body(order: RawOrderResult) -> bytes:
    """The compact JSON body of ``POST /orders/raw`` carrying ``order``'s fields."""
    return _encoder.encode(
        {
            "market_id": order.market_id,
            "outcome": order.outcome,
            "token_id": order.token_id,
            "maker_amount": str(order.maker_amount),
            "taker_amount": str(order.taker_amount),
            "side": order.side,
            "fee_rate_bps": order.fee_rate_bps,
            "order_type": order.order_type,
            "salt": str(order.salt),
            "nonce": str(order.nonce),
            "expiration": str(order.expiration),
            "client_order_id": order.client_order_id,
        }
    )


class PreparedRawOrder(NamedTuple):
    """A raw order built and hashed (and signed, when a signer was given) but not
    sent: ``result.order_id`` is empty."""

    result: RawOrderResult
    body: bytes


class ClientCore(WaitCore):
    """State and operations shared by ``Client`` and ``AsyncClient``.

    Holds the signer (the only holder of the secret) and the caches (see
    ``EndpointCore``) and builds every operation: reads, placing, waiting.
    """

    # -- place order ------------------------------------------------------------

    def place_order(
        self,
        market_id: str,
        *,
        side: object = "BUY",
        outcome: str | None = None,
        amount: object = None,
        shares: object = None,
        order_type: object = "FOK",
        limit_price: object = None,
        token_option: str | None = None,
        expiration: object = None,
        take_profit_price: object = None,
        stop_loss_price: object = None,
    ) -> Operation[PlacedOrder]:
        """``POST /orders``, validated first; never retried automatically."""
        body = order_body(
            market_id,
            now=self.wall_clock(),
            side=side,
            outcome=outcome,
            amount=amount,
            shares=shares,
            order_type=order_type,
            limit_price=limit_price,
            token_option=token_option,
            expiration=expiration,
            take_profit_price=take_profit_price,
            stop_loss_price=stop_loss_price,
        )
        return self.run(Call("POST", API_PREFIX + "/orders", None, body, shapes.PLACED, NEVER))

    def cancel_all_orders(
        self, market_id: str | None = None, timeout: float = 60.0
    ) -> Operation[CancelAllResult]:
        """Every open order of the caller cancelled (see ``_cancel_all``)."""
        return cancel_all(self, market_id, timeout)

    def order_body(self, market_id: str, **fields: Any) -> bytes:
        """The compact JSON body of ``POST /orders`` (see ``_validate.order_body``)."""
        return order_body(market_id, now=self.wall_clock(), **fields)

    # -- the raw-order flow -------------------------------------------------------

    def market_info(self, market_id: str) -> Operation[MarketInfo]:
        """Tokens and ``neg_risk`` of a market (cached for the client's life)."""
        info = self.markets.get(market_id)
        if info is None:
            market = yield from self.get_market(market_id)
            info = self.markets.get(market.id) or self.markets.get(market_id)
            if info is None:
                raise ServerError(
                    f"market {market.id}: the detail carries no token ids", status=200
                )
        return info

    def fee_rate(self, token_id: str, refresh: bool = False) -> Operation[int]:
        """``fee_rate_bps`` of a token from the exchange's fee-rate query (cached, TTL)."""
        _segment(token_id, "token_id", OrderFieldError)
        cached = self.fee_rates.get(token_id)
        now = self.clock()
        if cached is not None and cached[1] > now and not refresh:
            return cached[0]
        call = Call(
            "GET",
            "/fee-rate",
            {"token_id": token_id},
            b"",
            None,
            SAFE,
            signed=False,
            url=self.config.clob_url + "/fee-rate",
        )
        raw = yield from self.run(call)
        if isinstance(raw, dict) and "base_fee" not in raw and isinstance(raw.get("data"), dict):
            raw = raw["data"]
        fee = raw.get("base_fee") if isinstance(raw, dict) else None
        if isinstance(fee, float) and fee.is_integer():
            fee = int(fee)
        if isinstance(fee, bool) or not isinstance(fee, int) or not 0 <= fee <= MAX_FEE_RATE_BPS:
            shown = reprlib.repr(raw)  # bounded, whatever the answer holds
            problem = f"without an integer base_fee in [0, {MAX_FEE_RATE_BPS}]"
            raise ServerError(f"fee-rate answer {problem}: {shown}", status=200)
        self.fee_rates[token_id] = (fee, self.clock() + self.config.fee_rate_ttl)
        return fee

    def ensure_hasher(self) -> Operation[OrderHasher]:
        if self.hasher is None:
            yield from self.get_wallet()
        assert self.hasher is not None
        return self.hasher

    def prepare(self, market_ids: Iterable[str]) -> Operation[None]:
        """Warm the wallet, market and fee-rate caches concurrently."""
        ids = _market_ids(market_ids)
        for market_id in ids:
            _segment(market_id, "market_id", OrderFieldError)
        yield Gather([self.ensure_hasher(), *(self._prepare_market(m) for m in ids)])
        return None

    def _prepare_market(self, market_id: str) -> Operation[None]:
        info = yield from self.market_info(market_id)
        yield Gather([self.fee_rate(info.token_id_a), self.fee_rate(info.token_id_b)])
        return None

    def place_raw_order(
        self, spec: RawOrderSpec, signer: object = None
    ) -> Operation[RawOrderResult]:
        """``POST /orders/raw`` of ``spec`` (``prepare_raw_order``); retried under
        ``client_order_id``."""
        return self._prepared_and_sent(self.prepare_raw_order(spec, signer))

    def place_raw_order_amounts(
        self,
        market_id: str,
        outcome: str,
        side: object,
        maker_amount: object,
        taker_amount: object,
        *,
        order_type: object = "GTC",
        expiration: object = None,
        client_order_id: str | None = None,
        salt: object = None,
        nonce: object = 0,
        fee_rate_bps: int | None = None,
        signer: object = None,
    ) -> Operation[RawOrderResult]:
        """``POST /orders/raw`` with explicit 6-decimal units; retried under ``client_order_id``."""
        prepare = self.prepare_raw_order_amounts(
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
        return self._prepared_and_sent(prepare)

    def _prepared_and_sent(self, prepare: Operation[PreparedRawOrder]) -> Operation[RawOrderResult]:
        prepared = yield from prepare
        return (yield from self.send_raw_order(prepared))

    def prepare_raw_order(
        self, spec: RawOrderSpec, signer: object = None
    ) -> Operation[PreparedRawOrder]:
        """Everything of ``place_raw_order`` but the POST: amounts, salt, ``clob_order_id``,
        body. Validation errors (``spec.fields``) raise at once; lookups run when the
        operation runs."""
        return self._prepare_raw(spec.fields(self.wall_clock()), signer)

    def prepare_raw_order_amounts(
        self,
        market_id: str,
        outcome: str,
        side: object,
        maker_amount: object,
        taker_amount: object,
        *,
        order_type: object = "GTC",
        expiration: object = None,
        client_order_id: str | None = None,
        salt: object = None,
        nonce: object = 0,
        fee_rate_bps: int | None = None,
        signer: object = None,
    ) -> Operation[PreparedRawOrder]:
        """A raw order ready to send: its ``RawOrderResult`` (``order_id`` empty) and body.
        Validation errors raise at once; lookups run when the operation runs. With
        ``signer``, the exchange order is signed before anything is sent
        (``_signed``)."""
        fields = raw_order_fields(
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
            now=self.wall_clock(),
        )
        return self._prepare_raw(fields, signer)

    def _prepare_raw(self, fields: RawOrderFields, signer: object) -> Operation[PreparedRawOrder]:
        """Look up the token, wallet and fee rate of checked ``fields``; hash and encode."""
        market_id, outcome, side_int = fields.market_id, fields.outcome, fields.side
        maker, taker, kind = fields.maker_amount, fields.taker_amount, fields.order_type
        seconds, coid = fields.expiration, fields.client_order_id
        salt_value, nonce_value, fee_rate_bps = fields.salt, fields.nonce, fields.fee_rate_bps
        # lookups: each returns at once when its cache is warm
        info = self.markets.get(market_id)
        if info is None:
            info = yield from self.market_info(market_id)
        hasher = self.hasher
        if hasher is None:
            hasher = yield from self.ensure_hasher()
        token_id = info.token(outcome)
        if fee_rate_bps is None:
            fee_rate_bps = yield from self.fee_rate(token_id)  # the cached one while fresh
        # The API text's raw order is the V1 flow: its id is precomputed here.
        # A V2/V3 wallet's id covers the service's own timestamp, which the
        # request cannot carry: it is read back from the service, never guessed.
        precomputed = hasher.version == 1
        clob_order_id = (
            hasher.order_id(
                token_id=token_id,
                maker_amount=maker,
                taker_amount=taker,
                side=side_int,
                salt=salt_value,
                fee_rate_bps=fee_rate_bps,
                nonce=nonce_value,
                expiration=seconds,
                neg_risk=info.neg_risk,
            )
            if precomputed
            else ""
        )
        result = RawOrderResult(
            order_id="",
            clob_order_id=clob_order_id,
            clob_order_id_precomputed=precomputed,
            client_order_id=coid,
            token_id=token_id,
            side=side_int,
            maker_amount=maker,
            taker_amount=taker,
            salt=salt_value,
            fee_rate_bps=fee_rate_bps,
            nonce=nonce_value,
            expiration=seconds,
            order_type=kind,
            neg_risk=info.neg_risk,
            market_id=market_id,
            outcome=outcome,
        )
        if signer is not None:
            result = yield from self._signed(hasher, result, signer)
        body = raw_order_body(result)
        return PreparedRawOrder(result, body)

    def _signed(
        self, hasher: OrderHasher, result: RawOrderResult, signer: object
    ) -> Operation[RawOrderResult]:
        """``result`` with the exchange order's signature by ``signer``, which must be the
        wallet's signer (types 0-2). The API's raw order carries no signature (the
        service signs the order it stores): the signature is the caller's, kept in the
        result, never sent. On V1 it signs ``clob_order_id``, the very order stored; on
        V2/V3 the order stamped with this client's clock (``timestamp``, ms): the
        service stamps its own, so ``signed_order_id`` is not the stored id."""
        from ..signing import check_signer
        from ..signing.hasher import signable

        check_signer(hasher, signer)
        order: dict[str, object] = {
            "token_id": int(result.token_id),
            "maker_amount": result.maker_amount,
            "taker_amount": result.taker_amount,
            "side": result.side,
            "salt": result.salt,
            "neg_risk": result.neg_risk,
        }
        timestamp = 0
        if hasher.version == 1:
            order.update(
                fee_rate_bps=result.fee_rate_bps, nonce=result.nonce, expiration=result.expiration
            )
        else:
            timestamp = int(self.wall_clock() * 1000)
            order["timestamp"] = timestamp
        order_id, digest, tail = signable(hasher, order)
        signatures = yield Sign(signer, [digest])
        return msgspec.structs.replace(
            result, signature=signatures[0] + tail, signed_order_id=order_id, timestamp=timestamp
        )

    def signer_address(self, signer: object) -> Operation[str]:
        """``signer``'s address once checked against the wallet's signer (types 0-2)."""
        from ..signing import check_signer

        hasher = yield from self.ensure_hasher()
        return check_signer(hasher, signer)

    def send_raw_order(self, prepared: PreparedRawOrder) -> Operation[RawOrderResult]:
        """``POST /orders/raw`` of a prepared order; retried safely under its
        ``client_order_id`` (the very same body each time). A failure that leaves
        the outcome unknown carries the order (``error.order``)."""
        placed = yield from self.post_raw_order(prepared)
        return (yield from self._placed(prepared.result, placed))

    def post_raw_order(self, prepared: PreparedRawOrder) -> Operation[PlacedOrder]:
        """The POST of ``send_raw_order`` alone: the service's answer (``order_id``),
        without reading a V2/V3 order's ``clob_order_id`` back. A failure of unknown
        outcome carries the order, ``sent_at`` its last copy without an answer."""
        copies = Copies(prepared.result.sent_at)
        try:
            placed: PlacedOrder = yield from self.run(self._raw_call(prepared.body), copies=copies)
        except UNKNOWN_OUTCOME as exc:
            exc.order = msgspec.structs.replace(prepared.result, sent_at=copies.unknown_at)
            raise
        return placed

    @staticmethod
    def _raw_call(body: bytes) -> Call:
        return Call("POST", API_PREFIX + "/orders/raw", None, body, shapes.PLACED, KEYED)

    def _placed(self, sent: RawOrderResult, placed: PlacedOrder) -> Operation[RawOrderResult]:
        """``sent`` with the service's ids: on V2/V3 the stored ``clob_order_id`` is read
        back (a failure there carries the order, its ``order_id`` known)."""
        result = msgspec.structs.replace(
            sent, order_id=placed.order_id, notification_id=placed.notification_id
        )
        if result.clob_order_id_precomputed:
            return result
        try:
            stored = yield from self.get_order(placed.order_id)
        except (TransportError, ApiError) as exc:
            exc.order = result
            raise
        # empty only while the service has stored none yet (never a guessed id)
        return msgspec.structs.replace(result, clob_order_id=stored.clob_order_id or "")

    def resolve_raw_order(
        self, order: RawOrderResult, *, wait: bool = False
    ) -> Operation[Order | None]:
        """The order as the service holds it, or ``None``: never placed, and no copy
        can land any more.

        ``order`` is ``error.order`` of a raw order whose outcome was unknown. With
        its ``order_id`` known, the order is read. Otherwise the same body is sent
        again under the same ``client_order_id``: the service checks that key
        before the order itself, so its answer names the one order holding it (the
        first copy's, if it landed, or this one's) and no copy arriving later can
        make a second. A refusal of the order answers ``None`` only when it proves
        the order absent for good: it judges the body alone (every copy is refused
        alike), or it came once ``order.sent_at`` plus ``landing_time`` had passed
        (no earlier copy can land any more). A refusal that depends on the service's
        state before then (balance, risk control, rate limit) raises
        ``OutcomeUnknown``: ``wait=True`` sleeps until its ``settles_at`` and asks
        once more, so that the answer is placed or never placed. Still unknown (no
        answer, 5xx, 429): the error, with ``order``; a refusal before the key was
        read (401, 403, a gateway's 4xx) settles nothing either (``OutcomeUnknown``).
        """
        if not isinstance(order, RawOrderResult):
            raise ValidationError("order", order, "must be a RawOrderResult (error.order)")
        if order.order_id:
            return (yield from self._read_placed(order, order.order_id))
        if not order.market_id or not order.outcome or not order.client_order_id:
            raise ValidationError(
                "order", order, "needs market_id, outcome and client_order_id to be sent again"
            )
        # an order that names no send time came from elsewhere: a copy may have left now
        copies = Copies(order.sent_at or self.wall_clock())
        call = self._raw_call(raw_order_body(order))
        while True:
            try:
                placed = yield from self.run(call, copies=copies)
            except OutcomeUnknown as exc:
                if wait and exc.settles_at > self.wall_clock():
                    yield Sleep(exc.settles_at - self.wall_clock())
                    continue
                exc.order = msgspec.structs.replace(order, sent_at=copies.unknown_at)
                raise
            except UNKNOWN_OUTCOME as exc:
                exc.order = msgspec.structs.replace(order, sent_at=copies.unknown_at)
                raise
            except ApiError as exc:  # settled (else run raised OutcomeUnknown): never placed
                log.info("raw order %s: refused, never placed (%s)", order.client_order_id, exc)
                return None
            return (yield from self._read_placed(order, placed.order_id))

    def _read_placed(self, order: RawOrderResult, order_id: str) -> Operation[Order]:
        """The record of ``order``, placed as ``order_id``; a failure carries the order."""
        try:
            return (yield from self.get_order(order_id))
        except UNKNOWN_OUTCOME as exc:
            exc.order = msgspec.structs.replace(order, order_id=order_id)
            raise
