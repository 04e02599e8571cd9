"""The Arrow compute kernels clobkit's file paths call, without importing ``pyarrow.compute``.

``import pyarrow.compute`` builds a Python wrapper, with its signature and
docstring, for each of several hundred kernels: about 50 ms of every
``clobkit order-ids`` start on CSV or Parquet, and pyarrow's own Array methods
(``cast``, ``take``, ``filter``, ``fill_null``, ``dictionary_encode``...)
import it on first use. Those wrappers only call ``call_function`` from
``pyarrow._compute`` (7 ms to import), as these do; a pyarrow without that
module gets the public ``pyarrow.compute.call_function``. Import this module
only where pyarrow is wanted: it imports pyarrow.
"""

from __future__ import annotations

from typing import Any

try:
    from pyarrow._compute import (
        CastOptions,
        MatchSubstringOptions,
        ScalarAggregateOptions,
        SetLookupOptions,
        TrimOptions,
        call_function,
    )
except ImportError:  # pragma: no cover - a pyarrow that moved its private module
    from pyarrow.compute import (
        CastOptions,
        MatchSubstringOptions,
        ScalarAggregateOptions,
        SetLookupOptions,
        TrimOptions,
        call_function,
    )

__all__ = [
    "all_",
    "any_",
    "cast",
    "decode",
    "encode",
    "equal",
    "fill_null",
    "filter_",
    "greater",
    "greater_equal",
    "if_else",
    "index_in",
    "is_decimal",
    "matches",
    "nonzero",
    "or_",
    "take",
    "trim",
    "unique",
]

# pyarrow.compute's defaults for any/all: nulls skipped, null (here False) below one value
_AGGREGATE = ScalarAggregateOptions(skip_nulls=True, min_count=1)


def cast(values: Any, typ: Any) -> Any:
    """``values.cast(typ)``: a safe cast (an overflow or a lossy value raises ArrowInvalid)."""
    return call_function("cast", [values], CastOptions.safe(typ))


def take(values: Any, indices: Any) -> Any:
    """``values.take(indices)``, bounds checked."""
    return call_function("take", [values, indices])


def filter_(values: Any, mask: Any) -> Any:
    """``values.filter(mask)`` for an array or a record batch; a null in ``mask`` drops."""
    return call_function("filter", [values, mask])


def fill_null(values: Any, fill: Any) -> Any:
    """``values.fill_null(fill)``: ``fill`` (a scalar of the same type) where a value is null."""
    return call_function("coalesce", [values, fill])


def encode(values: Any) -> Any:
    """``values.dictionary_encode()``."""
    return call_function("dictionary_encode", [values])


def decode(values: Any) -> Any:
    """``values.dictionary_decode()`` of a DictionaryArray: its dictionary taken at its indices."""
    return take(values.dictionary, values.indices)


def equal(a: Any, b: Any) -> Any:
    return call_function("equal", [a, b])


def greater(a: Any, b: Any) -> Any:
    return call_function("greater", [a, b])


def greater_equal(a: Any, b: Any) -> Any:
    return call_function("greater_equal", [a, b])


def or_(a: Any, b: Any) -> Any:
    return call_function("or", [a, b])


def if_else(cond: Any, a: Any, b: Any) -> Any:
    return call_function("if_else", [cond, a, b])


def any_(values: Any) -> bool:
    """Whether any value of a boolean array is true (nulls skipped; False if none is left)."""
    return bool(call_function("any", [values], _AGGREGATE).as_py())


def all_(values: Any) -> bool:
    """Whether every value of a boolean array is true (nulls skipped; False if none is left)."""
    return bool(call_function("all", [values], _AGGREGATE).as_py())


def nonzero(values: Any) -> Any:
    """The indices (uint64) of the true values of a boolean array."""
    return call_function("indices_nonzero", [values])


def is_decimal(values: Any) -> Any:
    """Whether each string is one or more ASCII decimal digits."""
    return call_function("ascii_is_decimal", [values])


def trim(values: Any, characters: str) -> Any:
    """Each string without leading and trailing ``characters``."""
    return call_function("utf8_trim", [values], TrimOptions(characters))


def matches(values: Any, pattern: str) -> Any:
    """Whether each value matches the RE2 ``pattern`` somewhere."""
    return call_function("match_substring_regex", [values], MatchSubstringOptions(pattern))


def unique(values: Any) -> Any:
    return call_function("unique", [values])


def index_in(values: Any, value_set: Any) -> Any:
    """Each value's index in ``value_set`` (int32), null where it is not there."""
    return call_function("index_in", [values], SetLookupOptions(value_set))
