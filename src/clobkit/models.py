"""Typed resources of the External Trading API (msgspec Structs)."""

from __future__ import annotations

import msgspec

__all__ = ["WalletInfo"]


class WalletInfo(msgspec.Struct, frozen=True, kw_only=True):
    """``GET /wallet``: the addresses an order is built and hashed with.

    ``maker`` is the smart-contract wallet (EIP-712 maker), ``signer`` the EOA,
    ``signature_type`` 2 for the service's smart-contract wallets; the two
    exchange addresses are the EIP-712 verifying contracts.
    """

    maker: str
    signer: str
    chain_id: int = 137
    signature_type: int = 2
    ctf_exchange: str = "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E"
    neg_risk_exchange: str = "0xC5d563A36AE78145C45a50134d48A1215220f80a"
