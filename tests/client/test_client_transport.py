"""Each transport's table of its library's exceptions (``_session.FAILURES`` for aiohttp,
``_transport.FAILURES`` for httpcore): every exception class the library exports is
named, nothing else is, and each becomes the ``clobkit.errors`` class of its failure."""

from __future__ import annotations

import asyncio
from types import ModuleType

import aiohttp
import httpcore
import pytest

from clobkit import errors
from clobkit.client import _session, _transport
from clobkit.client._wire import Failure, Origin, Outgoing, failure_error, lookup_failure

OUTGOING = Outgoing(
    "GET",
    Origin("http", "127.0.0.1", 9, "127.0.0.1:9"),
    "/api/ext/v1/orders/o1?page=2&token=secret",
    [("Host", "127.0.0.1:9")],
    b"",
)


def exported(library: ModuleType) -> set[type[BaseException]]:
    """The exception classes a library exports (``__all__``), warnings left out."""
    found = {getattr(library, name) for name in library.__all__}
    return {
        cls
        for cls in found
        if isinstance(cls, type) and issubclass(cls, BaseException) and not issubclass(cls, Warning)
    }


@pytest.mark.parametrize(
    ("library", "table", "beyond"),
    [
        (aiohttp, _session.FAILURES, {asyncio.TimeoutError, OSError}),
        (httpcore, _transport.FAILURES, set()),
    ],
    ids=["aiohttp", "httpcore"],
)
def test_the_table_names_every_exception_the_library_exports(
    library: ModuleType, table: dict[type[BaseException], Failure], beyond: set[type]
) -> None:
    classes = exported(library)
    assert len(classes) >= 14  # the library's exceptions were found at all
    assert classes - set(table) == set()  # each one decided on, none by accident
    assert set(table) - classes == beyond  # and nothing private, nothing else


@pytest.mark.parametrize(
    "table", [_session.FAILURES, _transport.FAILURES], ids=["aiohttp", "httpcore"]
)
def test_each_failure_is_the_clobkit_error_of_its_kind(
    table: dict[type[BaseException], Failure],
) -> None:
    for cls, kind in table.items():
        error = failure_error(kind, OUTGOING, "the library's words", 2.5)
        if kind is Failure.TIMEOUT:
            assert isinstance(error, errors.TimeoutError), cls
            assert str(error).endswith("no complete answer within 2.5 s")
        else:
            assert type(error) is errors.TransportError, cls
            assert f": {kind.value} (the library's words)" in str(error)
        assert "secret" not in str(error)  # the query is never named
        assert str(error).startswith("GET http://127.0.0.1:9/api/ext/v1/orders/o1:")


def test_the_most_specific_class_wins() -> None:
    assert lookup_failure(_session.FAILURES, aiohttp.ServerDisconnectedError()) is (
        Failure.DISCONNECTED
    )
    assert lookup_failure(_session.FAILURES, aiohttp.ServerTimeoutError()) is Failure.TIMEOUT
    assert lookup_failure(_transport.FAILURES, httpcore.PoolTimeout()) is Failure.TIMEOUT
    assert lookup_failure(_transport.FAILURES, httpcore.ConnectError()) is Failure.CONNECT
    assert (
        lookup_failure(
            _session.FAILURES,
            aiohttp.ClientConnectorCertificateError(
                None,  # type: ignore[arg-type]
                OSError(),
            ),
        )
        is Failure.TLS
    )  # not its base ClientConnectorError's CONNECT
    assert lookup_failure(_transport.FAILURES, ValueError()) is None


def test_a_drop_aiohttp_would_have_resent_keeps_its_kind() -> None:
    """``_send_once`` turns aiohttp's own resend off by raising ``NotResent``: its
    cause, aiohttp's exception, names the failure."""
    try:
        raise _session.NotResent("dropped") from aiohttp.ServerDisconnectedError()
    except _session.NotResent as exc:
        error = _session._failure(exc, OUTGOING, 1.0)
    assert "server disconnected without sending an answer" in str(error)
    assert isinstance(error.__cause__, aiohttp.ServerDisconnectedError)
