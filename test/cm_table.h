/* cm_table.h - register a table of cmocka cases: every row of a table
 * (each with an `id` string) becomes one test named by its id, run by fn
 * with the row as its state, so a TAP line names the row that failed.
 * Include after <cmocka.h>. */
#ifndef TEST_CM_TABLE_H
#define TEST_CM_TABLE_H

#define ADD_TABLE(tests, n, table, count, fn)                                   \
    for (size_t i_ = 0; i_ < (count); i_++)                                     \
        tests[n++] = (struct CMUnitTest){table[i_].id, fn, NULL, NULL, (void *)&table[i_]}

#endif
