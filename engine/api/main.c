/* main.c - the engine program's entry point; everything else is in cli.c. */
#include "onnx/engine.h"

int main(int argc, char **argv) { return eg_cli_main(argc, argv); }
