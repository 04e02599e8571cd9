"""Columnar batch arguments of ``OrderHasher.order_ids``: pyarrow and numpy arrays.

Both twins wrap each columnar argument in a ``Column`` first. The pure twin
reads it through ``Column.values()`` (``to_pylist``: the reference); the
compiled twin reads the Arrow buffers (or the numpy buffer) straight into
its C order structs and only falls back to ``Column[i]`` (the same element
conversion) for a value its fast path does not take, so both twins see the
same Python value for every element and word every error alike.

pyarrow and numpy are never imported here: a value is columnar only if its
library is already loaded (it was made by it).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..errors import OrderFieldError

TYPE_CHECKING = False  # typing stays off ``import clobkit``'s path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, overload

    _Base = Sequence[Any]
else:
    _Base = Sequence

__all__ = ["FLAG", "NULL", "SIDE", "TOKEN", "UINT", "WORD", "Column", "is_columnar", "numpy_rows"]

# what a column holds (selects the accepted types and the element conversion)
UINT, TOKEN, SIDE, FLAG, WORD = range(5)
# how its elements are stored (read by the compiled twin); F_DICT: indices into a dictionary
F_INT, F_BOOL, F_BOOL8, F_DEC, F_STR, F_FSB32, F_LIST, F_DICT = range(8)

_WANTS = {
    UINT: "integers (int/uint or decimal with scale 0) or decimal digit strings",
    TOKEN: "integers, decimal digit strings or 32-byte fixed-size binary",
    SIDE: 'integers (0/1) or strings ("BUY"/"SELL")',
    FLAG: "bools or integers (0/1)",
    WORD: "32-byte fixed-size binary or 0x-prefixed hex strings",
}


class _Null:
    """A null element of an Arrow column: refused in every field."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "null"


NULL: Any = _Null()


def null_error(field: str) -> OrderFieldError:
    """The error of a null element (``field`` names it: ``salts[12]``)."""
    return OrderFieldError(field, None, "must not be null")


def is_columnar(value: object) -> bool:
    """A pyarrow Array/ChunkedArray or a numpy array (only if that library is loaded)."""
    pa = sys.modules.get("pyarrow")
    if pa is not None and isinstance(value, (pa.Array, pa.ChunkedArray)):
        return True
    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, np.ndarray)


def numpy_rows(value: Any) -> list[Any]:
    """A numpy array's elements as Python values, an ``S32`` array's as their whole 32 bytes
    (``tolist`` drops an element's trailing NUL bytes, which in a bytes32 are data)."""
    if value.dtype.kind == "S" and value.dtype.itemsize == 32:
        raw = sys.modules["numpy"].ascontiguousarray(value).tobytes()
        return [raw[i : i + 32] for i in range(0, len(raw), 32)]
    rows: list[Any] = value.tolist()
    return rows


def _refuse(name: str, what: str, kind: int) -> OrderFieldError:
    return OrderFieldError(name, f"<{what} column>", f"must be a column of {_WANTS[kind]}")


def _arrow_format(pa: Any, typ: Any, name: str, kind: int) -> tuple[int, int, bool]:
    """(storage format, element width in bytes, signed) of an Arrow type, or the refusal."""
    t = pa.types
    if t.is_integer(typ) and kind != WORD:
        return F_INT, typ.bit_width // 8, t.is_signed_integer(typ)
    if t.is_boolean(typ) and kind == FLAG:  # a side is never a bool (parse_side)
        return F_BOOL, 0, False
    if (t.is_decimal128(typ) or t.is_decimal256(typ)) and kind in (UINT, TOKEN):
        if typ.scale != 0:
            raise OrderFieldError(name, f"<{typ} column>", "must be a decimal column with scale 0")
        return F_DEC, typ.bit_width // 8, True
    if t.is_string(typ) and kind != FLAG:
        return F_STR, 4, False
    if t.is_large_string(typ) and kind != FLAG:
        return F_STR, 8, False
    if t.is_fixed_size_binary(typ) and typ.byte_width == 32 and kind in (TOKEN, WORD):
        return F_FSB32, 32, False
    raise _refuse(name, str(typ), kind)


class Column(_Base):
    """One columnar argument: its storage, and each element as the list path would take it.

    ``name`` is the keyword (``salts``), ``kind`` one of UINT, TOKEN, SIDE,
    FLAG, WORD. A type the field cannot hold is refused here, before any row.
    """

    def __init__(self, value: Any, name: str, kind: int) -> None:
        self.name = name
        self.kind = kind
        self.chunks: list[Any] = []  # pyarrow arrays, empty ones left out
        self.starts: list[int] = []  # first row of each chunk
        self.array: Any = None  # numpy: a 1-D, contiguous, native-endian int/bool array
        self.items: list[Any] | None = None  # numpy object/str arrays: the list path
        self.width = 0
        self.signed = False
        self.nulls = False  # any null element (a null index or a null dictionary value)
        self.index_width = 0  # dictionary columns: bytes per index, and whether signed
        self.index_signed = False
        pa = sys.modules.get("pyarrow")
        if pa is not None and isinstance(value, (pa.Array, pa.ChunkedArray)):
            chunks = value.chunks if isinstance(value, pa.ChunkedArray) else [value]
            typ = value.type
            if pa.types.is_dictionary(typ):
                from .arrow_compute import decode  # not pyarrow.compute: 50 ms to import

                # Parquet's dictionary pages, pandas categoricals: the compiled twin
                # parses each distinct value once. A dictionary larger than half its
                # chunk (a slice of a big one) is decoded: cheaper than parsing it all.
                chunks = [decode(c) if 2 * len(c.dictionary) > len(c) else c for c in chunks]
                self.index_width = typ.index_type.bit_width // 8
                self.index_signed = pa.types.is_signed_integer(typ.index_type)
                typ = typ.value_type
            self.format, self.width, self.signed = _arrow_format(pa, typ, name, kind)
            row = 0
            for c in chunks:
                if len(c):
                    self.chunks.append(c)
                    self.starts.append(row)
                    row += len(c)
                    dictionary = getattr(c, "dictionary", None)  # DictionaryArray
                    self.nulls = (
                        self.nulls
                        or bool(c.null_count)
                        or bool(dictionary is not None and dictionary.null_count)
                    )
            self.n = row
            return
        np = sys.modules["numpy"]
        if value.ndim != 1:
            raise OrderFieldError(name, f"<{value.ndim}-D array>", "must be one-dimensional")
        self.n = len(value)
        k = value.dtype.kind
        if (k in "iu" and kind != WORD) or (k == "b" and kind == FLAG):
            arr = np.ascontiguousarray(value)
            if not arr.dtype.isnative:
                arr = arr.astype(arr.dtype.newbyteorder("="))
            self.array = arr
            self.format = F_BOOL8 if k == "b" else F_INT
            self.width, self.signed = arr.dtype.itemsize, k == "i"
        elif k in "OUS":  # Python objects or strings: exactly the list path
            self.format = F_LIST
            self.items = numpy_rows(value)
        else:
            raise _refuse(name, f"numpy {value.dtype}", kind)

    def __len__(self) -> int:
        return self.n

    def _convert(self) -> Callable[[Any], Any] | None:
        """The element conversion from ``as_py`` values to the list path's (None: identity)."""
        if self.format == F_DEC:
            return int  # scale 0: integral
        if self.format == F_FSB32 and self.kind == TOKEN:
            return _big_endian
        return None

    if TYPE_CHECKING:

        @overload
        def __getitem__(self, i: int) -> Any: ...
        @overload
        def __getitem__(self, i: slice) -> Sequence[Any]: ...

    def __getitem__(self, i: int | slice) -> Any:
        """Element ``i`` as the list path takes it (``NULL`` for a null)."""
        if isinstance(i, slice):
            return self.values()[i]
        if self.items is not None:
            return self.items[i]
        if self.array is not None:
            value = self.array[i].item()
        else:
            from bisect import bisect_right  # a fallback path: kept off the import

            k = bisect_right(self.starts, i) - 1
            value = self.chunks[k][i - self.starts[k]].as_py()
            if value is None:
                return NULL
        convert = self._convert()
        return value if convert is None else convert(value)

    def values(self) -> list[Any]:
        """Every element as the list path takes it (``NULL`` for a null): the reference."""
        if self.items is not None:
            return self.items
        if self.array is not None:
            out: list[Any] = self.array.tolist()
        else:
            out = []
            for c in self.chunks:
                out.extend(c.to_pylist())
        convert = self._convert()
        if convert is not None:
            out = [None if v is None else convert(v) for v in out]
        if self.nulls:
            out = [NULL if v is None else v for v in out]
        return out


def _big_endian(raw: bytes) -> int:
    return int.from_bytes(raw, "big")


def nullable(parse: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """``parse`` that refuses ``NULL`` (the pure twin's per-element parser of a column)."""

    def one(value: Any, field: str) -> Any:
        if value is NULL:
            raise null_error(field)
        return parse(value, field)

    return one
