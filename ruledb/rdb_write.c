/* rdb_write.c - the ruledb writer: msgpack-c encoding and the atomic
 * replace (write PATH.tmp.PID, fsync, rename). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "ruledb.h"

#include <errno.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "afile.h"
#include "rdb_int.h"

/* ======================= writer ======================= */

static int pk_str(msgpack_packer *pk, const char *s) {
    size_t n = strlen(s);
    return msgpack_pack_str(pk, n) || msgpack_pack_str_body(pk, s, n);
}

static uint32_t value_number(const rg_graph *g, rg_ref r) {
    return RG_IS_INPUT(r) ? r : (uint32_t)(g->n_inputs + RG_NODE_INDEX(r));
}

static int pk_node(msgpack_packer *pk, const rg_graph *g, const rg_node *n) {
    const ops_info *o = &ops_table[n->op];
    if (msgpack_pack_array(pk, 3) || pk_str(pk, o->name) ||
        msgpack_pack_array(pk, (size_t)o->n_params))
        return -1;
    for (int k = 0; k < o->n_params; k++)
        if (msgpack_pack_int32(pk, n->param[k])) return -1;
    if (msgpack_pack_array(pk, (size_t)o->arity)) return -1;
    for (int k = 0; k < o->arity; k++)
        if (msgpack_pack_uint32(pk, value_number(g, n->in[k]))) return -1;
    return 0;
}

static int pk_graph(msgpack_packer *pk, const rg_graph *g) {
    if (msgpack_pack_map(pk, 3) || pk_str(pk, "inputs") ||
        msgpack_pack_uint32(pk, (uint32_t)g->n_inputs) || pk_str(pk, "nodes") ||
        msgpack_pack_array(pk, (size_t)g->n_nodes))
        return -1;
    for (int j = 0; j < g->n_nodes; j++)
        if (pk_node(pk, g, &g->node[j])) return -1;
    if (pk_str(pk, "outputs") || msgpack_pack_array(pk, (size_t)g->n_outputs)) return -1;
    for (int k = 0; k < g->n_outputs; k++)
        if (msgpack_pack_uint32(pk, value_number(g, g->out[k]))) return -1;
    return 0;
}

static int pk_kv_u64(msgpack_packer *pk, const char *k, uint64_t v) {
    return pk_str(pk, k) || msgpack_pack_uint64(pk, v);
}

static int pk_shard(msgpack_packer *pk, const rdb_generator *g) {
    size_t n = 0;
    for (int k = 0; k < RDB_MAX_SHARDS; k++) n += g->shard_have >> k & 1;
    if (pk_str(pk, "shard") || msgpack_pack_map(pk, 2) ||
        pk_kv_u64(pk, "count", g->shard_count) || pk_str(pk, "have") ||
        msgpack_pack_array(pk, n))
        return -1;
    for (int k = 0; k < RDB_MAX_SHARDS; k++)
        if ((g->shard_have >> k & 1) && msgpack_pack_uint32(pk, (uint32_t)k)) return -1;
    return 0;
}

static int pk_ops(msgpack_packer *pk, ops_set ops) {
    size_t n = 0;
    for (int i = 0; i < OP_COUNT; i++) n += ops >> i & 1;
    if (pk_str(pk, "ops") || msgpack_pack_array(pk, n)) return -1;
    for (int i = 0; i < OP_COUNT; i++)
        if ((ops >> i & 1) && pk_str(pk, ops_table[i].name)) return -1;
    return 0;
}

static int pk_generator(msgpack_packer *pk, const rdb_generator *g) {
    if (pk_str(pk, "generator") || msgpack_pack_map(pk, 9) || pk_str(pk, "tool") ||
        pk_str(pk, g->tool) || pk_str(pk, "version") || pk_str(pk, g->version) ||
        pk_kv_u64(pk, "max_ops", g->max_ops) || pk_kv_u64(pk, "seed", g->seed) ||
        pk_ops(pk, g->ops) || pk_shard(pk, g) || pk_str(pk, "counts") ||
        msgpack_pack_map(pk, 5) || pk_kv_u64(pk, "graphs", g->counts.graphs) ||
        pk_kv_u64(pk, "classes", g->counts.classes) ||
        pk_kv_u64(pk, "proved", g->counts.proved) ||
        pk_kv_u64(pk, "failed", g->counts.failed) ||
        pk_kv_u64(pk, "pruned", g->counts.pruned) || pk_str(pk, "timings") ||
        msgpack_pack_map(pk, 2) || pk_kv_u64(pk, "wall_ms", g->timings.wall_ms) ||
        pk_kv_u64(pk, "cpu_ms", g->timings.cpu_ms) || pk_str(pk, "notes") ||
        msgpack_pack_array(pk, (size_t)g->n_notes))
        return -1;
    for (int k = 0; k < g->n_notes; k++)
        if (pk_str(pk, g->notes[k])) return -1;
    return 0;
}

static int pk_rule(msgpack_packer *pk, const rdb_rule *r) {
    return msgpack_pack_map(pk, 4) || pk_kv_u64(pk, "id", r->id) || pk_str(pk, "src") ||
           pk_graph(pk, &r->src) || pk_str(pk, "dst") || pk_graph(pk, &r->dst) ||
           pk_str(pk, "prover") || msgpack_pack_map(pk, 4) || pk_str(pk, "name") ||
           pk_str(pk, r->prover.name) || pk_str(pk, "version") ||
           pk_str(pk, r->prover.version) || pk_kv_u64(pk, "millis", r->prover.millis) ||
           pk_str(pk, "status") || pk_str(pk, rdb__proof_names[r->prover.status]);
}

static int pk_class(msgpack_packer *pk, const rdb_class *c) {
    if (msgpack_pack_map(pk, 4) || pk_str(pk, "fingerprint") ||
        msgpack_pack_bin(pk, c->fp_len) || msgpack_pack_bin_body(pk, c->fp, c->fp_len) ||
        pk_str(pk, "shapes") || msgpack_pack_array(pk, (size_t)c->n_shapes))
        return -1;
    for (int k = 0; k < c->n_shapes; k++) {
        if (msgpack_pack_array(pk, (size_t)c->shapes[k].rank)) return -1;
        for (int d = 0; d < c->shapes[k].rank; d++)
            if (msgpack_pack_uint32(pk, (uint32_t)c->shapes[k].dim[d])) return -1;
    }
    if (pk_str(pk, "members") || msgpack_pack_array(pk, c->n_members)) return -1;
    for (size_t m = 0; m < c->n_members; m++)
        if (pk_graph(pk, &c->members[m])) return -1;
    return pk_kv_u64(pk, "count", c->count);
}

static int pk_file(msgpack_packer *pk, const rdb_file *f) {
    int rules = f->kind == RDB_RULES;
    if (msgpack_pack_map(pk, 6) || pk_str(pk, "magic") || pk_str(pk, RDB_MAGIC) ||
        pk_kv_u64(pk, "version", RDB_VERSION) || pk_str(pk, "kind") ||
        pk_str(pk, rdb_kind_name(f->kind)) || pk_str(pk, "opspecs") ||
        msgpack_pack_bin(pk, 16) || msgpack_pack_bin_body(pk, f->digest, 16) ||
        pk_generator(pk, &f->gen) || pk_str(pk, rules ? "rules" : "classes") ||
        msgpack_pack_array(pk, rules ? f->n_rules : f->n_classes))
        return -1;
    for (size_t i = 0; rules && i < f->n_rules; i++)
        if (pk_rule(pk, &f->rules[i])) return -1;
    for (size_t i = 0; !rules && i < f->n_classes; i++)
        if (pk_class(pk, &f->classes[i])) return -1;
    return 0;
}

rdb_status rdb_write_mem(const rdb_file *f, uint8_t **buf, size_t *len, char *err,
                         size_t errlen) {
    msgpack_sbuffer sb;
    msgpack_packer pk;
    *buf = NULL;
    *len = 0;
    if (rdb_validate(f, err, errlen) != RDB_OK) return RDB_EINVAL;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    if (pk_file(&pk, f) != 0) {
        msgpack_sbuffer_destroy(&sb);
        return rdb__efmt(err, errlen, RDB_ENOMEM, "out of memory while encoding");
    }
    *len = sb.size;
    *buf = (uint8_t *)msgpack_sbuffer_release(&sb); /* malloc'd by the sbuffer */
    return RDB_OK;
}

rdb_status rdb_write(const char *path, const rdb_file *f, char *err, size_t errlen) {
    uint8_t *buf = NULL;
    size_t len;
    char why[RDB_ERRLEN];
    rdb_status rc = rdb_write_mem(f, &buf, &len, why, sizeof why);
    if (rc != RDB_OK) rdb__efmt(err, errlen, rc, "%s: %s", path, why);
    else if (af_write(path, buf, len) != 0)
        rc = rdb__efmt(err, errlen, errno == ENOMEM ? RDB_ENOMEM : RDB_EIO, "%s: cannot write: %s", path, strerror(errno));
    free(buf);
    return rc;
}
