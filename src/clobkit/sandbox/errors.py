"""The sandbox's two refusals: ``Rejected``, what its engine and auth raise to refuse a
request, and ``ConfigError``, what every check of a configuration raises.

``Rejected`` carries exactly what the failure envelope needs: the HTTP status, the
``error`` string of the API text's error table, the optional ``code`` and an
optional human ``detail`` (an extra envelope field saying what was wrong).
``ConfigError`` lives here rather than in ``config`` so that the parts ``config``
assembles (``faults``, ``walk``) raise it without importing ``config`` back.
"""

from __future__ import annotations

from ..core.spec import ERROR_BODY, ERROR_PARAMS, RISK_CODE
from ..errors import ClobkitError

__all__ = [
    "INVALID_BODY",
    "INVALID_PARAMS",
    "RISK_CODE",
    "ConfigError",
    "Rejected",
]

INVALID_BODY = ERROR_BODY  # the names the sandbox used before _spec held the table
INVALID_PARAMS = ERROR_PARAMS


class ConfigError(ClobkitError, ValueError):
    """A sandbox configuration value that cannot be used (a ``ClobkitError``, as every
    refusal of bad input is, and a ``ValueError`` as before)."""


class Rejected(Exception):
    """A refused request: ``status``, ``error``, optional ``code``, ``detail``, ``headers``."""

    def __init__(
        self,
        status: int,
        error: str,
        *,
        code: str | None = None,
        detail: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.status = status
        self.error = error
        self.code = code
        self.detail = detail
        self.headers = headers or {}
        super().__init__(f"{status} {code or ''} {error}: {detail or ''}".replace("  ", " "))

    def body(self) -> dict[str, object]:
        """The failure envelope."""
        out: dict[str, object] = {"success": False, "error": self.error}
        if self.code is not None:
            out["code"] = self.code
        if self.detail is not None:
            out["detail"] = self.detail
        return out


def bad_body(detail: str, code: str | None = None) -> Rejected:
    """400 ``invalid request body``."""
    return Rejected(400, INVALID_BODY, code=code, detail=detail)


def bad_params(detail: str) -> Rejected:
    """400 ``invalid request parameters`` (query string of a GET)."""
    return Rejected(400, INVALID_PARAMS, detail=detail)


def risk(detail: str) -> Rejected:
    """500 ``ORDER_FAILED_PLACE_BET``."""
    return Rejected(500, "failed to place bet: " + detail, code=RISK_CODE, detail=detail)
