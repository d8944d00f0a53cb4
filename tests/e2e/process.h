// Test helper: runs a program as a child process with stdout/stderr captured to files.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace accel::testing {

struct ChildProcess {
  pid_t pid = -1;
  std::string stdout_path, stderr_path;
};

// Starts argv[0] with argv; output goes to files under `dir` named after `name`.
ChildProcess StartProcess(const std::vector<std::string>& argv, const std::string& dir,
                          const std::string& name);
// Waits for exit; returns the exit status (128 + signal when killed), or -1 on timeout (the
// child is then killed).
int WaitProcess(const ChildProcess& child, double timeout_s);
std::string ReadAll(const std::string& path);

}  // namespace accel::testing
