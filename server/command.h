// RunCommand: runs a short helper program (sbatch, scontrol, scancel, kubectl) to completion
// with a deadline, capturing what it prints. The child dies with acceld (parent-death signal)
// and is killed, with its process group, when the deadline passes.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace accel::server {

struct CommandResult {
  int exit_code = 0;  // -1 when killed by a signal
  std::string out;    // stdout, at most 1 MiB
  std::string err;    // stderr, at most 1 MiB
  bool ok() const { return exit_code == 0; }
};

// argv[0] is looked up in PATH. Unavailable naming the program when it cannot be started, or
// DeadlineExceeded naming it when it runs past `timeout`. A non-zero exit is not an error here:
// the result says it.
[[nodiscard]] absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                                       absl::Duration timeout);

// What launchers call, so tests can answer for the cluster's commands.
using CommandRunner = std::function<absl::StatusOr<CommandResult>(
    const std::vector<std::string>& argv, absl::Duration timeout)>;

}  // namespace accel::server
