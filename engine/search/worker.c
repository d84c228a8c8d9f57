/* worker.c - one background thread running jobs in the order given (see
 * worker.h): a ring of pending jobs under a mutex, one condition for "a
 * job or stop is posted" and one for "a job is done". */
#include "search/worker.h"

#include <pthread.h>
#include <stdlib.h>

struct eg_worker {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t posted, done;
    struct {
        eg_job_fn fn;
        void *arg;
    } ring[EG_WORKER_QUEUE];
    uint64_t submitted, finished; /* jobs posted, jobs done: job t (its
                                     ticket) is done once finished > t */
    int stop;
};

static void *run(void *p) {
    eg_worker *w = p;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->finished == w->submitted && !w->stop) pthread_cond_wait(&w->posted, &w->mu);
        if (w->finished == w->submitted) break; /* stop, nothing pending */
        eg_job_fn fn = w->ring[w->finished % EG_WORKER_QUEUE].fn;
        void *arg = w->ring[w->finished % EG_WORKER_QUEUE].arg;
        pthread_mutex_unlock(&w->mu);
        fn(arg);
        pthread_mutex_lock(&w->mu);
        w->finished++;
        pthread_cond_broadcast(&w->done);
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

uint64_t eg_worker_submit(eg_worker *w, eg_job_fn fn, void *arg) {
    pthread_mutex_lock(&w->mu);
    while (w->submitted - w->finished == EG_WORKER_QUEUE) pthread_cond_wait(&w->done, &w->mu);
    uint64_t t = w->submitted++;
    w->ring[t % EG_WORKER_QUEUE].fn = fn, w->ring[t % EG_WORKER_QUEUE].arg = arg;
    pthread_cond_signal(&w->posted);
    pthread_mutex_unlock(&w->mu);
    return t;
}

int eg_worker_pending(eg_worker *w) {
    pthread_mutex_lock(&w->mu);
    int n = (int)(w->submitted - w->finished);
    pthread_mutex_unlock(&w->mu);
    return n;
}

int eg_worker_done(eg_worker *w, uint64_t ticket) {
    pthread_mutex_lock(&w->mu);
    int done = w->finished > ticket;
    pthread_mutex_unlock(&w->mu);
    return done;
}

void eg_worker_wait(eg_worker *w, uint64_t ticket) {
    pthread_mutex_lock(&w->mu);
    while (w->finished <= ticket) pthread_cond_wait(&w->done, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

void eg_worker_free(eg_worker *w) {
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1; /* the thread runs what is pending, then stops */
    pthread_cond_signal(&w->posted);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->posted);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
