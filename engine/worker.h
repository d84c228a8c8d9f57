/* worker.h - one background thread that runs one job at a time (prefix
 * eg_worker). The search gives it the next graph it will expand to build,
 * match and judge while the current one is expanded (search.c).
 *
 * A job is a function and its argument. Between eg_worker_submit and the
 * eg_worker_wait that follows it, the job owns what its argument points
 * to: the submitter reads none of it and writes nothing the job reads.
 *
 *     eg_worker *w;
 *     if (eg_worker_new(&w) == EG_OK) {
 *         eg_worker_submit(w, fn, &job);   // fn(&job) runs on the thread
 *         ...                              // other work meanwhile
 *         eg_worker_wait(w);               // job is done: read it
 *         eg_worker_free(w);
 *     }
 */
#ifndef EG_WORKER_H
#define EG_WORKER_H

#include "graph.h"

typedef struct eg_worker eg_worker;

typedef void (*eg_job_fn)(void *arg);

/* Start the thread. @return EG_OK, or EG_ENOMEM when no thread can be
 * made (the caller then does the work itself). */
eg_status eg_worker_new(eg_worker **out);

/* Run fn(arg) on the thread. @pre no job pending (eg_worker_wait since
 * the last submit). */
void eg_worker_submit(eg_worker *w, eg_job_fn fn, void *arg);

/* Return once the job submitted last is done (at once when none is). */
void eg_worker_wait(eg_worker *w);

/* Wait for the pending job, stop the thread and free w (NULL: no-op). */
void eg_worker_free(eg_worker *w);

#endif
