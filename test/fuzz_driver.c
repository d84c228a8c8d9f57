/* fuzz_driver.c - a main() for libFuzzer targets built without libFuzzer
 * (gcc): replays every file named on the command line, and every regular
 * file of a named directory, through LLVMFuzzerTestOneInput, so a corpus
 * or a crash file can be re-run under ASan/UBSan with any compiler.
 *
 *     fuzz_ruledb CORPUS_DIR crash-1234 ...
 *
 * Options starting with '-' (libFuzzer's -max_total_time=...) are ignored,
 * so scripts can call either build the same way. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Run one file. @return 0, or -1 when it cannot be read. */
static int run_file(const char *path) {
    FILE *fp = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, k;
    if (!fp) {
        perror(path);
        return -1;
    }
    do {
        if (len == cap) {
            uint8_t *nb = realloc(buf, cap = cap ? 2 * cap : 4096);
            if (!nb) {
                free(buf);
                fclose(fp);
                return -1;
            }
            buf = nb;
        }
        k = fread(buf + len, 1, cap - len, fp);
        len += k;
    } while (k > 0);
    fclose(fp);
    /* An exact-size copy, so a read past the end is caught by ASan. */
    uint8_t *exact = malloc(len ? len : 1);
    if (exact) {
        if (len) memcpy(exact, buf, len);
        LLVMFuzzerTestOneInput(exact, len);
    }
    free(exact);
    free(buf);
    return exact ? 0 : -1;
}

/* Run every regular file of a directory (not recursive). */
static int run_dir(const char *dir, int *count) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int bad = 0;
    if (!d) {
        perror(dir);
        return -1;
    }
    while ((e = readdir(d))) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        bad |= run_file(path);
        (*count)++;
    }
    closedir(d);
    return bad;
}

int main(int argc, char **argv) {
    int bad = 0, count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (argv[i][0] == '-') continue;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            bad |= run_dir(argv[i], &count);
        } else {
            bad |= run_file(argv[i]);
            count++;
        }
    }
    fprintf(stderr, "fuzz_driver: ran %d inputs\n", count);
    return bad ? 1 : 0;
}
