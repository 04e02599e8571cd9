"""Compute a clob_order_id offline from a wallet, exactly as the exchange will.

Run: python examples/order_id.py
"""

from clobkit import IMPLEMENTATION, OrderHasher, WalletInfo, limit_amounts, new_salt

# What GET /api/ext/v1/wallet returns for an account (addresses never change).
wallet = WalletInfo(
    maker="0x1111111111111111111111111111111111111111",
    signer="0x2222222222222222222222222222222222222222",
)
hasher = OrderHasher(wallet)

# BUY 16.90 shares at 0.55 USDC: exact 6-decimal amounts, no float rounding.
amounts = limit_amounts("BUY", "0.55", "16.90")
salt = new_salt()
order_id = hasher.order_id(
    token_id="71321045679252212594626385532706912750332728571942532289631379312455583992563",
    maker_amount=amounts.maker_amount,
    taker_amount=amounts.taker_amount,
    side="BUY",
    salt=salt,
)
print(f"core: {IMPLEMENTATION}")
print(f"maker_amount={amounts.maker_amount} taker_amount={amounts.taker_amount} salt={salt}")
print(f"clob_order_id={order_id}")
