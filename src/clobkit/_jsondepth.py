"""A nesting-depth check run before JSON is decoded.

msgspec and the standard library's json bound their recursion by the
interpreter's recursion limit, which some libraries raise (eth-account sets
100,000): past a few thousand C frames the stack overflows and the process
dies. Input from the network or from files is checked here first.
"""

from __future__ import annotations

__all__ = ["MAX_JSON_DEPTH", "json_too_deep"]

#: Deepest nesting of arrays and objects decoded from untrusted JSON.
MAX_JSON_DEPTH = 256
_KEEP = bytes(b for b in range(256) if b not in b'[]{}"')


def json_too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``body`` may nest arrays and objects deeper than ``limit``.

    Free when the body holds few brackets; otherwise string contents are cut
    out and innermost bracket pairs removed one level per pass (at most
    ``limit`` passes, each a C-speed scan). Malformed text may be judged too
    deep; it is not JSON anyway.
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    # escaped backslashes, then escaped quotes: every quote left delimits a string
    bare = body.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _KEEP)
    shape = b"".join(bare.split(b'"')[::2]).replace(b"{", b"[").replace(b"}", b"]")
    for _ in range(limit):
        shorter = shape.replace(b"[]", b"")
        if len(shorter) == len(shape):
            return shape.count(b"[") > limit  # what is left never closes
        shape = shorter
    return b"[]" in shape
