"""A nesting-depth check run before JSON is decoded.

msgspec and the standard library's json bound their recursion by the
interpreter's recursion limit, which some libraries raise (eth-account sets
100,000): past a few thousand C frames the stack overflows and the process
dies. Input from the network or from files is checked here first.
"""

from __future__ import annotations

from itertools import accumulate, count
from operator import sub

__all__ = ["MAX_JSON_DEPTH", "json_too_deep"]

#: Deepest nesting of arrays and objects decoded from untrusted JSON.
MAX_JSON_DEPTH = 256
_KEEP = bytes(b for b in range(256) if b not in b'[]{}"')
#: passes that take out innermost pairs before the one linear pass (well-formed
#: documents are shallow: a few passes settle them, at C speed)
_PASSES = 8
_STEPS = bytes.maketrans(b"[]", b"\x02\x00")  # after k brackets: depth = their sum - k


def json_too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``body`` may nest arrays and objects deeper than ``limit``.

    Free when the body holds few brackets; otherwise string contents are cut
    out, innermost bracket pairs removed for a few passes (each takes the
    deepest nesting down by one), and what is left measured in one pass: the
    time is linear in the body's size whatever its shape. Malformed text may
    be judged too deep; it is not JSON anyway.
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    # escaped backslashes, then escaped quotes: every quote left delimits a string
    bare = body.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _KEEP)
    shape = b"".join(bare.split(b'"')[::2]).replace(b"{", b"[").replace(b"}", b"]")
    removed = 0
    while removed < _PASSES:
        shorter = shape.replace(b"[]", b"")
        if len(shorter) == len(shape):
            break
        removed += 1
        shape = shorter
    if not shape:
        return removed > limit
    # the depth after each bracket, one C-speed pass (a stray "]" ends a decoder first)
    deepest: int = max(map(sub, accumulate(shape.translate(_STEPS)), count(1)))
    return removed + deepest > limit
