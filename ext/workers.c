/* See workers.h. POSIX threads where available; elsewhere the caller hashes alone. */
#include "workers.h"

#if defined(_WIN32) || !(defined(__unix__) || defined(__APPLE__))

int ck_pool_start(ck_task *job, int helpers) {
    (void)job;
    (void)helpers;
    return 0;
}
void ck_pool_wait(void) {}

#else

#include <pthread.h>
#include <time.h>

/* Hard ceiling of the pool; callers ask for far fewer (the Python side caps a
 * batch at 4 threads per core, see parse_threads). */
#define CK_MAX_HELPERS 256
/* A helper idle this long exits (the highest-numbered first, then the next),
 * so a burst of threads=N does not leave N native threads behind for good. */
#define CK_IDLE_NS 1000000000LL

static struct {
    pthread_mutex_t mu;   /* guards everything below */
    pthread_cond_t work;  /* a new generation was posted */
    pthread_cond_t done;  /* active dropped to 0 */
    pthread_mutex_t own;  /* held by the caller between start and wait */
    ck_task *job;
    unsigned long gen;
    int wanted;  /* helpers taking the current generation */
    int active;  /* helpers still running it */
    int started; /* threads alive, numbered 0 .. started - 1 */
    struct timespec idle_since; /* CLOCK_MONOTONIC: when the last job ended */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
          PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, 0, {0, 0}};

static long long elapsed_ns(const struct timespec *since) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)(now.tv_sec - since->tv_sec) * 1000000000LL + (now.tv_nsec - since->tv_nsec);
}

/* The generation current when each helper was created (before the job that
 * created it was posted), so a helper that starts late still takes that job. */
static unsigned long born[CK_MAX_HELPERS];

static void *helper(void *arg) {
    int index = (int)(intptr_t)arg;
    pthread_mutex_lock(&pool.mu);
    unsigned long seen = born[index];
    for (;;) {
        while (pool.gen == seen) {
            /* only the top helper may leave, so the numbering stays dense */
            if (index == pool.started - 1 && pool.active == 0 &&
                elapsed_ns(&pool.idle_since) >= CK_IDLE_NS) {
                pool.started--;
                pthread_cond_broadcast(&pool.work); /* the next one down checks too */
                pthread_mutex_unlock(&pool.mu);
                return NULL;
            }
            struct timespec until; /* pthread_cond_timedwait counts on CLOCK_REALTIME */
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += CK_IDLE_NS / 1000000000LL;
            pthread_cond_timedwait(&pool.work, &pool.mu, &until);
        }
        seen = pool.gen;
        if (index >= pool.wanted) continue; /* not needed this time */
        ck_task *job = pool.job;
        pthread_mutex_unlock(&pool.mu);
        job->run(job);
        pthread_mutex_lock(&pool.mu);
        if (--pool.active == 0) {
            clock_gettime(CLOCK_MONOTONIC, &pool.idle_since);
            pthread_cond_signal(&pool.done);
        }
    }
}

/* A forked child has none of the parent's threads: start from scratch. */
static void after_fork_child(void) {
    pthread_mutex_init(&pool.mu, NULL);
    pthread_mutex_init(&pool.own, NULL);
    pthread_cond_init(&pool.work, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.started = pool.active = pool.wanted = 0;
    pool.job = NULL;
}

int ck_pool_start(ck_task *job, int helpers) {
    static int atfork_done = 0;
    if (helpers <= 0) return 0;
    if (helpers > CK_MAX_HELPERS) helpers = CK_MAX_HELPERS;
    if (pthread_mutex_trylock(&pool.own) != 0) return 0; /* in use by another caller */
    pthread_mutex_lock(&pool.mu);
    if (!atfork_done) {
        pthread_atfork(NULL, NULL, after_fork_child);
        atfork_done = 1;
    }
    while (pool.started < helpers) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        born[pool.started] = pool.gen;
        int rc = pthread_create(&t, &attr, helper, (void *)(intptr_t)pool.started);
        pthread_attr_destroy(&attr);
        if (rc != 0) break;
        pool.started++;
    }
    if (helpers > pool.started) helpers = pool.started;
    if (helpers == 0) {
        pthread_mutex_unlock(&pool.mu);
        pthread_mutex_unlock(&pool.own);
        return 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &pool.idle_since);
    pool.job = job;
    pool.wanted = helpers;
    pool.active = helpers;
    pool.gen++;
    pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.mu);
    return helpers;
}

void ck_pool_wait(void) {
    pthread_mutex_lock(&pool.mu);
    while (pool.active > 0) pthread_cond_wait(&pool.done, &pool.mu);
    pool.job = NULL;
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.own);
}

#endif
