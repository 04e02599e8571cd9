"""``clobkit sign`` and ``clobkit call``: one signed request, printed or sent."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from ..core.spec import API_PREFIX
from ..errors import ValidationError
from .base import Connection, Failed, Usage
from .common import EXIT_OK, Commands, add_connection, check_positive


def add_sign(sub: Commands) -> None:
    """``clobkit sign``."""
    p = sub.add_parser(
        "sign",
        help="print a request's signed headers (or a curl command)",
        description=(
            "Sign METHOD PATH (with its query string; /wallet means /api/ext/v1/wallet) and "
            "print the four X-API-* headers, or with --curl a ready curl command. The "
            "signature is valid only briefly (the server's clock-skew window)."
        ),
    )
    p.add_argument("method", metavar="METHOD", help="GET, POST or DELETE")
    p.add_argument("path", metavar="PATH", help="e.g. '/api/ext/v1/events?league=nba'")
    p.add_argument("--body", metavar="BODY", help="request body, @FILE or @- (stdin)")
    p.add_argument("--curl", action="store_true", help="print a curl command instead")
    p.add_argument(
        "--sign-bare-path", action="store_true", help="sign the path without its query string"
    )
    add_connection(p)
    p.set_defaults(handler=_cmd_sign)


def add_call(sub: Commands) -> None:
    """``clobkit call``."""
    p = sub.add_parser(
        "call",
        help="send a signed request and print the JSON envelope",
        description=(
            "Send METHOD PATH signed with your key and pretty-print the response envelope "
            "(exit 1 when it says success: false). /wallet means /api/ext/v1/wallet."
        ),
    )
    p.add_argument("method", metavar="METHOD", help="GET, POST or DELETE")
    p.add_argument("path", metavar="PATH", help="e.g. /wallet or '/events?league=nba'")
    p.add_argument("--json", metavar="BODY", help="JSON body, @FILE or @- (stdin)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="default 30")
    p.add_argument(
        "--sign-bare-path", action="store_true", help="sign the path without its query string"
    )
    add_connection(p)
    p.set_defaults(handler=_cmd_call)


def _api_path(path: str) -> str:
    """``/wallet`` -> ``/api/ext/v1/wallet``; a path under ``/api/`` is kept as given."""
    if not path.startswith("/"):
        path = "/" + path
    if path.startswith("/api/"):
        return path
    return API_PREFIX + path


def _read_body(value: str | None) -> bytes:
    """The body bytes: the text itself, ``@FILE`` or ``@-`` (stdin)."""
    if value is None:
        return b""
    if value.startswith("@"):
        name = value[1:]
        try:
            if name == "-":
                return sys.stdin.buffer.read()
            return Path(name).read_bytes()
        except OSError as exc:
            raise Usage(f"cannot read the body from {name}: {exc.strerror or exc}") from None
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:  # a byte of the argument that is no UTF-8
        raise Usage("the body is not UTF-8 text: pass such bytes with @FILE") from None


def _method(value: str) -> str:
    method = value.upper()
    if not method.isascii() or not method.isalpha():
        raise Usage(f"METHOD must be an HTTP method such as GET or POST (got {value!r})")
    return method


def _target(base_url: str | None, path: str) -> tuple[str, str]:
    """The URL and the PATH (with its query) exactly as they will be sent."""
    import httpx

    try:
        url = httpx.URL((base_url or "http://localhost").rstrip("/") + _api_path(path))
    except (httpx.InvalidURL, ValueError) as exc:
        raise Usage(f"not a valid URL or path: {exc}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise Usage(f"the base URL must be an absolute http(s) URL (got {base_url!r})")
    return str(url), url.raw_path.decode("ascii")


def _signed_headers(
    conn: Connection, method: str, path: str, body: bytes, sign_bare_path: bool
) -> dict[str, str]:
    from ..auth import RequestSigner

    assert conn.api_key is not None
    assert conn.api_secret is not None
    try:
        signer = RequestSigner(conn.api_key, conn.api_secret, sign_query=not sign_bare_path)
        headers = signer.headers(method, path, body)
    except ValidationError as exc:
        raise Usage(str(exc)) from None
    if body:
        headers["Content-Type"] = "application/json"
    return headers


def _cmd_sign(args: argparse.Namespace) -> int:
    conn = Connection.from_args(args)
    conn.require("api_key", "api_secret")
    if args.curl:
        conn.require("base_url")
    method = _method(args.method)
    body = _read_body(args.body)
    url, path = _target(conn.base_url, args.path)
    headers = _signed_headers(conn, method, path, body, args.sign_bare_path)
    if not args.curl:
        for name, value in headers.items():
            print(f"{name}: {value}")
        return EXIT_OK
    parts = ["curl", "-sS", "-X", method, shlex.quote(url)]
    parts += [f"-H {shlex.quote(f'{name}: {value}')}" for name, value in headers.items()]
    if args.body is not None and args.body.startswith("@") and args.body != "@-":
        parts.append("--data-binary " + shlex.quote(args.body))  # the file's exact bytes
    elif body:
        parts.append("--data-binary " + shlex.quote(body.decode("utf-8", "replace")))
    print(" \\\n  ".join([" ".join(parts[:5]), *parts[5:]]))
    return EXIT_OK


def _cmd_call(args: argparse.Namespace) -> int:
    import httpx

    check_positive(args, "timeout")
    conn = Connection.from_args(args)
    conn.require("base_url", "api_key", "api_secret")
    method = _method(args.method)
    body = _read_body(args.json)
    if body:
        try:
            json.loads(body)
        except ValueError as exc:
            raise Usage(f"--json is not valid JSON: {exc}") from None
    url, path = _target(conn.base_url, args.path)
    headers = _signed_headers(conn, method, path, body, args.sign_bare_path)
    try:
        with httpx.Client(timeout=args.timeout) as http:
            response = http.request(method, url, content=body, headers=headers)
    except httpx.HTTPError as exc:
        raise Failed(f"{method} {url}: {type(exc).__name__}: {exc}") from None
    try:
        payload = response.json()
    except ValueError:
        print(response.text)
        if response.is_success:
            return EXIT_OK
        raise Failed(f"HTTP {response.status_code} {response.reason_phrase}") from None
    utf8 = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "") == "utf8"
    print(json.dumps(payload, indent=2, ensure_ascii=not utf8))
    if isinstance(payload, dict) and payload.get("success") is False:
        code = payload.get("code")
        error = payload.get("error") or payload.get("message") or "request failed"
        label = f"{response.status_code} {code}" if code else str(response.status_code)
        detail = payload.get("detail")
        if detail and detail != error:  # the server's why: "signature mismatch"
            error = f"{error}: {detail}"
        raise Failed(f"{label}: {error}")
    if not response.is_success:
        raise Failed(f"HTTP {response.status_code} {response.reason_phrase}")
    return EXIT_OK
