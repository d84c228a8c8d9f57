/* rdb_merge.c - rdb_merge (union of two files of one kind, symmetric in
 * its arguments) and rdb_diff (content present in one file only). */
#include "ruledb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdb_int.h"

/* ======================= merge ======================= */

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

static void merge_str(char *dst, const char *a, const char *b) {
    const char *s = !a[0] ? b : !b[0] ? a : strcmp(a, b) == 0 ? a : "mixed";
    snprintf(dst, RDB_NAME_LEN, "%s", s);
}

static int cmp_str_ptr(const void *x, const void *y) {
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Union of both note lists, sorted, duplicates dropped, first 16 kept. */
static void merge_notes(rdb_generator *out, const rdb_generator *a, const rdb_generator *b) {
    const char *all[2 * RDB_MAX_NOTES];
    int n = 0;
    for (int k = 0; k < a->n_notes; k++) all[n++] = a->notes[k];
    for (int k = 0; k < b->n_notes; k++) all[n++] = b->notes[k];
    qsort(all, (size_t)n, sizeof *all, cmp_str_ptr);
    out->n_notes = 0;
    for (int k = 0; k < n && out->n_notes < RDB_MAX_NOTES; k++)
        if (k == 0 || strcmp(all[k], all[k - 1]) != 0)
            snprintf(out->notes[out->n_notes++], RDB_NOTE_LEN, "%s", all[k]);
}

/* Symmetric in a and b, so merge order never shows in the output. */
static void merge_generator(rdb_generator *o, const rdb_generator *a, const rdb_generator *b) {
    merge_str(o->tool, a->tool, b->tool);
    merge_str(o->version, a->version, b->version);
    o->max_ops = a->max_ops > b->max_ops ? a->max_ops : b->max_ops;
    o->seed = a->seed == b->seed ? a->seed : 0;
    o->ops = a->ops | b->ops;
    o->shard_count = a->shard_count == b->shard_count ? a->shard_count : 0;
    o->shard_have = o->shard_count ? a->shard_have | b->shard_have : 0;
    o->counts.graphs = sat_add(a->counts.graphs, b->counts.graphs);
    o->counts.classes = sat_add(a->counts.classes, b->counts.classes);
    o->counts.proved = sat_add(a->counts.proved, b->counts.proved);
    o->counts.failed = sat_add(a->counts.failed, b->counts.failed);
    o->counts.pruned = sat_add(a->counts.pruned, b->counts.pruned);
    o->timings.wall_ms = sat_add(a->timings.wall_ms, b->timings.wall_ms);
    o->timings.cpu_ms = sat_add(a->timings.cpu_ms, b->timings.cpu_ms);
    merge_notes(o, a, b);
}

/* Better prover records first: proved, then faster, then by name. */
static int cmp_prover(const rdb_prover *a, const rdb_prover *b) {
    if (a->status != b->status) return a->status < b->status ? -1 : 1;
    if (a->millis != b->millis) return a->millis < b->millis ? -1 : 1;
    int c = strcmp(a->name, b->name);
    return c ? c : strcmp(a->version, b->version);
}

static int cmp_rule_content(const rdb_rule *a, const rdb_rule *b) {
    int c = rg_compare(&a->src, &b->src);
    return c ? c : rg_compare(&a->dst, &b->dst);
}

static int cmp_rule_ptr(const void *x, const void *y) {
    const rdb_rule *a = *(const rdb_rule *const *)x, *b = *(const rdb_rule *const *)y;
    int c = cmp_rule_content(a, b);
    return c ? c : cmp_prover(&a->prover, &b->prover);
}

static rdb_status merge_rules(rdb_file *o, const rdb_file *a, const rdb_file *b) {
    size_t n = a->n_rules + b->n_rules, k = 0;
    rdb_status rc = RDB_OK;
    const rdb_rule **all = malloc((n ? n : 1) * sizeof *all);
    if (!all) return RDB_ENOMEM;
    for (size_t i = 0; i < a->n_rules; i++) all[k++] = &a->rules[i];
    for (size_t i = 0; i < b->n_rules; i++) all[k++] = &b->rules[i];
    qsort(all, n, sizeof *all, cmp_rule_ptr);
    for (size_t i = 0; i < n && rc == RDB_OK; i++)
        if (i == 0 || cmp_rule_content(all[i], all[i - 1]) != 0)
            rc = rdb_add_rule(o, &all[i]->src, &all[i]->dst, &all[i]->prover);
    free(all);
    return rc;
}

static int cmp_fp(const rdb_class *a, const rdb_class *b) {
    int c = memcmp(a->fp, b->fp, a->fp_len < b->fp_len ? a->fp_len : b->fp_len);
    if (c) return c;
    return (a->fp_len > b->fp_len) - (a->fp_len < b->fp_len);
}

/* Classes merge when fingerprints are byte-identical, the members have as
 * many outputs (the same bytes could split into outputs differently) and
 * the input shapes agree. */
static int cmp_class_key(const rdb_class *a, const rdb_class *b) {
    int c = cmp_fp(a, b);
    if (c) return c;
    int na = a->members[0].n_outputs, nb = b->members[0].n_outputs;
    if (na != nb) return (na > nb) - (na < nb);
    if (a->n_shapes != b->n_shapes) return (a->n_shapes > b->n_shapes) - (a->n_shapes < b->n_shapes);
    for (int k = 0; k < a->n_shapes; k++) {
        const ten_shape *x = &a->shapes[k], *y = &b->shapes[k];
        if (x->rank != y->rank) return (x->rank > y->rank) - (x->rank < y->rank);
        for (int d = 0; d < x->rank; d++)
            if (x->dim[d] != y->dim[d]) return (x->dim[d] > y->dim[d]) - (x->dim[d] < y->dim[d]);
    }
    return 0;
}

static int cmp_class_ptr(const void *x, const void *y) {
    return cmp_class_key(*(const rdb_class *const *)x, *(const rdb_class *const *)y);
}

static int cmp_graph(const void *x, const void *y) { return rg_compare(x, y); }

/* Sort and deduplicate graphs in place. @return the new count. */
static size_t sort_unique(rg_graph *g, size_t n) {
    size_t k = 0;
    qsort(g, n, sizeof *g, cmp_graph);
    for (size_t i = 0; i < n; i++)
        if (k == 0 || !rg_equal(&g[i], &g[k - 1])) g[k++] = g[i];
    return k;
}

/* One output class from the group cl[0..n-1] of equal fingerprints. */
static rdb_status merge_group(rdb_file *o, const rdb_class *const *cl, size_t n) {
    rdb_class *c;
    uint64_t count = 0;
    rdb_status rc = rdb_add_class(o, cl[0]->fp, cl[0]->fp_len, 0, &c);
    if (rc != RDB_OK) return rc;
    c->n_shapes = cl[0]->n_shapes; /* equal in the group: part of the key */
    memcpy(c->shapes, cl[0]->shapes, sizeof c->shapes);
    for (size_t i = 0; i < n; i++) {
        count = sat_add(count, cl[i]->count);
        for (size_t m = 0; m < cl[i]->n_members && rc == RDB_OK; m++)
            rc = rdb_class_add_member(c, &cl[i]->members[m]);
    }
    c->count = count;
    c->n_members = sort_unique(c->members, c->n_members);
    return rc;
}

static rdb_status merge_classes(rdb_file *o, const rdb_file *a, const rdb_file *b) {
    size_t n = a->n_classes + b->n_classes, k = 0;
    rdb_status rc = RDB_OK;
    const rdb_class **all = malloc((n ? n : 1) * sizeof *all);
    if (!all) return RDB_ENOMEM;
    for (size_t i = 0; i < a->n_classes; i++) all[k++] = &a->classes[i];
    for (size_t i = 0; i < b->n_classes; i++) all[k++] = &b->classes[i];
    qsort(all, n, sizeof *all, cmp_class_ptr);
    for (size_t i = 0, j; i < n && rc == RDB_OK; i = j) {
        for (j = i + 1; j < n && cmp_class_key(all[i], all[j]) == 0; j++) continue;
        rc = merge_group(o, all + i, j - i);
    }
    free(all);
    return rc;
}

rdb_status rdb_merge(const rdb_file *a, const rdb_file *b, rdb_file **out, char *err,
                     size_t errlen) {
    rdb_status rc;
    char why[RDB_ERRLEN];
    *out = NULL;
    if (rdb_validate(a, why, sizeof why) != RDB_OK || rdb_validate(b, why, sizeof why) != RDB_OK)
        return rdb__efmt(err, errlen, RDB_EINVAL, "%s", why);
    if (a->kind != b->kind)
        return rdb__efmt(err, errlen, RDB_EINVAL, "cannot merge a %s file with a %s file",
                    rdb_kind_name(a->kind), rdb_kind_name(b->kind));
    if (memcmp(a->digest, b->digest, 16) != 0)
        return rdb__efmt(err, errlen, RDB_EDIGEST, "files made from different opspecs");
    rdb_file *o = rdb_new(a->kind);
    if (!o) return rdb__efmt(err, errlen, RDB_ENOMEM, "out of memory");
    memcpy(o->digest, a->digest, 16);
    merge_generator(&o->gen, &a->gen, &b->gen);
    rc = a->kind == RDB_RULES ? merge_rules(o, a, b) : merge_classes(o, a, b);
    if (rc != RDB_OK) {
        rdb_free(o);
        return rdb__efmt(err, errlen, rc, "out of memory");
    }
    *out = o;
    return RDB_OK;
}

/* ======================= diff ======================= */

/* A rule or class reduced to its content, with its index. A class's
 * members are sorted and deduplicated so sets compare element-wise. */
typedef struct {
    const rdb_rule *rule;
    const rdb_class *cls;
    rg_graph *set;
    size_t n_set;
    size_t idx;
} diff_item;

static int cmp_item(const void *x, const void *y) {
    const diff_item *a = x, *b = y;
    if (a->rule) return cmp_rule_content(a->rule, b->rule);
    int c = cmp_fp(a->cls, b->cls);
    for (size_t i = 0; !c && i < a->n_set && i < b->n_set; i++)
        c = rg_compare(&a->set[i], &b->set[i]);
    return c ? c : (a->n_set > b->n_set) - (a->n_set < b->n_set);
}

static void free_items(diff_item *it, size_t n) {
    for (size_t i = 0; it && i < n; i++) free(it[i].set);
    free(it);
}

/* The content items of f, sorted. */
static rdb_status make_items(const rdb_file *f, diff_item **out, size_t *n_out) {
    size_t n = f->kind == RDB_RULES ? f->n_rules : f->n_classes;
    diff_item *it = calloc(n ? n : 1, sizeof *it);
    *out = it;
    *n_out = n;
    if (!it) return RDB_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        it[i].idx = i;
        if (f->kind == RDB_RULES) {
            it[i].rule = &f->rules[i];
            continue;
        }
        const rdb_class *c = it[i].cls = &f->classes[i];
        it[i].set = malloc((c->n_members ? c->n_members : 1) * sizeof *it[i].set);
        if (!it[i].set) return RDB_ENOMEM;
        if (c->n_members) memcpy(it[i].set, c->members, c->n_members * sizeof *c->members);
        it[i].n_set = sort_unique(it[i].set, c->n_members);
    }
    qsort(it, n, sizeof *it, cmp_item);
    return RDB_OK;
}

static int cmp_size(const void *x, const void *y) {
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return (a > b) - (a < b);
}

/* Walk both sorted lists; unmatched items go to the only_* lists. */
static void diff_walk(const diff_item *a, size_t na, const diff_item *b, size_t nb,
                      rdb_delta *d) {
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
        int c = i == na ? 1 : j == nb ? -1 : cmp_item(&a[i], &b[j]);
        if (c < 0) d->only_a[d->n_only_a++] = a[i++].idx;
        else if (c > 0) d->only_b[d->n_only_b++] = b[j++].idx;
        else i++, j++;
    }
    qsort(d->only_a, d->n_only_a, sizeof *d->only_a, cmp_size);
    qsort(d->only_b, d->n_only_b, sizeof *d->only_b, cmp_size);
}

rdb_status rdb_diff(const rdb_file *a, const rdb_file *b, rdb_delta *d) {
    diff_item *ia = NULL, *ib = NULL;
    size_t na = 0, nb = 0;
    rdb_status rc;
    memset(d, 0, sizeof *d);
    rc = make_items(a, &ia, &na);
    if (rc == RDB_OK) rc = make_items(b, &ib, &nb);
    if (rc != RDB_OK) goto cleanup;
    d->only_a = malloc((na ? na : 1) * sizeof *d->only_a);
    d->only_b = malloc((nb ? nb : 1) * sizeof *d->only_b);
    if (!d->only_a || !d->only_b) {
        rc = RDB_ENOMEM;
        goto cleanup;
    }
    if (a->kind == b->kind) {
        diff_walk(ia, na, ib, nb, d);
    } else { /* nothing in common */
        for (size_t i = 0; i < na; i++) d->only_a[d->n_only_a++] = i;
        for (size_t j = 0; j < nb; j++) d->only_b[d->n_only_b++] = j;
    }
cleanup:
    free_items(ia, na);
    free_items(ib, nb);
    if (rc != RDB_OK) rdb_delta_free(d);
    return rc;
}

void rdb_delta_free(rdb_delta *d) {
    free(d->only_a);
    free(d->only_b);
    memset(d, 0, sizeof *d);
}
