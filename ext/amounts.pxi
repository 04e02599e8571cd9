# Amounts: ordinary inputs (plain decimals, ticks of the table) in 64-bit
# integers; everything else, errors included, through the pure twin.

cdef dict _TICKS = {"0.1": 1, "0.01": 2, "0.001": 3, "0.0001": 4}
cdef object _DEFAULT_TICK = "0.01"
cdef object _Decimal = __import__("decimal").Decimal


cdef double DPOW10[19]
for _i in range(19):
    DPOW10[_i] = <double>POW10[_i]


cdef inline bint _float_decimal(double x, int places, uint64_t *mant) noexcept:
    """x == m / 10**places exactly as its shortest repr reads, for small m.

    Division is correctly rounded, so m / 10**places == x means the decimal
    m / 10**places round-trips to x; below 2**52 no other decimal with as few
    places does, so it is the value of repr(x) (without calling repr).
    """
    cdef double scaled
    cdef uint64_t m
    if not (x > 0.0) or x * DPOW10[places] >= 4503599627370496.0:  # 2**52
        return False
    scaled = x * DPOW10[places]
    m = <uint64_t>(scaled + 0.5)
    if <double>m / DPOW10[places] != x:
        return False
    mant[0] = m
    return True


cdef inline bint _plain(object value, uint64_t *mant, int *frac, int places):
    """value = mant / 10**frac for a plain non-negative decimal with <= 18 digits.

    A float is read through its shortest repr: tried first at ``places``
    decimals (the grid it should sit on), else through repr itself.
    """
    cdef const char *s
    cdef Py_ssize_t n, i
    cdef uint64_t m = 0
    cdef int digits = 0, f = -1
    cdef char ch
    if type(value) is float:
        if _float_decimal(<double>value, places, mant):
            frac[0] = places
            return True
        value = repr(value)
    elif type(value) is int:
        if 0 <= value < 10**18:
            mant[0] = <uint64_t>value
            frac[0] = 0
            return True
        return False
    elif type(value) is _Decimal:
        value = str(value)
    if not _ascii_view(value, &s, &n) or n == 0 or n > 40:
        return False
    for i in range(n):
        ch = s[i]
        if ch == 46:  # '.'
            if f >= 0:
                return False
            f = 0
            continue
        if ch < 48 or ch > 57:
            return False
        if m == 0 and ch == 48:
            if f >= 0:
                f += 1
            continue
        digits += 1
        if digits > 18:
            return False
        m = m * 10 + <uint64_t>(ch - 48)
        if f >= 0:
            f += 1
    if n == 1 and f == 0:  # "."
        return False
    mant[0] = m
    frac[0] = f if f > 0 else 0
    return True


cdef inline int _tick(object tick_size):
    if tick_size is _DEFAULT_TICK:
        return 2
    if type(tick_size) is str:
        return _TICKS.get(tick_size, 0)
    return 0


cdef inline bint _price_ticks(uint64_t mant, int frac, int decimals, uint64_t *ticks):
    """Exact price in ticks when it is on the grid and within [tick, 1 - tick]."""
    cdef uint64_t p
    if frac <= decimals:
        if not ck_mul_ok(mant, POW10[decimals - frac], &p):
            return False
    else:
        if frac - decimals > 18 or mant % POW10[frac - decimals]:
            return False
        p = mant // POW10[frac - decimals]
    if p == 0 or p >= POW10[decimals]:
        return False
    ticks[0] = p
    return True


cdef inline bint _cents(uint64_t mant, int frac, uint64_t *cents):
    """value * 100 when it has at most 2 decimals, non-zero and small enough that units
    fit in 64 bits (else _amounts_py decides: it refuses more decimals)."""
    cdef uint64_t c
    if frac <= 2:
        if not ck_mul_ok(mant, POW10[2 - frac], &c):
            return False
    else:
        if frac - 2 > 19 or mant % POW10[frac - 2]:
            return False
        c = mant // POW10[frac - 2]
    if c == 0 or c > 1_000_000_000_000_000ULL // 10_000:
        return False
    cents[0] = c
    return True


def limit_amounts(side, price, size, tick_size="0.01", *, round_price=False):
    """Maker/taker amounts (6-decimal units) of a limit order of ``size`` shares at ``price``."""
    cdef int s, d = _tick(tick_size), pf, sf
    cdef uint64_t pm, sm, ticks, cents, shares, usdc
    if d and _plain(price, &pm, &pf, d) and _plain(size, &sm, &sf, 2) \
            and _price_ticks(pm, pf, d, &ticks) and _cents(sm, sf, &cents):
        s = _side(side, "side", -1)
        shares = cents * 10_000
        usdc = cents * ticks * POW10[4 - d]
        if s == 0:
            return _amounts(usdc, shares)
        return _amounts(shares, usdc)
    return _a.limit_amounts(side, price, size, tick_size, round_price=round_price)


def market_amounts(side, price, amount, tick_size="0.01", *, round_price=False):
    """Maker/taker amounts of a market order: ``amount`` is USDC for a BUY, shares for a SELL."""
    cdef int s, d = _tick(tick_size), pf, af
    cdef uint64_t pm, am, ticks, cents, maker, scaled, up
    if d and _plain(price, &pm, &pf, d) and _plain(amount, &am, &af, 2) \
            and _price_ticks(pm, pf, d, &ticks) and _cents(am, af, &cents):
        s = _side(side, "side", -1)
        maker = cents * 10_000
        if s == 1:
            return _amounts(maker, cents * ticks * POW10[4 - d])
        # shares = usdc / price rounded up at d + 6 then down at d + 2 decimals
        if ck_mul_ok(cents, POW10[2 * d + 4], &scaled):
            up = scaled // ticks + (1 if scaled % ticks else 0)
            return _amounts(maker, up // 10_000 * POW10[4 - d])
    return _a.market_amounts(side, price, amount, tick_size, round_price=round_price)


def to_units(value, field="value"):
    """Exact 6-decimal units of a non-negative USDC or share amount: "12.34" -> 12_340_000."""
    cdef uint64_t m, units
    cdef int f
    if _plain(value, &m, &f, 6) and f <= 6 and ck_mul_ok(m, POW10[6 - f], &units):
        return units
    return _a.to_units(value, field)
from_units = _a.from_units
market_price = _a.market_price
