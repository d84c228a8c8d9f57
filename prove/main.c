/* main.c - the prove tool's entry point; everything else is in cli.c. */
#include "prove.h"

int main(int argc, char **argv) { return pv_cli_main(argc, argv); }
