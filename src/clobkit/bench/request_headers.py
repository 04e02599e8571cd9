"""``clobkit bench`` rows for request signing: RequestSigner against hmac + hashlib + secrets."""

from __future__ import annotations

import hashlib
import hmac
import random
import secrets
import time
from collections.abc import Sequence

from .. import RequestSigner, verify_signature
from ..core.spec import SALT_MAX
from ._timing import Contender, Operation, Settings, tally

PATH = "/api/ext/v1/orders/raw"
BATCH_REQUESTS = 1000


def request_bodies(n: int, seed: int) -> list[bytes]:
    """``n`` raw-order bodies padded to 300 bytes, as a bot sends them."""
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        body = (
            '{"market_id":"5f0c6a8e-3b1d-4c62-9d1e-2b7f4a9c8e11","outcome":"a",'
            f'"token_id":"{rnd.randrange(10**76, 10**77)}","maker_amount":'
            f'"{rnd.randrange(10**8)}","taker_amount":"{rnd.randrange(10**8)}","side":0,'
            f'"fee_rate_bps":0,"order_type":"GTC","salt":"{rnd.randrange(SALT_MAX)}",'
            '"client_order_id":"b1"}'
        ).encode()
        out.append(body + b" " * (300 - len(body)))
    return out


def stdlib_headers(key: str, secret: bytes, method: str, path: str, body: bytes) -> dict[str, str]:
    """The same four headers written the obvious way with hmac, hashlib and secrets."""
    ts = str(time.time_ns() // 1_000_000)
    nonce = secrets.token_hex(16)
    return {
        "X-API-KEY": key,
        "X-API-TIMESTAMP": ts,
        "X-API-NONCE": nonce,
        "X-API-SIGNATURE": stdlib_signature(secret, method, path, ts, nonce, body),
    }


def stdlib_signature(
    secret: bytes, method: str, path: str, ts: str, nonce: str, body: bytes
) -> str:
    """HMAC-SHA256 (hex) of ``METHOD\\nPATH\\nTIMESTAMP\\nNONCE\\nsha256hex(body)``."""
    signing = f"{method}\n{path}\n{ts}\n{nonce}\n{hashlib.sha256(body).hexdigest()}"
    return hmac.new(secret, signing.encode(), hashlib.sha256).hexdigest()


def signing_operation(s: Settings) -> Operation:
    """RequestSigner.headers / headers_many against hmac + hashlib + secrets, per request."""
    key, secret = "bench-key", "bench-secret"
    signer = RequestSigner(key, secret)
    requests = [("POST", PATH, body) for body in request_bodies(BATCH_REQUESTS, seed=11)]
    checked = requests[: s.checks]

    def agree(headers: Sequence[dict[str, str]]) -> int:
        bad = 0
        for (m, p, b), h in zip(checked, headers, strict=True):
            want = stdlib_signature(
                secret.encode(), m, p, h["X-API-TIMESTAMP"], h["X-API-NONCE"], b
            )
            bad += not hmac.compare_digest(want, h["X-API-SIGNATURE"])
        return bad

    def one(reps: int) -> None:
        headers = signer.headers
        for _ in range(reps):
            for m, p, b in requests:
                headers(m, p, b)

    def many(reps: int) -> None:
        for _ in range(reps):
            signer.headers_many(requests)

    def std(reps: int) -> None:
        sec = secret.encode()
        for _ in range(reps):
            for m, p, b in requests:
                stdlib_headers(key, sec, m, p, b)

    op = Operation("headers", f"request headers (POST, {len(requests[0][2])}-byte body)")
    c = Contender("clobkit RequestSigner.headers", "clobkit", one, len(requests))
    tally(c, len(checked), agree([signer.headers(m, p, b) for m, p, b in checked]), "= stdlib")
    op.contenders.append(c)
    c = Contender(f"clobkit headers_many ×{len(requests):,}", "clobkit", many, len(requests))
    tally(c, len(checked), agree(signer.headers_many(checked)), "= stdlib")
    op.contenders.append(c)
    c = Contender("stdlib hmac + hashlib + secrets", "peer", std, len(requests))
    bad = 0
    for m, p, b in checked:
        h = stdlib_headers(key, secret.encode(), m, p, b)
        ts, nonce, sig = h["X-API-TIMESTAMP"], h["X-API-NONCE"], h["X-API-SIGNATURE"]
        bad += not verify_signature(secret, m, p, ts, nonce, b, sig)
    tally(c, len(checked), bad, "verified by clobkit")
    op.contenders.append(c)
    return op
