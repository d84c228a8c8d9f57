/* verify_step.c - the verify step of the optimize pipeline
 * (pipeline.h: eg_optimize_verify): the input and eg_optimize's candidates
 * timed in onnxruntime, the fastest kept. One implementation for the
 * engine command and the C API. */
#include "pipeline/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "onnx/engine.h"
#include "proto/onnx_pb.h"

/* A private temporary directory for the input's file and the candidates. */
static eg_status temp_dir(char *dir, size_t len, char *err, size_t errlen) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, len, "%s/tasoc-verify-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir)) return EG_OK;
    return eg_errf(err, errlen, EG_EIO, "verify: cannot make a temporary directory in %s",
                   tmp && *tmp ? tmp : "/tmp");
}

eg_status eg_optimize_verify(const eg_graph *g, const eg_verify_input *in, eg_cost *cost, const char *cost_cache,
                             eg_verify_opts *o, int quiet, eg_search_result *r, eg_optimize_stats *st,
                             eg_graph **best, eg_verify_report *rep, char *err, size_t errlen) {
    char dir[4096] = "", path[4200], prefix[4200], vcache[4200];
    const char *input = in->path, *pre = in->prefix;
    eg_status rc = EG_OK;
    if (!input) { /* the input as a file of its own: its bytes when they are the graph's */
        rc = temp_dir(dir, sizeof dir, err, errlen);
        snprintf(path, sizeof path, "%s/input.onnx", dir);
        snprintf(prefix, sizeof prefix, "%s/candidate", dir);
        if (rc == EG_OK)
            rc = in->bytes ? egp_write_file(path, in->bytes, in->len, err, errlen) : eg_save(path, g, err, errlen);
        input = path, pre = prefix;
    }
    eg_verify_use_cache(o, cost, cost_cache, vcache, sizeof vcache);
    if (rc == EG_OK) rc = eg_verify_choose(g, input, pre, r, &st->second, &st->plain, best, o, quiet, rep, err, errlen);
    if (rc == EG_OK && rep->pick == 0) { /* the input stays */
        eg_optimize_stats_free(st); /* before the graph they borrow from */
        eg_free(*best);
        *best = eg_graph_clone(g);
        st->kept_input = 1;
        if (!*best) rc = eg_errf(err, errlen, EG_ENOMEM, "verify: out of memory");
    }
    if (dir[0]) {
        eg_remove_saved(path, g);
        rmdir(dir);
    }
    return rc;
}
