/* main.c - the ruledb tool's entry point; everything else is in cli.c. */
#include "ruledb.h"

int main(int argc, char **argv) { return rdb_cli_main(argc, argv); }
