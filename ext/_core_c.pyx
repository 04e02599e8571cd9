# cython: language_level=3, freethreading_compatible=False
"""Compiled twin of the core (``clobkit.core._core_c``).

Same names, signatures and exceptions as ``clobkit.core.pure``. The hot paths
(order ids, request signing, amounts of ordinary inputs) run in C; any input
the fast path does not recognise is handed to the pure twin, which either
computes it or raises the canonical error, so both twins agree on every input.

This file is its table of contents: the cimports and imports every part
shares, the shared constants, then each job in its own included file (one
extension module; setup.py lists them as its depends).
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.unicode cimport PyUnicode_GET_LENGTH
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memchr, memcmp, memcpy, memset

import os as _os

from clobkit.core import arrow_ids as _ids
from clobkit.core import columns as _col
from clobkit.core import amounts_pure as _a
from clobkit.core import parse as _p
from clobkit.core.spec import SALT_MAX
from clobkit.core.types import CORE_API
from clobkit.errors import OrderFieldError, SignatureInputError
from clobkit.core.types import Amounts
from clobkit.core.wallet import prepare_wallet

# The C declarations every part uses: extern structs and functions, inline C helpers
include "decls.pxi"

__all__ = list(CORE_API)

# Shared with the pure twin: constants and the canonical (slow-path) parsers.
cdef object UINT256_MAX = (1 << 256) - 1
cdef PyTypeObject *AMOUNTS = <PyTypeObject *>Amounts


cdef inline object _amounts(uint64_t maker, uint64_t taker):
    """An ``Amounts`` tuple, allocated directly (tuple.__new__ would iterate an argument tuple)."""
    cdef object t = <object>AMOUNTS.tp_alloc(AMOUNTS, 2)
    Py_DECREF(t)  # tp_alloc's reference now belongs to t
    cdef object m = maker, k = taker
    Py_INCREF(m)
    Py_INCREF(k)
    PyTuple_SET_ITEM(t, 0, m)
    PyTuple_SET_ITEM(t, 1, k)
    return t


cdef uint64_t POW10[20]
POW10[0] = 1
for _i in range(1, 20):
    POW10[_i] = POW10[_i - 1] * 10

keccak_impls = {"portable": 1, "avx2": 2, "avx512": 3}
sha256_impls = {"portable": 1, "sha-ni": 2}

# Self-check of the SIMD Keccak paths, set_implementation, implementation
include "selfcheck.pxi"
# keccak256, sha256_hex, append_column: bytes in, hex text out
include "bytes.pxi"
# OrderHasher: uint256 fields, one order's words, one id, a batch's arguments
include "order_ids.pxi"
# A batch's rounds under the GIL (the workers' side is ext/batch.c); parse_ids, sign_digests
include "batch.pxi"
# A batch's hooks: its calling thread's GIL-held CPU time (benchmarks), rows left to Python
include "meters.pxi"
# A list's objects taken for the workers under the GIL, a round at a time
include "refs.pxi"
# Arrow / numpy arguments of order_ids read from their buffers
include "columns.pxi"
# csv_columns: plain CSV blocks read into columns (clobkit order-ids' fast CSV path)
include "csvcols.pxi"
# limit_amounts, market_amounts, to_units: 64-bit fast paths
include "amounts.pxi"
# salts_from_bytes, new_salts, new_salt
include "salts.pxi"
# The pool the request nonces come from (fork-safe)
include "nonces.pxi"
# signature, verify_signature, RequestSigner
include "requests.pxi"

self_check()
_forced_keccak()
