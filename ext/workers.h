/* A tiny persistent pool of native threads for the batch order-id hashing.
 *
 * Native threads never need the GIL, so they can start hashing a chunk while
 * the Python thread still holds the GIL to parse the next one (Python pool
 * threads would wait for the GIL to even begin). One job at a time: a caller
 * that finds the pool busy (another Python thread is using it) runs alone.
 * Helpers idle for a second exit, so the pool shrinks back after a burst.
 */
#ifndef CLOBKIT_WORKERS_H
#define CLOBKIT_WORKERS_H

#include <stddef.h>
#include <stdint.h>

#include "keccak.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A chunk of parsed orders; every thread grabs the next ``block`` orders
 * until none is left, so faster threads simply take more blocks. */
typedef struct {
    const ck_order_ctx *ctx;
    const ck_order *orders;
    uint8_t *out; /* 32 bytes per order */
    size_t n;
    size_t block;
    size_t next; /* shared counter, advanced atomically */
} ck_job;

/* Hash blocks of the job until none is left (any thread, no GIL). */
void ck_job_run(ck_job *job);

/* Hand the job to up to ``helpers`` pool threads (started on first use).
 * Returns how many took it (0 when the pool is busy, threads cannot be
 * started, or the platform has no pool); the caller then runs the job too and
 * must call ck_pool_wait() before touching the job's buffers when > 0. */
int ck_pool_start(ck_job *job, int helpers);

/* Wait until every helper handed the job by ck_pool_start is done. */
void ck_pool_wait(void);

#ifdef __cplusplus
}
#endif

#endif
