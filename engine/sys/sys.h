/* sys.h - what the engine asks of the operating system, written once
 * (prefix eg_): a monotonic clock, the process's peak memory, the Python
 * interpreter its onnxruntime helpers run under, and starting such a
 * helper. The bottom layer of
 * engine/: it includes nothing of the engine.
 */
#ifndef EG_SYS_H
#define EG_SYS_H

#include <sys/types.h>

/* Seconds on a monotonic clock (a difference of two is a duration). */
double eg_now_s(void);

/* This process's peak resident memory in kB (Linux's VmHWM: the program's
 * own, not the parent's it was forked from), or -1 where unknown. */
long eg_peak_rss_kb(void);

/* The interpreter for the onnxruntime helpers: $TASOC_PYTHON, else
 * "python3". */
const char *eg_python(void);

/* Start argv[0] (searched in PATH) with argv, its standard input, output
 * and error the given descriptors (-1: this process's own). Output
 * buffered here is flushed first, so the child does not repeat it.
 * @return 0 with *pid set, or -1 with errno (the fork failed). A program
 *         that cannot be started exits with status 127. */
int eg_spawn(char *const *argv, int in_fd, int out_fd, int err_fd, pid_t *pid);

#endif
