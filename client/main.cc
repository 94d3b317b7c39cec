// irontune-client: see client/cli.h.
#include <iostream>

#include "client/cli.h"

int main(int argc, char** argv) {
  return irontune::RunClient(argc, argv, std::cout, std::cerr);
}
