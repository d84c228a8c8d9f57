/* worker.h - one background thread that runs jobs one at a time, in the
 * order they are given (prefix eg_worker). The search gives it the graphs
 * it expects to expand next, to build, match and judge while it expands
 * the current one (search.c).
 *
 * A job is a function and its argument, named by its ticket (0, 1, 2 ...
 * in the order submitted). Between eg_worker_submit and the moment the job
 * is done (eg_worker_done, eg_worker_wait), the job owns what its argument
 * points to: the submitter reads none of it and writes nothing it reads.
 *
 *     eg_worker *w;
 *     if (eg_worker_new(&w) == EG_OK) {
 *         uint64_t t = eg_worker_submit(w, fn, &job); // fn(&job) on the thread
 *         ...                                        // other work meanwhile
 *         eg_worker_wait(w, t);                      // job is done: read it
 *         eg_worker_free(w);
 *     }
 */
#ifndef EG_WORKER_H
#define EG_WORKER_H

#include <stdint.h>

#include "ir/graph.h"

#define EG_WORKER_QUEUE 4 /* jobs pending at most (submit waits beyond) */

typedef struct eg_worker eg_worker;

typedef void (*eg_job_fn)(void *arg);

/* Start the thread. @return EG_OK, or EG_ENOMEM when no thread can be
 * made (the caller then does the work itself). */
eg_status eg_worker_new(eg_worker **out);

/* Queue fn(arg) to run on the thread after the jobs before it (waiting
 * while EG_WORKER_QUEUE are pending). @return its ticket. */
uint64_t eg_worker_submit(eg_worker *w, eg_job_fn fn, void *arg);

/* Jobs submitted and not done yet. */
int eg_worker_pending(eg_worker *w);

/* 1 once the job of that ticket is done, else 0 (it does not wait). */
int eg_worker_done(eg_worker *w, uint64_t ticket);

/* Return once the job of that ticket is done. */
void eg_worker_wait(eg_worker *w, uint64_t ticket);

/* Run what is pending, stop the thread and free w (NULL: no-op). */
void eg_worker_free(eg_worker *w);

#endif
