/* main.c - the synth program: everything is in cli.c (syn_cli_main). */
#include "synth.h"

int main(int argc, char **argv) { return syn_cli_main(argc, argv); }
