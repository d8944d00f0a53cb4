// accelctl's command line: one CLI11 app; each command group registers itself from its own
// file (config_command.cc now; the control-plane commands — submit, watch, ... — join here).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "engine/config/document.h"

namespace accel::client {

// Runs accelctl with `args` (without the program name). `env` is the environment the config
// commands see (FSDP_* and ACCELERATE_* variables). Returns the process exit code: 0 success,
// 2 invalid input or usage, 1 other failures.
int RunAccelctl(const std::vector<std::string>& args, const config::EnvMap& env,
                std::ostream& out, std::ostream& err);

// The FSDP_* and ACCELERATE_* variables of a POSIX environ array.
config::EnvMap ConfigEnvironment(char** environ_array);

}  // namespace accel::client
