/* graph.h - the engine's graph IR (prefix eg_): tensors, nodes, the model
 * operator table, names, topological order, shape inference and the
 * lowering of model operators to opspecs operators.
 *
 * A graph is two arrays, tensors and nodes, that refer to each other by
 * index (an int id, -1 for "none"). Nodes are kept in topological order
 * (eg_toposort); each tensor has at most one producer. A node is one of
 * three kinds:
 *
 *   EG_KIND_OPS     an opspecs operator (ops.h): `op` and `param` exactly as
 *                   in a ruledb rule graph (rg_node), inputs in opspecs
 *                   order (conv2d: x, w). Invariant: every input shape is
 *                   fully known and ten_shape_valid, the inputs are float32,
 *                   and ops_infer_shape gives the output shape. This is what
 *                   rule matching sees.
 *   EG_KIND_MODEL   an ONNX operator the engine understands but opspecs does
 *                   not express as is (Gemm, a Conv with bias or asymmetric
 *                   pads, an n-ary Concat, Softmax...): `mop` and `attr`;
 *                   its inputs mirror the ONNX node's inputs one for one
 *                   (-1 where an optional input is omitted). Shape
 *                   inference knows it; built-in rewrites may turn it into
 *                   opspecs operators.
 *   EG_KIND_OPAQUE  anything else: kept as the original NodeProto bytes,
 *                   exported untouched (only input/output names are
 *                   rewritten if they changed). Blocks rewrites. Its output
 *                   shapes come from the ONNX shape rules of cfold.c at
 *                   load (merged with the file's value_info), else unknown.
 *
 * Import first builds model operators for every known ONNX op, infers
 * shapes, then lowers (eg_lower) each model node whose semantics match an
 * opspecs operator exactly: Conv without bias, equal strides and centred
 * SAME or VALID padding -> conv2d; same-shape Add/Mul -> ewadd/ewmul; Mul by
 * a rank-0 tensor -> smul; rank-2 MatMul -> matmul; 2-input Concat ->
 * concat; 2-way Split -> split0 + split1 (two nodes on the same input);
 * rank-2 Transpose -> transpose; MaxPool, and AveragePool whose padding
 * counts (count_include_pad, or no padding) -> maxpool/avgpool; Relu -> relu;
 * an n-input Sum -> a chain of model Adds (each lowered as above), a
 * one-input Sum -> Identity.
 *
 * Rewriting (for the search): add tensors (eg_add_tensor) and nodes
 * (eg_add_node, appended; set op/param or mop/attr and in/out), drop the
 * replaced nodes (eg_remove_nodes), then eg_index, eg_toposort and
 * eg_infer_all. Tensors nothing produces or reads any more are left in the
 * arrays and simply not written on export; a value flagged EG_TF_ABSORBED
 * (folded into node parameters by the importer) is dropped once unused.
 *
 * Shapes: rank -1 is an unknown rank, a dim -1 an unknown dim (a symbolic
 * "N" keeps its name in dim_name for display and export). Tensor data:
 * float32 initializers as floats; other fixed-width types as little-endian
 * bytes (raw), plus their original TensorProto for a byte-faithful export.
 */
#ifndef EG_GRAPH_H
#define EG_GRAPH_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/onnx_op.h"
#include "ops.h"

#define EG_MAX_RANK 8
#define EG_DIM_MAX ((int64_t)1 << 40) /* any known dim; keeps arithmetic exact */
#define EG_MAX_INTS 16 /* Transpose perm, Reshape target, Split sizes */
#define EG_ERRLEN 320

/* Status codes; EG_OK is 0. ORDER STATUS */
typedef enum {
    EG_OK = 0,
    EG_EIO,          /* a file could not be read or written */
    EG_EFORMAT,      /* not a well-formed ONNX model */
    EG_EOPSET,       /* an opset or IR version the engine does not support */
    EG_EGRAPH,       /* cycle, undefined or twice-defined tensor */
    EG_ESHAPE,       /* shapes do not fit an operator */
    EG_EUNSUPPORTED, /* a valid ONNX feature the engine does not handle */
    EG_ELIMIT,       /* over a size, memory or nesting limit */
    EG_ENOMEM,
    EG_STATUS_COUNT
} eg_status;

/* ONNX TensorProto.DataType values the engine names. */
enum {
    EG_DT_UNDEFINED = 0, EG_DT_FLOAT = 1, EG_DT_UINT8 = 2, EG_DT_INT8 = 3,
    EG_DT_UINT16 = 4, EG_DT_INT16 = 5, EG_DT_INT32 = 6, EG_DT_INT64 = 7,
    EG_DT_STRING = 8, EG_DT_BOOL = 9, EG_DT_FLOAT16 = 10, EG_DT_DOUBLE = 11,
    EG_DT_UINT32 = 12, EG_DT_UINT64 = 13, EG_DT_BFLOAT16 = 16
};

typedef enum { /* ORDER KIND */
    EG_KIND_OPS,
    EG_KIND_MODEL,
    EG_KIND_OPAQUE,
    EG_KIND_COUNT
} eg_kind;

/* Model operators: ONNX ops the engine understands (see the header
 * comment). ORDER MOP: eg_mop_table follows this order. */
typedef enum {
    EG_MOP_CONV,          /* (X, W [, B]); 2-D, any kernel/stride/pads, group */
    EG_MOP_MAXPOOL,       /* (X); 2-D, kernel, strides, pads */
    EG_MOP_AVGPOOL,       /* (X); 2-D, count_include_pad in flags */
    EG_MOP_GLOBALAVGPOOL, /* (X) */
    EG_MOP_GEMM,          /* (A, B [, C]); alpha, beta, transA/B */
    EG_MOP_MATMUL,        /* (A, B); numpy-style batching */
    EG_MOP_ADD,           /* (A, B); multidirectional broadcasting */
    EG_MOP_MUL,
    EG_MOP_DIV,
    EG_MOP_RELU,
    EG_MOP_SIGMOID,
    EG_MOP_TANH,
    EG_MOP_CONCAT,        /* (X...); axis */
    EG_MOP_SPLIT,         /* (X [, split]) -> n outputs; axis, sizes */
    EG_MOP_TRANSPOSE,     /* (X); perm in ints (n_ints 0: reverse) */
    EG_MOP_RESHAPE,       /* (X, shape); shape must be a constant; before
                             opset 5 (X) with the shape in ints (EG_AF_INTS) */
    EG_MOP_FLATTEN,       /* (X); axis */
    EG_MOP_BATCHNORM,     /* (X, scale, B, mean, var); inference mode */
    EG_MOP_SOFTMAX,       /* (X); axis, opset-13 meaning */
    EG_MOP_LAYERNORM,     /* (X, Scale [, B]); axis, epsilon; Scale and B of
                             X's normalised shape; one output */
    EG_MOP_IDENTITY,      /* (X); also an inference-mode Dropout */
    EG_MOP_SUM,           /* (X...); lowered to a chain of two-input Adds */
    EG_MOP_COUNT
} eg_mop;

typedef struct {
    eg_xop xop;         /* the ONNX operator it reads */
    int min_in, max_in; /* ONNX input count; max_in -1: variadic */
    int max_out;        /* -1: variadic (Split) */
    int opset_lo, opset_hi; /* the opsets in which it is read as a model
                               operator rather than kept opaque (graph.c) */
} eg_mop_info;

extern const eg_mop_info eg_mop_table[EG_MOP_COUNT];

/* The model operator read for ONNX op_type (default domain) at opset,
 * or EG_MOP_COUNT: none, or not at that opset. */
eg_mop eg_mop_of(const char *op_type, int opset);
/* The ONNX op_type of a model operator. */
const char *eg_mop_name(eg_mop m);

/* Model operator attributes, already defaulted as ONNX defines them. */
#define EG_AF_AUTO_UPPER 1u /* auto_pad SAME_UPPER, pads not resolved yet */
#define EG_AF_AUTO_LOWER 2u /* auto_pad SAME_LOWER, pads not resolved yet */
#define EG_AF_COUNT_PAD 4u  /* AveragePool count_include_pad = 1 */
#define EG_AF_TRANS_A 8u
#define EG_AF_TRANS_B 16u
#define EG_AF_ALLOWZERO 32u   /* Reshape allowzero = 1 */
#define EG_AF_INTS 64u        /* ints hold Transpose perm / Split sizes */
#define EG_AF_NUM_OUTPUTS 128u /* Split written with num_outputs (opset 18) */
#define EG_AF_LEGACY_BCAST 256u /* opset < 7 Add/Mul/Gemm with broadcast = 1:
                                   kept only where it equals numpy's */
#define EG_AF_HAS_AXIS 512u     /* ... and an explicit axis (in `axis`) */
#define EG_AF_CEIL 1024u        /* pool ceil_mode = 1 as read; infer.c clears
                                   it where ceil and floor sizes agree and
                                   keeps the node opaque where they do not */

typedef struct {
    int32_t kernel[2]; /* 0 = not given (Conv: taken from W) */
    int32_t stride[2];
    int32_t pad[4];    /* ONNX order: h begin, w begin, h end, w end */
    int32_t group;
    int32_t axis;      /* as written (may be negative) */
    uint32_t flags;    /* EG_AF_* */
    float alpha, beta, epsilon;
    int32_t n_ints;
    int64_t ints[EG_MAX_INTS];
} eg_attrs;

typedef struct {
    int rank;                 /* -1: unknown */
    int64_t dim[EG_MAX_RANK]; /* -1: unknown */
} eg_shape;

/* Tensor flags. */
#define EG_TF_INPUT 1u    /* a graph input */
#define EG_TF_OUTPUT 2u   /* a graph output */
#define EG_TF_INIT 4u     /* has a value: initializer or Constant */
#define EG_TF_CONST 8u    /* the value came from a Constant node */
#define EG_TF_ABSORBED 16u /* a value the importer folded into a node's
                              parameters; dropped on export once unused */
#define EG_TF_PINNED 32u  /* referenced by name from a subgraph or a sparse
                             initializer: never rename or drop */
#define EG_TF_SPARSE 64u  /* a sparse initializer (kept in the graph shell) */
#define EG_TF_NONFINITE 256u /* may hold an infinity or a NaN although
                               every graph input is finite (range.h:
                               eg_mark_nonfinite); a rewrite's new values
                               computed from such a value carry it too */
#define EG_TF_BORROWED 128u /* data, raw, proto and vinfo belong to the graph
                               this one was cloned from: eg_free leaves them.
                               To give such a tensor a payload of its own,
                               clear the flag and replace all four fields. */

typedef struct {
    char *name;
    int dtype;          /* EG_DT_*, 0 unknown */
    eg_shape shape;
    char **dim_name;    /* NULL, or EG_MAX_RANK symbolic dim names (NULL: none) */
    unsigned flags;     /* EG_TF_* */
    int producer;       /* node id, -1 for none */
    float *data;        /* float32 values (numel), or NULL */
    uint8_t *raw;       /* other fixed-width values, little-endian */
    size_t raw_len;
    uint8_t *proto;     /* non-float initializer: the original TensorProto */
    size_t proto_len;
    uint8_t *vinfo;     /* the file's ValueInfoProto for it, if any */
    size_t vinfo_len;
} eg_tensor;

typedef struct {
    eg_kind kind;
    ops_op op;                     /* EG_KIND_OPS */
    int32_t param[OPS_MAX_PARAMS]; /* EG_KIND_OPS */
    eg_mop mop;                    /* EG_KIND_MODEL */
    eg_attrs attr;                 /* EG_KIND_MODEL */
    char *name;                    /* never NULL; may be "" */
    char *op_type, *domain;        /* EG_KIND_OPAQUE: as in the file */
    uint8_t *proto;                /* EG_KIND_OPAQUE: the original NodeProto */
    size_t proto_len;
    int n_in;       /* explicit inputs; an id of -1 is an omitted input */
    int n_implicit; /* then tensors a subgraph attribute reads (opaque) */
    int *in;        /* n_in + n_implicit tensor ids */
    int n_out;
    int *out;       /* tensor ids; -1 is an omitted optional output */
    int borrowed;   /* op_type, domain, proto belong to the graph this one
                       was cloned from (eg_graph_clone): never freed here */
    int origin;     /* eg_graph_clone: 1 + the node's index in the graph it
                       was cloned from; 0 for a node added since. The
                       search reuses the source's node costs through it
                       (eg_cost_graph_nodes) */
} eg_node;

typedef struct eg_names eg_names;

typedef struct eg_graph {
    int n_tensors, cap_tensors;
    eg_tensor *tensor;
    int n_nodes, cap_nodes;
    eg_node *node;
    int n_inputs, n_outputs;
    int *input, *output;     /* tensor ids in file order */
    int64_t ir_version;
    int opset;               /* of the default domain */
    int repaired;            /* the file broke a rule the export mends (an
                                IR < 4 initializer not listed as a graph
                                input), so its bytes are never the result */
    int external;            /* initializers were read from external data
                                files: eg_save writes them so too, and the
                                file's bytes are never the result (they name
                                the data beside the input) */
    char *producer;          /* "name version", for display */
    char *graph_name;
    uint8_t *model_shell;    /* the ModelProto without its graph */
    size_t model_shell_len;
    uint8_t *graph_shell;    /* the GraphProto without nodes, initializers,
                                inputs, outputs and value_info */
    size_t graph_shell_len;
    eg_names *names;         /* tensor name -> id */
    int shells_borrowed;     /* model_shell, graph_shell belong to the graph
                                this one was cloned from */
    struct eg_graph *base;   /* freed with this graph, after it: the graph
                                whose data it borrows (eg_graph_set_base) */
    char *arena;             /* eg_graph_clone: one block holding the clone's
                                tensor and node names, node input/output id
                                arrays and name-map keys (a clone is made
                                thousands of times a search, so not one
                                allocation per name); a pointer into it is
                                never freed by itself */
    size_t arena_len;
} eg_graph;

/* ---- names: a string -> int map (open addressing, XXH3) ---- */

eg_names *eg_names_new(void);
void eg_names_free(eg_names *m);
/* @return the value stored for key, or -1. */
int eg_names_get(const eg_names *m, const char *key);
/* Store key -> value (key is copied). @return EG_OK, EG_EGRAPH when key
 * is present already, EG_ENOMEM. */
eg_status eg_names_put(eg_names *m, const char *key, int value);

/* Store key -> value, replacing the value when key is present.
 * @return EG_OK or EG_ENOMEM. */
eg_status eg_names_set(eg_names *m, const char *key, int value);

/* ---- graph building ---- */

/* @return an empty graph, or NULL when out of memory. */
eg_graph *eg_graph_new(void);

/* Make g own base, the graph it borrows data from: eg_free(g) then frees
 * base after g. Lets a result outlive the intermediate graph it was cloned
 * from. @pre g has no base yet. */
void eg_graph_set_base(eg_graph *g, eg_graph *base);

/* Free a graph and everything it owns (and its base). NULL is allowed. */
void eg_free(eg_graph *g);

/* A copy of g for rewriting, cheap enough to make thousands of times: the
 * arrays, names, shapes, flags, node fields and the name map are copied
 * (names, node id arrays and map keys into one block, eg_graph.arena; each
 * node's origin is set to 1 + its index in g), but tensor payloads (data, raw, proto, vinfo), opaque node protos (with
 * op_type and domain) and the model/graph shells are borrowed from g
 * (EG_TF_BORROWED, eg_node.borrowed, shells_borrowed), never copied.
 * Contract: free a clone (eg_free) before the graph it was cloned from,
 * and that one before its own source; tensors a rewrite adds to the clone
 * own their (empty) payloads as usual.
 * @return the clone, or NULL when out of memory. */
eg_graph *eg_graph_clone(const eg_graph *g);

/* A structural hash: every tensor is hashed bottom-up, graph inputs,
 * initializers and other leaves by name, node outputs by the node's kind,
 * operator and parameters (op/param, mop/attr, or an opaque node's
 * op_type, domain and name), its input hashes in order and the output
 * index; the graph outputs' hashes are combined in order. So the result
 * does not depend on node order or on the names of internal tensors, and
 * equal computations hash equal. The two inputs of a commutative opspecs
 * operator (OPF_COMMUTATIVE) hash in either order, and an enlarge to the
 * kernel size its input already has hashes as its input. XXH3-64.
 * @pre nodes in topological order (eg_toposort), producers indexed.
 * @return the hash; 0 when out of memory. */
uint64_t eg_graph_hash(const eg_graph *g);

/* The parts of eg_graph_hash, which the search's token hashes start from
 * (trial.h):
 * eg_tensor_hashes fills th[n_tensors] with every tensor's hash (-1 when
 * out of memory, else 0), node by node with eg_node_out_hashes, which sets
 * th of node n's outputs from th of its inputs (buf: room for
 * eg_max_inputs(g) hashes); eg_node_hash is the hash node n gives its
 * output k when its inputs hash as in_hash[0 .. n_in + n_implicit) (-1 for
 * an omitted input); an enlarge for which eg_enlarge_is_identity holds (its
 * input in0 is a kernel of its size already) passes its input's hash on
 * instead; eg_outputs_hash combines the graph outputs' hashes
 * out_hash[n_outputs] into the graph's. */
int eg_tensor_hashes(const eg_graph *g, uint64_t *th);
int eg_max_inputs(const eg_graph *g);
void eg_node_out_hashes(const eg_graph *g, const eg_node *n, uint64_t *th, uint64_t *buf);
uint64_t eg_node_hash(const eg_node *n, const uint64_t *in_hash, int k);
int eg_enlarge_is_identity(const eg_node *n, const eg_shape *in0);
/* Node n's share of a token hash (search.h: a graph's hash is the sum of
 * its nodes' shares): its operator part as in eg_node_hash, its inputs'
 * tokens in_tok (in either order for a commutative operator) and its
 * outputs' tokens out_tok (-1 for an omitted one). An enlarge whose output
 * token is its input's (an identity enlarge) has none: 0. */
uint64_t eg_node_share(const eg_node *n, const uint64_t *in_tok, const uint64_t *out_tok);
uint64_t eg_outputs_hash(const eg_graph *g, const uint64_t *out_hash);

/* Room for extra_nodes more nodes and extra_tensors more tensors without
 * moving the arrays (the slots past the counts are not initialised).
 * @return EG_OK or EG_ENOMEM. */
eg_status eg_graph_reserve(eg_graph *g, int extra_nodes, int extra_tensors);

/* Add a tensor of that name (copied), dtype 0, unknown shape, no flags.
 * @return EG_OK with *id set, EG_EGRAPH when the name exists, EG_ENOMEM. */
eg_status eg_add_tensor(eg_graph *g, const char *name, int *id);

/* @return the id of the tensor of that name, -1 when there is none, or
 *         EG_NAME_RESERVED when a subgraph of an opaque node defines it
 *         (ONNX names are unique across scopes, so it is taken). */
int eg_find_tensor(const eg_graph *g, const char *name);

#define EG_NAME_RESERVED (-2)

/* Mark a name defined inside a subgraph as taken (no-op when the name is
 * a tensor already). @return EG_OK or EG_ENOMEM. */
eg_status eg_reserve_name(eg_graph *g, const char *name);

/* Append a zeroed node of the kind with room for n_in + n_implicit inputs
 * and n_out outputs (all -1) and name "" or a copy of name.
 * @return EG_OK with *id set, or EG_ENOMEM. Pointers into g->node are
 *         invalidated. */
eg_status eg_add_node(eg_graph *g, eg_kind kind, const char *name, int n_in,
                      int n_implicit, int n_out, int *id);


/* Remove every node j with drop[j] != 0, keeping the others' order, and
 * recompute producers. Tensor ids do not change.
 * @return EG_OK, or EG_EGRAPH (message in err) when a remaining node or a
 *         graph output reads a tensor only a removed node wrote. */
eg_status eg_remove_nodes(eg_graph *g, const unsigned char *drop, char *err, size_t errlen);

/* Recompute every tensor's producer and check the graph's structure: each
 * tensor produced at most once and never both produced and an input or a
 * value; every node input and graph output defined. Messages name the
 * node and the tensor. @return EG_OK, EG_EGRAPH. */
eg_status eg_index(eg_graph *g, char *err, size_t errlen);

/* Reorder the nodes topologically, keeping the current order wherever it
 * is already valid. @pre eg_index succeeded.
 * @return EG_OK; EG_EGRAPH with a node on the cycle named; EG_ENOMEM. */
eg_status eg_toposort(eg_graph *g, char *err, size_t errlen);

/* eg_toposort for a caller that names nodes its own way (the importer, by
 * file position): on EG_EGRAPH, *cycle_node is a node on a cycle and
 * *cycle_in the index in its in[] of the input that depends on the node's
 * own output; no message. The order is unchanged then. */
eg_status eg_toposort_at(eg_graph *g, int *cycle_node, int *cycle_in);

/* Count the readers of every tensor (node inputs, implicit ones included,
 * and graph outputs) into uses[n_tensors]. */
void eg_count_uses(const eg_graph *g, int *uses);

/* The readers of every tensor (explicit and implicit inputs), each node
 * once per tensor, in node order: those of tensor t are
 * list[start[t] .. start[t + 1]). Free both. @return EG_OK or EG_ENOMEM. */
eg_status eg_reader_index(const eg_graph *g, int **start, int **list);

/* The last node (in node order) reading each tensor as an explicit input
 * into reader[n_tensors], -1 for none: with uses of 1, its only reader. */
void eg_last_readers(const eg_graph *g, int *reader);

/* Flag every node whose outputs depend only on initializer values and
 * shapes (weight-only: folded to initializers after rewriting, cost 0)
 * into weight_only[n_nodes]. @pre nodes in topological order, producers
 * indexed (eg_index). */
void eg_mark_weight_only(const eg_graph *g, unsigned char *weight_only);
/* The rule eg_mark_weight_only applies to one node n, whose producers
 * below `before` are flagged in weight_only already. */
int eg_node_weight_only(const eg_graph *g, const eg_node *n, int before, const unsigned char *weight_only);

/* ---- shapes and names for display ---- */

/* Number of elements: -1 when a dim or the rank is unknown, -2 when the
 * product does not fit in int64. */
int64_t eg_shape_numel(const eg_shape *s);
/* Number of parameters: elements of all initializers and constants. */
int64_t eg_param_count(const eg_graph *g);
/* 1 when the rank and every dim are known. */
int eg_shape_known(const eg_shape *s);
/* 1 when a and b have the same rank and the same dims (unknown ones -1
 * alike). */
int eg_shape_equal(const eg_shape *a, const eg_shape *b);
/* Input k of node n: its tensor, or NULL when omitted; its shape, or an
 * unknown one when omitted (the accessors every shape rule starts with). */
const eg_tensor *eg_node_in(const eg_graph *g, const eg_node *n, int k);
const eg_shape *eg_node_in_shape(const eg_graph *g, const eg_node *n, int k);
/* 1 when n is a conv2d whose kernel is known to be 1x1. SAME and VALID
 * padding are then the same operator (no padding at any stride), so the
 * engine writes such a conv SAME (at load and in every rewrite) and a
 * rule's conv of either padding matches it: one graph, not a plateau of
 * two spellings the search would wander. */
int eg_conv_1x1(const eg_graph *g, const eg_node *n);
/* Numpy (multidirectional) broadcast of a and b into o, as far as they are
 * known: unknown rank in, unknown rank out; an unknown dim against a
 * known one other than 1 is that one. The one broadcast rule of the shape
 * inference, the constant folder and the lowering. @return 0, or -1 when
 * two known dims differ and neither is 1. */
int eg_shape_broadcast(const eg_shape *a, const eg_shape *b, eg_shape *o);
/* Give t the dtype (0: keep) and the inferred shape s, where what t knew
 * already (the file's value_info) fills what s leaves unknown; dims out of
 * range read as unknown; symbolic dim names survive only at the same
 * rank. Shape inference (infer.c, cfold.c) sets every output through it. */
void eg_tensor_set_inferred(eg_tensor *t, int dtype, const eg_shape *s);
/* "[1,3,?,224]" (or "[?]" for an unknown rank); dim names are used for
 * unknown dims when names is non-NULL. @return buf (at least 160 bytes) */
const char *eg_shape_str(const eg_shape *s, char *const *names, char *buf,
                         size_t len);
/* Convert to an opspecs shape. @return 1 when every dim is known and the
 * result is ten_shape_valid, else 0. */
int eg_to_ten_shape(const eg_shape *s, ten_shape *t);
void eg_from_ten_shape(const ten_shape *t, eg_shape *s);

/* Bytes per element of a fixed-width dtype, 0 for string/unknown. */
size_t eg_dtype_size(int dtype);
const char *eg_dtype_name(int dtype);
const char *eg_status_name(eg_status s);

/* The one error formatter: the message into err (when err and errlen are
 * set), printf-style, and rc back, so a failure reads
 * `return eg_errf(err, errlen, EG_EIO, "%s: cannot write", path);`.
 * eg_verrf takes a va_list (for formatters that put a prefix first). */
eg_status eg_errf(char *err, size_t errlen, eg_status rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
eg_status eg_verrf(char *err, size_t errlen, eg_status rc, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
/* The same after a prefix (a file name, "node 'x' (Op): "). */
eg_status eg_verrf_after(char *err, size_t errlen, eg_status rc, const char *prefix, const char *fmt, va_list ap)
    __attribute__((format(printf, 5, 0)));
/* The same about node n: "node 'name' (Op): " and the message. */
eg_status eg_node_errf(char *err, size_t errlen, eg_status rc, const eg_node *n, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
const char *eg_kind_name(eg_kind k);

/* The operator's display name: the opspecs name ("conv2d"), the ONNX type
 * of a model op ("Gemm"), or "domain:Type" of an opaque node. @return buf
 * or a static string */
const char *eg_node_opname(const eg_node *n, char *buf, size_t len);

/* 1 when an ONNX domain name is the default one ("", NULL or "ai.onnx"). */
int eg_default_domain(const char *domain);

/* ---- graph facts ---- */

/* 1 when t is a rank-1 float initializer of n elements with its data (a
 * bias, a per-channel scale, a batch norm's statistics). */
int eg_float_vec(const eg_graph *g, int t, int64_t n);

/* 1 when t is a graph input, so not a constant: from IR version 4 an
 * initializer listed as an input is a default a caller may replace; before
 * it every initializer had to be listed, and stays a constant. */
int eg_replaceable(const eg_graph *g, int t);


#endif
