/* fastk.h - faster kernels for synth's hottest operators (prefix fk_),
 * equal bit for bit to the reference semantics (ops_eval). */
#ifndef SYN_FASTK_H
#define SYN_FASTK_H

#include "ops.h"

/* Evaluate op like ops_eval when this file has a kernel for it.
 * @pre as ops_eval. @return 1 when evaluated, 0 when the caller must use
 *      ops_eval. */
int fk_eval(ops_op op, const int32_t *param, const ten *const *in, ten *out);

#endif
