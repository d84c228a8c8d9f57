/* ruledb_blob.c - the shipped ruledb (ruledb/pruned.tasodb) linked into
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
        ".incbin \"ruledb/pruned.tasodb\"\n"
        ".globl eg_shipped_ruledb_end\n"
        "eg_shipped_ruledb_end:\n"
        ".previous\n");

eg_status eg_ruleset_shipped(eg_ruleset **out, char *err, size_t errlen) {
    return eg_ruleset_from_bytes(eg_shipped_ruledb, (size_t)(eg_shipped_ruledb_end - eg_shipped_ruledb), out, err,
                                 errlen);
}
