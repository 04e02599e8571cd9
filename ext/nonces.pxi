# Nonce pool: request nonces from SHA-256 in counter mode, reseeded after a fork.

# Nonce bytes come from a pool: SHA-256 in counter mode under 32 fresh bytes
# from os.urandom per refill (see ck_expand_seed). A fork marks the pool stale
# so a child never repeats its parent's nonces. The GIL serialises access.
cdef enum:
    NONCE_POOL = 4096  # bytes: 256 nonces per seed
cdef uint8_t _pool[NONCE_POOL]
cdef Py_ssize_t _pool_pos = NONCE_POOL
ck_watch_fork()


cdef const uint8_t *_random16() except NULL:
    global _pool_pos, ck_nonces_stale
    cdef bytes seed
    if _pool_pos + 16 > NONCE_POOL or ck_nonces_stale:
        seed = _os.urandom(32)
        ck_nonces_stale = 0
        ck_expand_seed(<const uint8_t *>PyBytes_AS_STRING(seed), _pool, NONCE_POOL // 32)
        _pool_pos = 0
    _pool_pos += 16
    return _pool + _pool_pos - 16
