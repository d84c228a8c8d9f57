/* workers.h - run independent work items on N threads (prefix wk_).
 *
 * Items are handed out in index order from one atomic counter; each item
 * writes its result into its own slot (the caller's array), so the results
 * do not depend on how many threads ran or in which order they finished.
 * The calling thread only waits and reports progress.
 */
#ifndef WORKERS_H
#define WORKERS_H

#include <stddef.h>

/* Do item i. Called concurrently for different i. */
typedef void (*wk_work)(void *ctx, size_t i);

/* Report progress: called from the calling thread about every interval_ms
 * while items remain (never concurrently with itself). May be NULL. */
typedef void (*wk_tick)(void *ctx, size_t done, size_t total);

/* Number of online processors (at least 1). */
int wk_cores(void);

/* Run work(ctx, i) for every i < n on `jobs` threads (jobs < 1: one per
 * core), calling tick every interval_ms, and return when all are done.
 * @return 0, or -1 when no thread could be started (the items then ran
 *         on the calling thread, so the work is done either way). */
int wk_run(size_t n, int jobs, wk_work work, wk_tick tick, unsigned interval_ms, void *ctx);

#endif
