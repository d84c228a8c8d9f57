/* fold_driver.c - test driver for the built-in rewrites: load IN, run
 * eg_builtin_pre then eg_builtin_post (no search in between), save OUT and
 * print the counts. Used by test/engine_fold_test.py.
 *
 *     fold_driver IN.onnx OUT.onnx
 */
#include <stdio.h>

#include "engine.h"
#include "fold.h"

int main(int argc, char **argv) {
    eg_graph *g = NULL;
    eg_builtin_stats st = {0};
    char err[EG_ERRLEN];
    if (argc != 3) {
        fprintf(stderr, "usage: fold_driver IN.onnx OUT.onnx\n");
        return 2;
    }
    eg_status rc = eg_load(argv[1], NULL, &g, err, sizeof err);
    if (rc == EG_OK) rc = eg_builtin_pre(g, &st, err, sizeof err);
    if (rc == EG_OK) rc = eg_builtin_post(g, &st, err, sizeof err);
    if (rc == EG_OK) rc = eg_save(argv[2], g, err, sizeof err);
    if (rc != EG_OK) fprintf(stderr, "fold_driver: %s\n", err);
    else
        printf("bn_folded %d bias_split %d bias_fused %d identity_removed %d cse_merged %d "
               "matmul_squeezed %d reshapes_cancelled %d dead_removed %d weights_folded %d\n",
               st.bn_folded, st.bias_split, st.bias_fused, st.identity_removed, st.cse_merged,
               st.matmul_squeezed, st.reshapes_cancelled, st.dead_removed, st.weights_folded);
    eg_free(g);
    return rc == EG_OK ? 0 : 2;
}
