"""``order_ids(..., out="arrow")``: the ids as one pyarrow string array, shared by both twins.

``out="bytes"`` gives the same ids as one ``bytes`` of 66 ASCII characters an
id, back to back (no pyarrow needed): ``ids[66 * i : 66 * (i + 1)]`` is id
``i``. Like ``"arrow"`` it makes no Python object per id.


The compiled twin writes the 66-character ``"0x…"`` ids straight into one
data buffer (no Python object per id) and hands it here with its offsets; the
pure twin joins its strings into the same buffer. Either way the array is a
``pyarrow.string()`` array (``large_string()`` past 2**31 - 1 bytes of ids,
which int32 offsets cannot address), equal to ``pa.array(ids, type)``.
pyarrow is imported only when ``out="arrow"`` is asked for.
"""

from __future__ import annotations

from ..errors import MissingExtra, OrderFieldError

TYPE_CHECKING = False  # the compiled twin imports this module: typing stays unloaded
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ID_CHARS", "INT32_IDS", "OUTS", "id_array", "offsets", "parse_out", "pyarrow"]

ID_CHARS = 66  # "0x" + 64 hex digits
INT32_IDS = (2**31 - 1) // ID_CHARS  # the most ids a string array (int32 offsets) holds
OUTS = ("list", "arrow", "bytes")


def parse_out(out: object) -> str:
    """``out`` checked: ``"list"`` (a list of str), ``"arrow"`` (a pyarrow string array) or
    ``"bytes"`` (the ids back to back)."""
    if type(out) is str and out in OUTS:
        return out
    raise OrderFieldError("out", out, 'must be "list", "arrow" or "bytes"')


def pyarrow() -> Any:
    """The pyarrow module, or ``MissingExtra`` naming the extra."""
    try:
        import pyarrow as pa
    except ImportError:
        from .extras import install_hint

        hint = install_hint("data")
        raise MissingExtra(f'order_ids(out="arrow") needs pyarrow: {hint}') from None
    return pa


def offsets(n: int) -> bytes:
    """The offsets buffer of ``n`` ids (int32, or int64 past ``INT32_IDS``), native order."""
    from array import array

    return array("i" if n <= INT32_IDS else "q", range(0, ID_CHARS * (n + 1), ID_CHARS)).tobytes()


def id_array(pa: Any, data: Any, offs: Any, n: int) -> Any:
    """The string array of ``n`` ids laid out back to back in ``data`` (``n * 66`` bytes)."""
    typ = pa.string() if n <= INT32_IDS else pa.large_string()
    bufs = [b if isinstance(b, pa.Buffer) else pa.py_buffer(b) for b in (offs, data)]
    return pa.Array.from_buffers(typ, n, [None, *bufs])
