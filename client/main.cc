// irontune-client: see client/cli.h.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "client/cli.h"

int main(int argc, char** argv) {
  irontune::ClientEnvironment env;
  if (const char* server = std::getenv("IRONTUNE_SERVER")) env.server = server;
  if (const char* token = std::getenv("IRONTUNE_TOKEN")) env.token = token;
  if (const char* user = std::getenv("USER")) env.user = user;
  env.err_is_terminal = isatty(STDERR_FILENO) == 1;
  winsize size{};
  if (env.err_is_terminal && ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 &&
      size.ws_col > 0) {
    env.terminal_width = size.ws_col - 1;  // never wrap onto a second line
  }
  return irontune::RunClient(argc, argv, std::cout, std::cerr, env);
}
