"""libsecp256k1 for order signing: coincurve's compiled module, checked when first
loaded, else coincurve's public API.

coincurve has no public handle on libsecp256k1's functions, and the compiled core
signs batches in its native threads through two of them, called by address. That
path (``NativeBackend``) reaches ``coincurve._libsecp256k1``, a private module, so it
is taken only once a check at load passes (``load``):

* the module imports and declares the two functions with the C prototypes the
  compiled core calls them with (cffi's ``ffi.typeof``), and the signature struct is
  the 65 bytes it expects: a changed build is refused before anything is called;
* known digests, signed through it (cffi, and the compiled core's own call when the
  compiled twin is live), give the signatures and public keys coincurve's public API
  gives.

Anything else (an import error, a renamed function, another prototype, a differing
signature) logs a warning and signs through coincurve's public API instead
(``PublicBackend``: ``PrivateKey.sign_recoverable``, cffi releasing the GIL in each
call, batches over Python threads): slower batches, never a crash or a wrong
signature. docs/architecture.md says what each costs.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["Backend", "NativeBackend", "PublicBackend", "load", "self_check"]

log = logging.getLogger("clobkit.signing")

_V = ("1b", "1c", "1d", "1e")  # v = 27 + recovery id, as hex
SIGN = "secp256k1_ecdsa_sign_recoverable"
SERIALIZE = "secp256k1_ecdsa_recoverable_signature_serialize_compact"
#: the two functions' C prototypes as coincurve's module declares them, which the
#: compiled core's calls by address match (ext/batch.h: ck_secp_sign_fn and
#: ck_secp_serialize_fn, pointers and ints in the same places)
PROTOTYPES = {
    SIGN: (
        "int(*)(struct secp256k1_context_struct *, "
        "struct secp256k1_ecdsa_recoverable_signature *, unsigned char *, unsigned char *, "
        "int(*)(unsigned char *, unsigned char *, unsigned char *, unsigned char *, "
        "void *, unsigned int), void *)"
    ),
    SERIALIZE: (
        "int(*)(struct secp256k1_context_struct *, unsigned char *, int *, "
        "struct secp256k1_ecdsa_recoverable_signature *)"
    ),
}
SIGNATURE_BYTES = 65  # secp256k1_ecdsa_recoverable_signature, as ext/sign.c holds one


class Backend(Protocol):
    """What signing needs of libsecp256k1. ``handle``: (sign, serialize, context)
    addresses for the compiled core's workers, or None (they cannot sign then)."""

    name: str
    handle: tuple[int, int, int] | None

    def key(self, raw: bytes) -> Any:
        """The key object of 32 key bytes, or None when they are no valid key."""

    def key_at(self, key: Any) -> int:
        """Where the 32 bytes of ``key`` live (for the compiled core)."""

    def public_key(self, key: Any) -> bytes:
        """The 65-byte uncompressed public key."""

    def sign_chunk(self, key: Any, digests: list[bytes], start: int, stop: int) -> list[str]:
        """``"0x"`` + 130 hex (r || s || v, v 27/28) of each of ``digests[start:stop]``."""

    def after_fork(self) -> None:
        """Start afresh in a forked child."""


class PublicBackend:
    """coincurve's public API: ``PrivateKey`` and ``sign_recoverable``."""

    name = "public"
    handle: tuple[int, int, int] | None = None

    def __init__(self) -> None:
        from coincurve import PrivateKey

        self._private_key = PrivateKey

    def key(self, raw: bytes) -> Any:
        try:
            return self._private_key(raw)
        except ValueError:  # 0, or not below the curve's order
            return None

    def key_at(self, key: Any) -> int:  # pragma: no cover - no handle: never asked
        raise NotImplementedError

    def public_key(self, key: Any) -> bytes:
        return bytes(key.public_key.format(compressed=False))

    def sign_chunk(self, key: Any, digests: list[bytes], start: int, stop: int) -> list[str]:
        sign, v = key.sign_recoverable, _V
        out = []
        for i in range(start, stop):
            signature = sign(digests[i], hasher=None)
            out.append("0x" + signature[:64].hex() + v[signature[64]])
        return out

    def after_fork(self) -> None:
        pass  # coincurve's own context


class _Workspace:
    """Output buffers of one signing thread (cffi releases the GIL, so never shared)."""

    __slots__ = ("out", "rec", "sig", "view")

    def __init__(self, ffi: Any) -> None:
        self.sig = ffi.new("secp256k1_ecdsa_recoverable_signature *")
        self.out = ffi.new("unsigned char[64]")
        self.rec = ffi.new("int *")
        self.view = ffi.buffer(self.out)


class NativeBackend:
    """libsecp256k1 through coincurve's compiled cffi module (``coincurve._libsecp256k1``),
    one blinded context for the process (signing only reads it: threads share it)."""

    name = "native"

    def __init__(self) -> None:
        from coincurve._libsecp256k1 import ffi, lib

        refused = check_declarations(ffi, lib)
        if refused is not None:
            raise TypeError(refused)
        ctx = lib.secp256k1_context_create(lib.SECP256K1_CONTEXT_NONE)
        # blinds the signing multiplication against timing side channels
        if not lib.secp256k1_context_randomize(ctx, os.urandom(32)):  # pragma: no cover
            raise RuntimeError("secp256k1_context_randomize failed")
        self.ffi, self.lib, self.ctx = ffi, lib, ctx
        self._sign = getattr(lib, SIGN)
        self._serialize = getattr(lib, SERIALIZE)
        address = self.address
        self.handle: tuple[int, int, int] | None = (
            address(ffi.addressof(lib, SIGN)),
            address(ffi.addressof(lib, SERIALIZE)),
            address(ctx),
        )
        self._local = threading.local()

    def address(self, cdata: Any) -> int:
        """The address a cffi pointer holds."""
        return int(self.ffi.cast("uintptr_t", cdata))

    def key(self, raw: bytes) -> Any:
        if not self.lib.secp256k1_ec_seckey_verify(self.ctx, raw):
            return None
        return self.ffi.new("unsigned char[32]", raw)

    def key_at(self, key: Any) -> int:
        return self.address(key)

    def public_key(self, key: Any) -> bytes:
        ffi, lib = self.ffi, self.lib
        pub = ffi.new("secp256k1_pubkey *")
        if not lib.secp256k1_ec_pubkey_create(self.ctx, pub, key):  # pragma: no cover
            raise ValueError("no public key")
        out = ffi.new("unsigned char[65]")
        size = ffi.new("size_t *", 65)
        lib.secp256k1_ec_pubkey_serialize(self.ctx, out, size, pub, lib.SECP256K1_EC_UNCOMPRESSED)
        return bytes(ffi.buffer(out))

    def sign_chunk(self, key: Any, digests: list[bytes], start: int, stop: int) -> list[str]:
        ws = self._local.__dict__.get("ws")
        if ws is None:
            ws = self._local.ws = _Workspace(self.ffi)
        sig, out, rec, view = ws.sig, ws.out, ws.rec, ws.view
        sign, serialize, ctx, null, v = self._sign, self._serialize, self.ctx, self.ffi.NULL, _V
        result: list[str] = []
        append = result.append
        for i in range(start, stop):
            if not sign(ctx, sig, digests[i], key, null, null):  # pragma: no cover
                raise ValueError("libsecp256k1 refused to sign")
            serialize(ctx, out, rec, sig)
            append("0x" + view[:].hex() + v[rec[0]])
        return result

    def after_fork(self) -> None:
        # a forked child holds a copy of the parent's blinding seed: a fresh one
        self.lib.secp256k1_context_randomize(self.ctx, os.urandom(32))


def check_declarations(ffi: Any, lib: Any) -> str | None:
    """Why the compiled core may not call ``lib``'s two functions by address (their
    declared C prototypes or the signature struct's size differ), or None."""
    for name, prototype in PROTOTYPES.items():
        declared = ffi.typeof(getattr(lib, name)).cname
        if declared != prototype:
            return f"{name} is declared {declared!r}"
    size = ffi.sizeof("secp256k1_ecdsa_recoverable_signature")
    if size != SIGNATURE_BYTES:
        return f"a recoverable signature is {size} bytes, not {SIGNATURE_BYTES}"
    return None


#: (key, digest) pairs signed through both paths at load: the lowest and highest
#: keys, and digests of every kind of byte
_KNOWN = [
    (
        (1).to_bytes(32, "big"),
        bytes(32),
    ),
    (
        bytes.fromhex("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140"),
        b"\xff" * 32,
    ),
    *(
        (
            hashlib.sha256(b"clobkit self-check key %d" % k).digest(),
            hashlib.sha256(b"clobkit self-check digest %d" % k).digest(),
        )
        for k in range(4)
    ),
]


def self_check(native: Backend, public: Backend, compiled: Any = None) -> str | None:
    """Why ``native`` may not sign (a key refused, or a public key or signature that
    differs from ``public``'s, through cffi or through ``compiled``'s own call of the
    handle), or None when it agrees on every known digest."""
    for raw, digest in _KNOWN:
        mine, theirs = native.key(raw), public.key(raw)
        if mine is None:
            return "a valid key was refused"
        if native.public_key(mine) != public.public_key(theirs):
            return "a public key differs"
        want = public.sign_chunk(theirs, [digest], 0, 1)
        if native.sign_chunk(mine, [digest], 0, 1) != want:
            return "a signature through cffi differs"
        if compiled is not None and native.handle is not None:
            got = compiled._secp_check(native.handle, native.key_at(mine), digest)
            if got != want[0]:
                return "a signature through the compiled core differs"
    return None


def load(
    native: Callable[[], Backend] = NativeBackend,
    compiled: Any = None,
) -> Backend:
    """The backend to sign with: ``native()`` when it builds and passes ``self_check``
    against coincurve's public API (the compiled core's call of it checked too, when
    ``compiled`` is given), else the public API, with a warning saying why."""
    public = PublicBackend()
    try:
        chosen = native()
        reason = self_check(chosen, public, compiled)
    # any failure of a private module (ImportError, AttributeError, cffi's errors, a
    # TypeError of check_declarations) is a reason to take the public path, no more
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
    if reason is None:
        return chosen
    log.warning(
        "libsecp256k1 through coincurve's compiled module is not used (%s): signing "
        "through coincurve's public API; batches sign slower (docs/architecture.md)",
        reason,
    )
    return public
