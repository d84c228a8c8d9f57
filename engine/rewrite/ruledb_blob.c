/* ruledb_blob.c - the shipped ruledb (ruledb/default.tasodb) linked into
 * the engine, so `engine optimize` and programs that link libengine need
 * no file at run time. The bytes are pulled in by the assembler's .incbin
 * (the build runs from the source root and lists the file as a dependency);
 * they are parsed and validated like any ruledb file when used. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ruledb.h"
#include "rewrite/rules.h"

extern const uint8_t eg_shipped_ruledb[], eg_shipped_ruledb_end[];

__asm__(".section .rodata\n"
        ".balign 16\n"
        ".globl eg_shipped_ruledb\n"
        "eg_shipped_ruledb:\n"
        ".incbin \"ruledb/default.tasodb\"\n"
        ".globl eg_shipped_ruledb_end\n"
        "eg_shipped_ruledb_end:\n"
        ".previous\n");

eg_status eg_ruleset_shipped(eg_ruleset **out, char *err, size_t errlen) {
    rdb_file *f = NULL;
    char rerr[RDB_ERRLEN];
    size_t len = (size_t)(eg_shipped_ruledb_end - eg_shipped_ruledb);
    *out = NULL;
    rdb_status rs = rdb_read_mem(eg_shipped_ruledb, len, &f, rerr, sizeof rerr);
    if (rs != RDB_OK) {
        snprintf(err, errlen, "the shipped ruledb: %s", rerr);
        return rs == RDB_ENOMEM ? EG_ENOMEM : EG_EFORMAT;
    }
    eg_status rc = eg_ruleset_from_rdb(f, out, err, errlen);
    rdb_free(f);
    return rc;
}
