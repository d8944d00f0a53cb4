// RunCommand: runs a short helper program (sbatch, scontrol, scancel, kubectl) to completion
// with a deadline, capturing what it prints. The child dies with acceld (parent-death signal)
// and is killed, with its process group, when the deadline passes.
#pragma once

#include <sys/types.h>

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

// The child's half of starting a process, between fork and exec (only async-signal-safe calls):
// its own process group, SIGKILL when `parent` (acceld) dies, default signal dispositions and an
// empty mask, stdin from /dev/null, stdout and stderr to the given fds, every other fd closed;
// then execve(argv, envp), or execvp(argv) keeping the inherited environment when envp is null.
// Exits 127 when exec fails (125 when the parent died before the death signal took effect).
[[noreturn]] void ExecChild(pid_t parent, int out_fd, int err_fd, char* const* argv,
                            char* const* envp);

// What launchers call, so tests can answer for the cluster's commands.
using CommandRunner = std::function<absl::StatusOr<CommandResult>(
    const std::vector<std::string>& argv, absl::Duration timeout)>;

}  // namespace accel::server
