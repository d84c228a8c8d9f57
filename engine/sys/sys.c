/* sys.c - the clock, the helper interpreter and the process spawner
 * (sys.h), shared by the search, the cost model and verify. */
#include "sys/sys.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

double eg_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

long eg_peak_rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb;
}

const char *eg_python(void) {
    const char *python = getenv("TASOC_PYTHON");
    return python && *python ? python : "python3";
}

int eg_spawn(char *const *argv, int in_fd, int out_fd, int err_fd, pid_t *pid) {
    fflush(NULL);
    *pid = fork();
    if (*pid < 0) return -1;
    if (*pid == 0) { /* dup2 clears close-on-exec on the copies */
        if (in_fd >= 0) dup2(in_fd, STDIN_FILENO);
        if (out_fd >= 0) dup2(out_fd, STDOUT_FILENO);
        if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
        execvp(argv[0], argv);
        _exit(127);
    }
    return 0;
}
