# The batch's hooks for benchmarks and tests: the GIL-held time of the last batch
# on its calling thread (off unless asked), and the rows its workers left to Python.

cdef long long _held_ns = 0
cdef long long _alone_ns = 0
cdef Py_ssize_t _missed = 0  # rows of the last batch the Python path took


def _missed_rows():
    """Rows of the last ``order_ids`` / ``sign_many`` batch whose block the workers left
    to the Python path (a value they do not take plainly, or an error): a test hook."""
    return _missed


# Off unless a benchmark asks: the thread's CPU clock is a system call (about a µs in
# a VM), six of them a batch: a good part of a few orders' call.
cdef bint _metered = False


cdef inline long long _clock() noexcept nogil:
    """The calling thread's CPU time (ns) while ``_gil_meter`` is on, else 0."""
    return ck_thread_ns() if _metered else 0


def _gil_meter(on):
    """Turn the clock of ``_gil_held_ns`` on or off (off by default); the previous state."""
    global _metered
    before = _metered
    _metered = bool(on)
    return before


def _gil_alone_ns():
    """The part of ``_gil_held_ns`` outside the rounds of the last ``order_ids`` /
    ``sign_many`` batch (its setup, the first round's objects taken, the last round's
    results made), which no worker overlaps at any thread count; 0 unless the meter is
    on. With the GIL-held time it bounds what more threads can give (benchmarks/native_pool.py)."""
    return _alone_ns


def _gil_held_ns():
    """CPU time (ns) the last ``order_ids`` / ``sign_many`` batch spent on its calling
    thread holding the GIL: everything but the workers' share it took with the GIL
    released; 0 unless ``_gil_meter(True)``. A benchmark hook
    (benchmarks/native_pool.py): unlike wall time it is not inflated when other
    processes take the cores."""
    return _held_ns
