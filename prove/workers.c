/* workers.c - a fixed set of worker threads over an atomic item counter. */
#include "workers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define WK_MAX_JOBS 256

typedef struct {
    size_t n;
    atomic_size_t next, done;
    wk_work work;
    void *ctx;
} pool;

static void *worker(void *arg) {
    pool *p = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n) break;
        p->work(p->ctx, i);
        atomic_fetch_add(&p->done, 1);
    }
    return NULL;
}

int wk_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > WK_MAX_JOBS ? WK_MAX_JOBS : (int)n;
}

static void sleep_ms(unsigned ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Wait for the items, ticking every interval. */
static void watch(pool *p, wk_tick tick, unsigned interval_ms) {
    const unsigned step = 20;
    unsigned waited = 0;
    while (atomic_load(&p->done) < p->n) {
        sleep_ms(step);
        waited += step;
        if (tick && waited >= interval_ms) {
            tick(p->ctx, atomic_load(&p->done), p->n);
            waited = 0;
        }
    }
}

int wk_run(size_t n, int jobs, wk_work work, wk_tick tick, unsigned interval_ms, void *ctx) {
    pthread_t th[WK_MAX_JOBS];
    pool p = {n, 0, 0, work, ctx};
    int started = 0;
    if (jobs < 1) jobs = wk_cores();
    if (jobs > WK_MAX_JOBS) jobs = WK_MAX_JOBS;
    if ((size_t)jobs > n) jobs = n ? (int)n : 1;
    for (; started < jobs; started++)
        if (pthread_create(&th[started], NULL, worker, &p) != 0) break;
    if (started == 0) {
        worker(&p);
        return -1;
    }
    watch(&p, tick, interval_ms);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    return 0;
}
