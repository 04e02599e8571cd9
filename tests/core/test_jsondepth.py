"""``core.jsondepth``: the nesting bound of a JSON document, checked before any decoder
recurses (exact on JSON, held under a raised recursion limit)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


# strings full of what the check must not count: brackets, quotes, backslashes
_TEXT = st.text(alphabet='[]{}"\\a', max_size=4)
_JSON = st.recursive(
    st.none() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=60,
)


@pytest.mark.parametrize(
    ("body", "deep"),
    [
        (b"[" * 256 + b"]" * 256, False),
        (b"[" * 257 + b"]" * 257, True),
        (b"{" + b'"a":{' * 300 + b"}" * 301, True),
        (b"[" * 100_000, True),  # never closed
        (b'["' + b"[" * 5000 + b'"]', False),  # brackets inside a string
        (b"[" + b'"]",[' * 3000 + b"]" * 3000, True),  # closers inside strings
        (b"[" + b'"\\n",[' * 3000 + b"]" * 3000, True),  # an escape before a quote
        (b"[" + b'"\\\\",[' * 3000 + b"]" * 3000, True),  # an escaped backslash
        (b'["' + b'\\"[' * 600 + b'"]', False),  # escaped quotes keep the string open
    ],
)
def test_json_depth_check(body: bytes, deep: bool) -> None:
    from clobkit.core.jsondepth import json_too_deep

    assert json_too_deep(body) is deep


@given(_JSON, st.integers(0, 14), st.integers(0, 40))
def test_json_depth_check_is_exact_on_json(value: object, limit: int, wrap: int) -> None:
    # wrapped in up to 40 more arrays: past the check's few passes, into its linear one
    import json

    from clobkit.core.jsondepth import json_too_deep

    body = ("[" * wrap + json.dumps(value) + "]" * wrap).encode()
    assert json_too_deep(body, limit) is (wrap + _depth(value) > limit)


@pytest.mark.slow
def test_nesting_is_refused_even_under_a_raised_recursion_limit() -> None:
    # eth-account raises the limit to 100,000, where msgspec itself would
    # recurse until the C stack overflows: a crash is contained in a subprocess
    import subprocess
    import sys

    code = (
        "import sys, httpx\n"
        "sys.setrecursionlimit(100_000)\n"
        "from clobkit.client._config import ClientConfig\n"
        "from clobkit.client._core import ClientCore\n"
        "from clobkit.client._decode import ALL_SHAPES\n"
        "from clobkit.client._ops import Call\n"
        "from clobkit.client._stream import parse_message\n"
        "from clobkit.errors import ServerError\n"
        "core = ClientCore(*ClientConfig.resolve('http://x.test', 'k', 's'))\n"
        "deep = b'[' * 200_000 + b']' * 200_000\n"
        "request = httpx.Request('GET', 'http://x.test/')\n"
        "for shape in [*ALL_SHAPES, None]:\n"
        "    call = Call('GET', '/x', None, b'', shape, 1)\n"
        "    try:\n"
        "        core.parse(call, httpx.Response(200, content=deep, request=request))\n"
        "    except ServerError:\n"
        "        pass\n"
        "assert parse_message(deep).type == 'invalid'\n"
        "print('refused')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "refused"
