// accelctl: the command-line client. Subcommands live in their own files; see accelctl.h.
#include <iostream>
#include <string>
#include <vector>

#include "client/accelctl.h"

extern char** environ;

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return accel::client::RunAccelctl(args, accel::client::ConfigEnvironment(environ), std::cout,
                                    std::cerr);
}
