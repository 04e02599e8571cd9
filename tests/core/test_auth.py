"""Request signing: both twins against hmac/hashlib, built as the API text says."""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clobkit.errors import SignatureInputError

from .test_twins import Text

SECRET = "s3cr3t-Ω-key"  # non-ASCII on purpose: the key is the UTF-8 bytes


def reference(secret: str | bytes, method: str, path: str, ts: str, nonce: str, body: bytes) -> str:
    key = secret.encode() if isinstance(secret, str) else secret
    signing = f"{method}\n{path}\n{ts}\n{nonce}\n{hashlib.sha256(body).hexdigest()}"
    return hmac.new(key, signing.encode(), hashlib.sha256).hexdigest()


paths = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=300).map(
    lambda p: "/" + p
)
tokens = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=80)
secrets_ = st.one_of(st.text(min_size=1, max_size=200), st.binary(min_size=1, max_size=200))


@given(
    secret=secrets_,
    method=st.sampled_from(["GET", "POST", "DELETE", "PUT", "PATCH"]),
    path=paths,
    ts=st.integers(0, 2**63),
    nonce=tokens,
    body=st.binary(max_size=2000),
)
def test_signature_matches_hmac(
    core: ModuleType, secret: str | bytes, method: str, path: str, ts: int, nonce: str, body: bytes
) -> None:
    want = reference(secret, method, path, str(ts), nonce, body)
    assert core.signature(secret, method, path, ts, nonce, body) == want
    assert core.signature(secret, method.lower(), path, str(ts), nonce, body) == want
    assert core.verify_signature(secret, method, path, ts, nonce, body, want)
    assert not core.verify_signature(secret, method, path, ts + 1, nonce, body, want)
    flipped = want[:-1] + ("0" if want[-1] != "0" else "1")
    assert not core.verify_signature(secret, method, path, ts, nonce, body, flipped)


@given(body=st.binary(max_size=700), path=paths)
def test_headers_sign_what_they_say(core: ModuleType, body: bytes, path: str) -> None:
    signer = core.RequestSigner("key-1", SECRET)
    h = signer.headers("POST", path, body)
    assert set(h) == {"X-API-KEY", "X-API-TIMESTAMP", "X-API-NONCE", "X-API-SIGNATURE"}
    assert h["X-API-KEY"] == "key-1"
    assert re.fullmatch(r"[0-9a-f]{32}", h["X-API-NONCE"])
    assert abs(int(h["X-API-TIMESTAMP"]) - time.time() * 1000) < 5_000
    assert h["X-API-SIGNATURE"] == reference(
        SECRET, "POST", path, h["X-API-TIMESTAMP"], h["X-API-NONCE"], body
    )


def test_body_as_str_and_empty(core: ModuleType) -> None:
    signer = core.RequestSigner("k", SECRET)
    a = signer.headers("POST", "/api/ext/v1/orders", '{"a":"é"}', timestamp_ms=1, nonce="n")
    b = signer.headers(
        "POST", "/api/ext/v1/orders", '{"a":"é"}'.encode(), timestamp_ms=1, nonce="n"
    )
    assert a == b
    e = signer.headers("GET", "/api/ext/v1/wallet", timestamp_ms=1, nonce="n")
    assert e["X-API-SIGNATURE"] == reference(SECRET, "GET", "/api/ext/v1/wallet", "1", "n", b"")
    assert signer.headers("GET", "/x", None, timestamp_ms=1, nonce="n") == signer.headers(
        "GET", "/x", b"", timestamp_ms=1, nonce="n"
    )
    assert signer.headers(
        "GET", "/x", bytearray(b"q"), timestamp_ms=1, nonce="n"
    ) == signer.headers("GET", "/x", b"q", timestamp_ms=1, nonce="n")


def test_query_string_signing(core: ModuleType) -> None:
    path = "/api/ext/v1/events?league=nba&limit=5"
    with_q = core.RequestSigner("k", SECRET).headers("GET", path, timestamp_ms=7, nonce="n")
    bare = core.RequestSigner("k", SECRET, sign_query=False).headers(
        "GET", path, timestamp_ms=7, nonce="n"
    )
    assert with_q["X-API-SIGNATURE"] == reference(SECRET, "GET", path, "7", "n", b"")
    assert bare["X-API-SIGNATURE"] == reference(SECRET, "GET", "/api/ext/v1/events", "7", "n", b"")


def test_headers_many(core: ModuleType) -> None:
    signer = core.RequestSigner("k", SECRET)
    reqs: list[Sequence[Any]] = [("GET", f"/api/ext/v1/orders/{i}") for i in range(300)] + [
        ["POST", "/api/ext/v1/orders", b"{}"]
    ]
    out = signer.headers_many(reqs)
    assert len(out) == 301
    assert len({h["X-API-NONCE"] for h in out}) == 301
    for (method, path, *body), h in zip(reqs, out, strict=True):
        assert h["X-API-SIGNATURE"] == reference(
            SECRET, method, path, h["X-API-TIMESTAMP"], h["X-API-NONCE"], body[0] if body else b""
        )
    assert signer.headers_many(iter([])) == []
    with pytest.raises(SignatureInputError, match=r"requests\[1\]"):
        signer.headers_many([("GET", "/a"), ("GET",)])
    with pytest.raises(SignatureInputError, match="path"):
        signer.headers_many([("GET", "no-slash")])


requests_ = st.lists(
    st.tuples(
        st.sampled_from(["GET", "POST", "DELETE", "post"]),
        st.one_of(paths, st.just("/api/ext/v1/orders/raw"), st.just("/" + "p" * 600 + "?q=1")),
        st.binary(max_size=700),
    ),
    max_size=70,  # past two 32-request chunks, odd and even counts
)


@given(reqs=requests_, sign_query=st.booleans())
def test_headers_many_sign_each_request(
    core: ModuleType, reqs: list[tuple[str, str, bytes]], sign_query: bool
) -> None:
    """Requests are signed two by two in chunks: mixed lengths, lone last ones, long paths."""
    signer = core.RequestSigner("k", SECRET, sign_query=sign_query)
    out = signer.headers_many(reqs)
    assert len(out) == len(reqs)
    for (method, path, body), h in zip(reqs, out, strict=True):
        signed_path = path if sign_query else path.split("?")[0]
        assert h["X-API-SIGNATURE"] == reference(
            SECRET, method.upper(), signed_path, h["X-API-TIMESTAMP"], h["X-API-NONCE"], body
        )


def test_headers_many_holds_and_releases_its_inputs(core: ModuleType) -> None:
    """A bad request mid-chunk raises, and leaves no reference behind."""
    signer = core.RequestSigner("k", SECRET)
    body = bytes(range(200))
    path = "/api/ext/v1/" + "x" * 40
    before = sys.getrefcount(body), sys.getrefcount(path)
    reqs = [("POST", path, body)] * 40 + [("POST", "bad path", body)]
    with pytest.raises(SignatureInputError) as info:
        signer.headers_many(reqs)
    assert info.value.field == "path"
    del reqs, info
    out = signer.headers_many([["POST", path, body]] * 33)
    assert len(out) == 33
    del signer  # (it remembers the last path it checked)
    assert (sys.getrefcount(body), sys.getrefcount(path)) == before


def test_headers_many_stamps_when_signing(core: ModuleType) -> None:
    """A slow iterable gets timestamps no older than each of its requests."""
    signer = core.RequestSigner("k", SECRET)
    yielded: list[float] = []

    def slow() -> Iterator[tuple[str, str]]:
        for i in range(3):
            if i:
                time.sleep(0.03)
            yielded.append(time.time())
            yield ("GET", f"/a/{i}")

    out = signer.headers_many(slow())
    for t, h in zip(yielded, out, strict=True):
        assert int(h["X-API-TIMESTAMP"]) >= int(t * 1000) - 1


def test_nonces_unique_and_uniform(core: ModuleType) -> None:
    """20,000 nonces (many pool refills): all distinct, hex digits uniform (chi-square)."""
    signer = core.RequestSigner("k", SECRET)
    nonces = [h["X-API-NONCE"] for h in signer.headers_many([("GET", "/a")] * 20_000)]
    assert len(set(nonces)) == len(nonces)
    counts = Counter("".join(nonces))
    expected = 32 * len(nonces) / 16
    chi2 = sum((counts[d] - expected) ** 2 / expected for d in "0123456789abcdef")
    assert chi2 < 37.7  # 15 degrees of freedom: p = 0.001


def test_nonces_are_fresh_after_fork(core: ModuleType) -> None:

    signer = core.RequestSigner("k", SECRET)
    signer.headers("GET", "/warm")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.write(w, signer.headers("GET", "/x")["X-API-NONCE"].encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(r, 64).decode()
    assert child != signer.headers("GET", "/x")["X-API-NONCE"]


def test_secret_never_shown(core: ModuleType) -> None:
    signer = core.RequestSigner("key-9", SECRET)
    assert SECRET not in repr(signer)
    assert "key-9" in repr(signer)
    with pytest.raises(TypeError):
        pickle.dumps(signer)
    for bad in ("", b"", None, 5):
        with pytest.raises(SignatureInputError) as info:
            core.RequestSigner("k", bad)
        assert info.value.field == "api_secret"
        with pytest.raises(SignatureInputError):
            core.signature(bad, "GET", "/", 1, "n")


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("method", {"method": "GE T"}),
        ("method", {"method": ""}),
        ("method", {"method": None}),
        ("path", {"path": "api/ext/v1"}),
        ("path", {"path": "/a b"}),
        ("path", {"path": "/a\nb"}),
        ("path", {"path": "/é"}),
        ("path", {"path": b"/x"}),
        ("timestamp", {"timestamp": -1}),
        ("timestamp", {"timestamp": "12a"}),
        ("timestamp", {"timestamp": True}),
        ("timestamp", {"timestamp": 1.5}),
        ("nonce", {"nonce": ""}),
        ("nonce", {"nonce": "a\nb"}),
        ("nonce", {"nonce": 5}),
        ("body", {"body": 5}),
    ],
)
def test_bad_signing_input(core: ModuleType, field: str, kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {
        "method": "GET",
        "path": "/api",
        "timestamp": 1,
        "nonce": "n",
        "body": b"",
    }
    args.update(kwargs)
    with pytest.raises(SignatureInputError) as info:
        core.signature(SECRET, **args)
    assert info.value.field == field
    # a request that cannot have been signed never verifies
    assert core.verify_signature(SECRET, *args.values(), "0" * 64) is False
    signer = core.RequestSigner("k", SECRET)
    with pytest.raises(SignatureInputError) as info:
        signer.headers(
            args["method"],
            args["path"],
            args["body"],
            timestamp_ms=args["timestamp"],
            nonce=args["nonce"],
        )
    assert info.value.field == field


def test_verify_rejects_malformed_signatures(core: ModuleType) -> None:
    good = core.signature(SECRET, "GET", "/a", 1, "n")
    for sig in (None, 5, good.upper(), good[:-1], good + "0", "", "é" * 64):
        assert core.verify_signature(SECRET, "GET", "/a", 1, "n", b"", sig) is False
    assert core.verify_signature(SECRET, "GET", "/a", 1, "n", b"", good) is True


def test_sha256_hex(core: ModuleType) -> None:
    for n in (0, 1, 55, 56, 63, 64, 65, 300, 10_000):
        data = bytes(i % 251 for i in range(n))
        assert core.sha256_hex(data) == hashlib.sha256(data).hexdigest()


def test_forced_sha256_paths_agree() -> None:
    core_c = pytest.importorskip("clobkit.core._core_c")
    tried = []
    try:
        for path in ("portable", "sha-ni"):
            if not core_c.set_implementation(sha256=path):
                continue
            tried.append(path)
            assert core_c.implementation()["sha256"] == path
            for n in range(0, 400, 7):
                body = bytes(range(256)) * 2
                body = body[:n]
                assert core_c.sha256_hex(body) == hashlib.sha256(body).hexdigest()
                assert core_c.signature(
                    SECRET * (n % 9 + 1), "POST", "/" + "p" * n, n, "nonce", body
                ) == reference(SECRET * (n % 9 + 1), "POST", "/" + "p" * n, str(n), "nonce", body)
            # the two-at-a-time path: each body paired with a shorter and a longer one
            signer = core_c.RequestSigner("k", SECRET)
            reqs = [
                ("POST", "/" + "p" * n, bytes(i % 256 for i in range(m))) for m in range(0, 700, 61)
            ]
            for (method, path, body), h in zip(reqs, signer.headers_many(reqs), strict=True):
                assert h["X-API-SIGNATURE"] == reference(
                    SECRET, method, path, h["X-API-TIMESTAMP"], h["X-API-NONCE"], body
                )
    finally:
        core_c.set_implementation(sha256="auto")
    assert "portable" in tried


def test_threads_sharing_a_signer_sign_their_own_requests(core: ModuleType) -> None:
    # lower-case methods and str-subclass paths take the slow (Python) path of
    # validation, where another thread can run between the method's check and
    # the path's: a cache of the last ones on the signer was overwritten there
    signer = core.RequestSigner("key", "secret")
    failures: list[str] = []
    start = threading.Barrier(2)

    def work(method: str, base: str) -> None:
        start.wait()
        for round_ in range(150):
            batch = [(method, Text(f"{base}?n={round_}&i={i}")) for i in range(40)]
            for (m, path), headers in zip(batch, signer.headers_many(batch), strict=True):
                expected = core.signature(
                    "secret", m, path, headers["X-API-TIMESTAMP"], headers["X-API-NONCE"], b""
                )
                if headers["X-API-SIGNATURE"] != expected:
                    failures.append(f"{m} {path}")
                    return

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [
            threading.Thread(target=work, args=("get", "/api/ext/v1/a")),
            threading.Thread(target=work, args=("delete", "/api/ext/v1/b")),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(old)
    assert failures == []


@pytest.mark.parametrize("body", ["\ud800", "ok\udc80", "\udfff tail"])
def test_a_lone_surrogate_in_a_body_is_a_signature_input_error(core: ModuleType, body: str) -> None:
    signer = core.RequestSigner("key", "secret")
    calls: list[Callable[[], object]] = [
        lambda: core.signature("secret", "POST", "/x", 1, "n", body),
        lambda: signer.headers("POST", "/x", body),
        lambda: signer.headers_many([("POST", "/x", body)]),
    ]
    for call in calls:
        with pytest.raises(SignatureInputError, match="lone surrogate") as info:
            call()
        assert info.value.field == "body"
    # it cannot have been signed: it does not verify, it does not raise
    assert core.verify_signature("secret", "POST", "/x", 1, "n", body, "0" * 64) is False


def test_a_lone_surrogate_in_a_secret_is_refused_without_quoting_it(core: ModuleType) -> None:
    calls: list[Callable[[], object]] = [
        lambda: core.RequestSigner("key", "hunter\udc80two"),
        lambda: core.signature("hunter\udc80two", "GET", "/x", 1, "n"),
        lambda: core.verify_signature("hunter\udc80two", "GET", "/x", 1, "n", b"", "0" * 64),
    ]
    for call in calls:
        with pytest.raises(SignatureInputError) as info:
            call()
        assert info.value.field == "api_secret"
        assert "\udc80" not in str(info.value)
        assert "hunter" not in str(info.value)
