/* worker.c - one background thread running one job at a time (see
 * worker.h): a mutex, one condition for "a job or stop is posted" and one
 * for "the job is done". */
#include "worker.h"

#include <pthread.h>
#include <stdlib.h>

struct eg_worker {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t posted, done;
    eg_job_fn fn; /* the pending job, NULL when none */
    void *arg;
    int busy;     /* a job is posted or running */
    int stop;
};

static void *run(void *p) {
    eg_worker *w = p;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->fn && !w->stop) pthread_cond_wait(&w->posted, &w->mu);
        if (!w->fn) break; /* stop, nothing pending */
        eg_job_fn fn = w->fn;
        void *arg = w->arg;
        w->fn = NULL;
        pthread_mutex_unlock(&w->mu);
        fn(arg);
        pthread_mutex_lock(&w->mu);
        w->busy = 0;
        pthread_cond_signal(&w->done);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

eg_status eg_worker_new(eg_worker **out) {
    eg_worker *w = calloc(1, sizeof *w);
    *out = NULL;
    if (!w) return EG_ENOMEM;
    int made = 0; /* 1 mutex, 2 conditions, 3 thread */
    if (pthread_mutex_init(&w->mu, NULL) == 0 && ++made && pthread_cond_init(&w->posted, NULL) == 0 && ++made &&
        pthread_cond_init(&w->done, NULL) == 0 && ++made && pthread_create(&w->thread, NULL, run, w) == 0) {
        *out = w;
        return EG_OK;
    }
    if (made >= 3) pthread_cond_destroy(&w->done);
    if (made >= 2) pthread_cond_destroy(&w->posted);
    if (made >= 1) pthread_mutex_destroy(&w->mu);
    free(w);
    return EG_ENOMEM;
}

void eg_worker_submit(eg_worker *w, eg_job_fn fn, void *arg) {
    pthread_mutex_lock(&w->mu);
    w->fn = fn, w->arg = arg, w->busy = 1;
    pthread_cond_signal(&w->posted);
    pthread_mutex_unlock(&w->mu);
}

void eg_worker_wait(eg_worker *w) {
    pthread_mutex_lock(&w->mu);
    while (w->busy) pthread_cond_wait(&w->done, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

void eg_worker_free(eg_worker *w) {
    if (!w) return;
    eg_worker_wait(w);
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->posted);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->posted);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
