"""A loopback AWS KMS for the benchmarks: ``GetPublicKey`` and ``Sign``
(``MessageType=DIGEST``) of AWS KMS's JSON protocol, each ``Sign`` answered after
``--delay-ms`` ms (the latency of a KMS call in a region, injected), signed like KMS
signs (a random nonce's ECDSA, DER, a high ``s`` half of the time). A process of its
own, as a KMS is another machine: its work never shares the measured client's CPU.

Run: python benchmarks/kms_standin.py --delay-ms 20   (prints "listening on URL")
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import random

from aiohttp import web
from coincurve import PrivateKey
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
#: The key every run signs with (a benchmark's key: its address goes in the wallet).
SECRET = bytes.fromhex("6b" * 32)
KEY_ID = "bench-kms-key"


def spki() -> bytes:
    number = int.from_bytes(SECRET, "big")
    public = ec.derive_private_key(number, ec.SECP256K1()).public_key()
    return public.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)


async def main(delay: float) -> None:
    key = PrivateKey(SECRET)
    public = base64.b64encode(spki()).decode()

    async def handle(request: web.Request) -> web.Response:
        target = request.headers.get("X-Amz-Target", "")
        call = json.loads(await request.read())
        if target.endswith(".GetPublicKey"):
            body = {
                "KeyId": KEY_ID,
                "KeySpec": "ECC_SECG_P256K1",
                "KeyUsage": "SIGN_VERIFY",
                "SigningAlgorithms": ["ECDSA_SHA_256"],
                "PublicKey": public,
            }
        else:
            await asyncio.sleep(delay)
            digest = base64.b64decode(call["Message"])
            compact = key.sign_recoverable(digest, hasher=None)
            r, s = int.from_bytes(compact[:32], "big"), int.from_bytes(compact[32:64], "big")
            if random.random() < 0.5:
                s = N - s
            der = base64.b64encode(encode_dss_signature(r, s)).decode()
            body = {"KeyId": KEY_ID, "Signature": der, "SigningAlgorithm": "ECDSA_SHA_256"}
        return web.Response(body=json.dumps(body), content_type="application/x-amz-json-1.1")

    app = web.Application()
    app.router.add_post("/", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    print(f"listening on http://127.0.0.1:{port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay-ms", type=float, default=20.0)
    asyncio.run(main(parser.parse_args().delay_ms / 1000))
