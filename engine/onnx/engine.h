/* engine.h - the engine's public API: load an ONNX model into the graph IR
 * (graph.h), save it back, and the `engine` command line.
 *
 * Overview. eg_load reads a .onnx file through protobuf-c (onnx.proto is
 * compiled at build time) and builds an eg_graph: known ONNX operators
 * become model operators or, where their meaning is exactly an opspecs
 * operator, opspecs operators that rules can match; anything else is an
 * opaque node carried byte for byte. Shapes are inferred and checked as the
 * graph loads. eg_save writes the graph back as ONNX: the model's opset,
 * IR version, producer, metadata, functions and graph name are kept (the
 * model and graph "shells"), as are the graph inputs and outputs, opaque
 * nodes and their attributes, and the initializers; value_info is written
 * for every tensor whose shape is known. The result passes
 * onnx.checker.check_model(full_check=True) and computes the same outputs.
 *
 * A model that breaks ONNX's structural rules (a name defined twice, a
 * node input or graph output nothing defines, a cycle, below IR 4 an
 * initializer that is no graph input) is refused with EG_EGRAPH, as
 * onnx.checker refuses it; nodes merely out of order are sorted.
 *
 * A hostile file cannot crash the reader or exhaust memory: the file size,
 * the protobuf nesting depth and the decoder's memory are capped, every
 * length and index is checked, and errors come back as an eg_status with a
 * message naming the file, and the node and tensor where there is one.
 *
 * Worked example: load a model, count its opaque nodes, save it again.
 *
 *     eg_graph *g = NULL;
 *     char err[EG_ERRLEN];
 *     if (eg_load("model.onnx", NULL, &g, err, sizeof err) != EG_OK) {
 *         fprintf(stderr, "%s\n", err);   // "model.onnx: node 3 'c1' (Conv): ..."
 *         return 2;
 *     }
 *     int opaque = 0;
 *     for (int j = 0; j < g->n_nodes; j++)
 *         opaque += g->node[j].kind == EG_KIND_OPAQUE;
 *     printf("%d nodes, %d opaque\n", g->n_nodes, opaque);
 *     if (eg_save("out.onnx", g, err, sizeof err) != EG_OK)
 *         fprintf(stderr, "%s\n", err);
 *     eg_free(g);
 *
 * Supported input: IR version 1..EG_IR_MAX (what onnx 1.23 writes; below IR
 * 3 a model without a default-domain opset_import is opset 1, as
 * onnx.checker reads it), any default-domain opset: operators of opsets
 * EG_OPSET_MIN..EG_OPSET_MAX are understood version by version (an
 * operator version whose meaning or form the engine does not handle stays
 * opaque), a model of a newer opset, or with no default-domain opset, is
 * read with all its nodes opaque. Other domains are fine; their nodes are
 * opaque. Initializers inline (raw_data or typed fields; external data is
 * refused with a message).
 */
#ifndef EG_ENGINE_H
#define EG_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "ir/graph.h"

#define EG_VERSION "0.1.0"
#define EG_IR_MAX 14     /* the IR version onnx 1.23 writes */
#define EG_MAX_FILE ((size_t)2 << 30)   /* 2 GiB: protobuf's own limit */
#define EG_MAX_DEPTH 64                 /* nested messages (subgraphs) */

/* A symbolic dimension (an ONNX dim_param) to read as a fixed size. */
typedef struct {
    const char *name;
    int64_t value; /* 1 .. EG_DIM_MAX */
} eg_dim_value;

/* Limits for eg_load; a zero field takes the default. */
typedef struct {
    size_t max_file_bytes;   /* EG_MAX_FILE */
    size_t max_decode_bytes; /* decoder memory cap: 2 x file size + 64 MiB */
    int max_depth;           /* EG_MAX_DEPTH */
    /* Symbolic dims read as these sizes wherever a graph input, output or
     * value_info names them (`engine optimize --dim`): the graph is then
     * the model at that size, and written so (its inputs declare the
     * sizes). Every name must occur in the file (else EG_EFORMAT). */
    const eg_dim_value *dims;
    int n_dims;
    /* The file the model's bytes came from: initializers kept in external
     * files (ONNX external data; torch.onnx.export writes MODEL.onnx.data
     * by default) are read from its directory. NULL (eg_load_mem from
     * memory): such a model is refused with a message. eg_load sets it. */
    const char *model_path;
} eg_load_opts;

/* Read and import an ONNX model. opts may be NULL.
 * @return EG_OK with *out set (free with eg_free); otherwise *out is NULL
 *         and err holds "PATH: ..." (EG_EIO, EG_EFORMAT, EG_EOPSET,
 *         EG_EGRAPH, EG_ESHAPE, EG_EUNSUPPORTED, EG_ELIMIT, EG_ENOMEM). */
eg_status eg_load(const char *path, const eg_load_opts *opts, eg_graph **out, char *err,
                  size_t errlen);

/* Import a model from memory; name is used in messages.
 * @return as eg_load. */
eg_status eg_load_mem(const void *buf, size_t len, const char *name, const eg_load_opts *opts,
                      eg_graph **out, char *err, size_t errlen);

/* Export the graph as an ONNX model into a malloc'd buffer.
 * @pre g came from eg_load/eg_load_mem (it needs the model shell) and
 *      eg_index succeeds on it.
 * @return EG_OK with *buf, *len set; EG_EGRAPH, EG_EFORMAT (a node the
 *         writer cannot express), EG_ENOMEM, with a message in err. */
eg_status eg_save_mem(const eg_graph *g, uint8_t **buf, size_t *len, char *err, size_t errlen);

/* Export to a file, written to "PATH.tmp.PID" and renamed. A graph read
 * with external data (g->external) keeps its initializers of 1 KiB or
 * more in "PATH.data" (written first, the same way), named in the model
 * relative to it, so the two files move together; else all is inline.
 * @return as eg_save_mem, or EG_EIO. */
eg_status eg_save(const char *path, const eg_graph *g, char *err, size_t errlen);

/* Remove the file(s) eg_save(path, g) wrote: path, and path.data for a
 * graph read with external data. */
void eg_remove_saved(const char *path, const eg_graph *g);

/* The `engine` command line (cli.c), separate from main() so tests can call
 * it. @return the exit status: 0 ok, 2 bad input or usage. */
int eg_cli_main(int argc, char **argv);

#endif
