/* lower.h - private to onnx/: lowering (lower.c), the model ops the
 * importer read turned into opspecs operators where their meaning is
 * exactly one. */
#ifndef EG_LOWER_H
#define EG_LOWER_H

#include "ir/graph.h"

/* Replace every model node whose meaning is exactly an opspecs operator by
 * that operator (see the header comment). Keeps topological order and
 * recomputes producers. @pre shapes inferred.
 * @return EG_OK or EG_ENOMEM. */
eg_status eg_lower(eg_graph *g);

#endif
