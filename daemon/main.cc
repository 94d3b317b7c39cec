// irontuned: see daemon/server/cli.h and docs/operations.md.
#include "daemon/server/cli.h"

int main(int argc, char** argv) { return irontune::IrontunedMain(argc, argv); }
