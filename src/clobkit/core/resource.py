"""The base of the API's resources, and the raw order's result: below ``clobkit.errors``
(whose unknown-outcome errors carry a ``RawOrderResult``) and ``clobkit.models`` (which
exports both), so that neither imports the other's module in a circle.
"""

from __future__ import annotations

from typing import dataclass_transform

import msgspec

from .spec import OrderTypeName

__all__ = ["RawOrderResult", "Resource"]


# msgspec makes subclasses frozen and omit_defaults; this tells the type checker so too
@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(msgspec.field,))
class Resource(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Base of the API resources: immutable, keyword-only, ignores unknown fields.

    ``frozen`` and ``omit_defaults`` are inherited; msgspec applies ``kw_only``
    to the fields a class declares itself, so each subclass restates it."""


class RawOrderResult(Resource, kw_only=True):
    """``POST /orders/raw`` answer, with what the client computed and sent.

    ``clob_order_id`` is the exchange order hash precomputed offline from the
    same fields; ``maker_amount`` / ``taker_amount`` are 6-decimal integer
    units (1 USDC or 1 share = 1_000_000); ``fee_rate_bps`` basis points.
    On a wallet whose exchanges are V2 or V3 contracts the id cannot be
    precomputed (the exchange signs the service's timestamp):
    ``clob_order_id_precomputed`` is then False and ``clob_order_id`` is the
    one the service stored, read back after the order was placed.
    ``market_id`` and ``outcome`` are the body's, so that the order can be
    sent again under its ``client_order_id`` (``resolve_raw_order``).
    ``sent_at`` (Unix s) is when the last copy whose outcome is unknown was sent
    (0: none): until ``sent_at`` plus the client's ``landing_time`` a copy may
    still land, and a refusal depending on the service's state proves nothing.
    Prepared with a ``signer``: ``signature`` is the exchange order's, by the
    wallet's signer, of ``signed_order_id`` (``clob_order_id`` on V1; on V2/V3 the
    order stamped ``timestamp``, ms, by the client); never sent (the request has no
    field for it). Empty without a signer.
    """

    order_id: str
    clob_order_id: str
    client_order_id: str
    token_id: str
    side: int
    maker_amount: int
    taker_amount: int
    salt: int
    fee_rate_bps: int
    nonce: int = 0
    expiration: int = 0
    order_type: OrderTypeName = "GTC"
    neg_risk: bool = False
    notification_id: str | None = None
    clob_order_id_precomputed: bool = True
    market_id: str = ""
    outcome: str = ""
    sent_at: float = 0.0
    signature: str = ""
    signed_order_id: str = ""
    timestamp: int = 0
