"""Small Arrow arrays and scalars from Python values, built from their buffers.

``pa.array`` and ``pa.scalar`` first ask whether the value is a pandas
object, which imports pandas whenever it is installed: about 0.4 s, a fifth
of a whole ``clobkit order-ids`` run on a million orders. The few values
``clobkit order-ids`` builds (offsets, mapped sides, bounds, ids) never are,
so they are laid out here directly. No nulls.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

__all__ = ["scalar", "values"]

_INT_CODES = {(8, True): "b", (8, False): "B", (16, True): "h", (16, False): "H"}
_INT_CODES |= {(32, True): "i", (32, False): "I", (64, True): "q", (64, False): "Q"}


def values(pa: Any, items: Sequence[Any], typ: Any) -> Any:
    """``pa.array(items, typ)`` for ints, bools or strs (no nulls), without the pandas probe."""
    n, t = len(items), pa.types
    if t.is_string(typ) or t.is_large_string(typ) or t.is_binary(typ) or t.is_large_binary(typ):
        data = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in items]
        ends = [0]
        for d in data:
            ends.append(ends[-1] + len(d))
        code = "q" if t.is_large_string(typ) or t.is_large_binary(typ) else "i"
        offsets = pa.py_buffer(array(code, ends).tobytes())
        return pa.Array.from_buffers(typ, n, [None, offsets, pa.py_buffer(b"".join(data))])
    if t.is_boolean(typ):
        bits = bytearray((n + 7) // 8)
        for i, v in enumerate(items):
            if v:
                bits[i >> 3] |= 1 << (i & 7)
        return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(bytes(bits))])
    code = _INT_CODES[(typ.bit_width, t.is_signed_integer(typ))]
    return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(array(code, items).tobytes())])


def scalar(pa: Any, value: Any, typ: Any) -> Any:
    """``pa.scalar(value, typ)`` without the pandas probe (see ``values``)."""
    return values(pa, [value], typ)[0]
