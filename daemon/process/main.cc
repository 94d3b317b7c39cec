// irontuned: see daemon/process/cli.h and docs/operations.md.
#include "daemon/process/cli.h"

int main(int argc, char** argv) { return irontune::IrontunedMain(argc, argv); }
