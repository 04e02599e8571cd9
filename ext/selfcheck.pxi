# Self-check: every SIMD Keccak path against the portable one at import, the chosen
# paths (set_implementation, implementation) and CLOBKIT_KECCAK.

cdef list _distrusted = []  # SIMD Keccak paths that disagreed with the portable one


def self_check():
    """Known-answer check of every SIMD Keccak path against the portable one.

    Both order structs (V1, and V2/V3) are checked. Runs at import: a path that disagrees on any digest (a miscompiled or
    untested SIMD path on this CPU) is never used, so an order id is never
    wrong, only slower. Returns the paths distrusted (normally none).
    """
    cdef ck_order_ctx ctx
    cdef ck_order orders[19]
    cdef uint8_t want[19 * 32]
    cdef uint8_t got[19 * 32]
    cdef uint64_t x = 0x9E3779B97F4A7C15ULL
    cdef int i, j, impl
    cdef uint8_t *raw = <uint8_t *>&ctx
    for i in range(<int>sizeof(ck_order_ctx)):
        x ^= x << 13; x ^= x >> 7; x ^= x << 17
        raw[i] = <uint8_t>x
    raw = <uint8_t *>orders
    for i in range(<int>sizeof(orders)):
        x ^= x << 13; x ^= x >> 7; x ^= x << 17
        raw[i] = <uint8_t>x
    for i in range(19):  # edges in a few orders: all-zero and all-one words
        orders[i].side = i & 1
        orders[i].neg_risk = (i >> 1) & 1
        if i % 5 == 0:
            for j in range(4):
                orders[i].token_id.w[j] = 0
                orders[i].salt.w[j] = 0xFFFFFFFFFFFFFFFFULL
    previous = ck_keccak_impl()
    del _distrusted[:]
    for layout in (CK_LAYOUT_V1, CK_LAYOUT_V2):  # both order structs
        ctx.layout = layout
        ck_keccak_set_impl(1)
        ck_order_ids_flat(&ctx, orders, 19, want)
        for name, impl in (("avx2", 2), ("avx512", 3)):
            if name in _distrusted or ck_keccak_set_impl(impl) != 0:
                continue
            ck_order_ids_flat(&ctx, orders, 19, got)
            for i in range(1, 20):  # every batch length: exercises each tail
                ck_order_ids_flat(&ctx, orders + 19 - i, i, got + 32 * (19 - i))
                if memcmp(got, want, 19 * 32) != 0:
                    _distrusted.append(name)
                    break
    ck_keccak_set_impl(previous if keccak_names[previous] not in _distrusted else _best_keccak())
    return list(_distrusted)


keccak_names = {1: "portable", 2: "avx2", 3: "avx512"}


cdef int _best_keccak():
    for name, impl in (("avx512", 3), ("avx2", 2)):
        if name not in _distrusted and ck_keccak_set_impl(impl) == 0:
            return impl
    return 1


def set_implementation(*, keccak=None, sha256=None):
    """Force a hash path for tests and benchmarks ("auto" restores the best).

    Returns False when the CPU or the build lacks the path, or the import
    self-check distrusted it (nothing changes then).
    """
    ok = True
    if keccak is not None:
        if keccak == "auto":
            ck_keccak_set_impl(_best_keccak())
        elif keccak in _distrusted:
            ok = False
        else:
            ok = ck_keccak_set_impl(keccak_impls[keccak]) == 0
    if sha256 is not None:
        ok = ck_sha256_set_impl(0 if sha256 == "auto" else sha256_impls[sha256]) == 0 and ok
    return ok


def implementation():
    """The hash paths in use now, e.g. {"keccak": "avx2", "sha256": "sha-ni"}."""
    names_s = {v: k for k, v in sha256_impls.items()}
    return {"keccak": keccak_names[ck_keccak_impl()], "sha256": names_s[ck_sha256_impl()]}


def _forced_keccak():
    """``CLOBKIT_KECCAK`` (portable, avx2, avx512 or auto) forces a Keccak path from the
    start: to measure or test the AVX2 path on a CPU that would take AVX-512
    (docs/scale.md). A path the CPU or build lacks is refused with a warning."""
    name = _os.environ.get("CLOBKIT_KECCAK", "")
    if name in ("", "auto"):
        return
    if name not in keccak_impls or not set_implementation(keccak=name):
        import warnings

        warnings.warn(f"CLOBKIT_KECCAK={name!r}: not a Keccak path this CPU runs; "
                      f"using {implementation()['keccak']}", RuntimeWarning, stacklevel=2)
