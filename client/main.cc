// irontune-client: see client/cli.h.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "client/cli.h"

int main(int argc, char** argv) {
  irontune::ClientEnvironment env;
  if (const char* server = std::getenv("IRONTUNE_SERVER")) env.server = server;
  if (const char* user = std::getenv("USER")) env.user = user;
  env.err_is_terminal = isatty(STDERR_FILENO) == 1;
  return irontune::RunClient(argc, argv, std::cout, std::cerr, env);
}
