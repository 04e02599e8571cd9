"""What every sandbox route shares: the JSON envelope out, bodies and query parameters in.

Answers are encoded with Decimals as JSON numbers; bodies decode with floats
as ``Decimal``. A bad query parameter raises ``Rejected`` 400 ``invalid
request parameters``, a bad body 400 ``invalid request body``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import msgspec
from starlette.responses import Response
from starlette.types import Scope

from ..core.jsondepth import MAX_JSON_DEPTH, json_too_deep
from ..core.spec import API_PREFIX, ERROR_INTERNAL
from .errors import Rejected, bad_body, bad_params

__all__ = [
    "PREFIX",
    "client_ip",
    "decode_body",
    "decode_json",
    "encode",
    "failure",
    "header_map",
    "injected_500",
    "json_response",
    "q_bool",
    "q_choice",
    "q_int",
    "q_text",
    "query_text",
    "raw_path",
]

PREFIX = API_PREFIX
log = logging.getLogger("clobkit.sandbox")
_ENCODER = msgspec.json.Encoder(decimal_format="number")
_DECODER = msgspec.json.Decoder(float_hook=Decimal)


def encode(payload: object) -> bytes:
    return _ENCODER.encode(payload)


def json_response(
    payload: object, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(
        encode(payload),
        status_code=status,
        headers=dict(headers or {}),
        media_type="application/json",
    )


def injected_500() -> Response:
    return json_response({"success": False, "error": f"{ERROR_INTERNAL} (injected fault)"}, 500)


def crash_answer(method: str, path: str, exc: BaseException) -> Response:
    """What escaped a route: logged with its traceback, answered 500 in the envelope."""
    log.error("a route failed on %s %s", method, path, exc_info=exc)
    return json_response({"success": False, "error": ERROR_INTERNAL}, 500)


def failure(rejected: Rejected) -> Response:
    return json_response(rejected.body(), rejected.status, rejected.headers)


def raw_path(scope: Scope) -> str:
    raw = scope.get("raw_path")
    if isinstance(raw, bytes) and raw:
        return raw.decode("latin-1").partition("?")[0]
    return str(scope.get("path", ""))


def query_text(scope: Scope) -> str:
    qs = scope.get("query_string", b"")
    return qs.decode("latin-1") if isinstance(qs, bytes) else ""


def header_map(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name; the first of a repeated name wins
    (as ``starlette.datastructures.Headers.get``), built in one pass."""
    out: dict[str, str] = {}
    for name, value in reversed(scope.get("headers", [])):
        out[name.decode("latin-1")] = value.decode("latin-1")
    return out


def client_ip(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


# -- query parameters ---------------------------------------------------------


def q_int(
    params: Mapping[str, str], name: str, default: int, low: int, high: int | None = None
) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    text = raw.strip()
    if not (text.isascii() and text.removeprefix("-").isdigit()) or len(text) > 12:
        raise bad_params(f"{name} must be an integer")
    value = int(text)
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise bad_params(f"{name} must be {bound}")
    return value


def q_bool(params: Mapping[str, str], name: str) -> bool | None:
    raw = params.get(name)
    if raw is None:
        return None
    value = raw.strip().lower()
    if value in ("true", "1"):
        return True
    if value in ("false", "0"):
        return False
    raise bad_params(f"{name} must be true or false")


def q_choice(params: Mapping[str, str], name: str, allowed: tuple[str, ...]) -> str | None:
    raw = params.get(name)
    if raw is None:
        return None
    if raw not in allowed:
        raise bad_params(f"{name} must be one of {', '.join(allowed)}")
    return raw


def q_text(params: Mapping[str, str], name: str) -> str | None:
    raw = params.get(name)
    if raw is None:
        return None
    if not raw.strip():
        raise bad_params(f"{name} must not be empty")
    return raw.strip()


def decode_json(raw: bytes | str) -> Any:
    """JSON with floats as ``Decimal``; ``ValueError`` naming the fault (deep nesting included).

    The depth is checked before decoding: the decoder is bounded only by the
    interpreter's recursion limit, which a library may raise (eth-account sets
    100,000), and past a few thousand C frames the process would die.
    """
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if json_too_deep(data):
        raise ValueError(f"malformed JSON: nested more than {MAX_JSON_DEPTH} deep")
    try:
        return _DECODER.decode(raw)
    except msgspec.DecodeError as exc:
        raise ValueError(f"malformed JSON: {exc}") from None
    except RecursionError:  # msgspec's own depth guard, not a stack overflow
        raise ValueError("malformed JSON: nested too deeply") from None


def decode_body(body: bytes) -> Any:
    if not body.strip():
        raise bad_body("the body must be a JSON object")
    try:
        data = decode_json(body)
    except ValueError as exc:
        raise bad_body(str(exc)) from None
    if not isinstance(data, dict):
        raise bad_body("the body must be a JSON object")
    return data
