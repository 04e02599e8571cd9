/* A tiny persistent pool of native threads for batch order ids and signatures.
 *
 * Native threads never need the GIL, so they can start on a chunk while the
 * Python thread still holds the GIL to take the objects of the next one
 * (Python pool threads would wait for the GIL to even begin). One job at a time: a caller
 * that finds the pool busy (another Python thread is using it) runs alone.
 * Helpers idle for a second exit, so the pool shrinks back after a burst.
 */
#ifndef CLOBKIT_WORKERS_H
#define CLOBKIT_WORKERS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A job the pool's threads all run at once: ``run`` takes pieces of the work
 * (a shared atomic counter) until none is left, so faster threads simply take
 * more. A job embeds this struct first (see ck_batch in batch.h). */
typedef struct ck_task {
    void (*run)(struct ck_task *task);
} ck_task;

/* Hand the job to up to ``helpers`` pool threads (started on first use).
 * Returns how many took it (0 when the pool is busy, threads cannot be
 * started, or the platform has no pool); the caller then runs the job too and
 * must call ck_pool_wait() before touching the job's buffers when > 0. */
int ck_pool_start(ck_task *job, int helpers);

/* Wait until every helper handed the job by ck_pool_start is done. */
void ck_pool_wait(void);

#ifdef __cplusplus
}
#endif

#endif
