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
// child is then killed). The timeout is multiplied by TimeScale().
int WaitProcess(const ChildProcess& child, double timeout_s);

// How many times longer than in the plain build the tests' deadlines are: the environment
// variable ACCEL_TEST_TIME_SCALE (a number >= 1; unset: 1). scripts/sanitize.sh sets it, since
// a sanitizer slows the processes a test waits on several times over and the plain build's
// deadlines, sized for a loaded machine, then fail on time alone. A malformed value exits the
// test with a one-line error.
double TimeScale();
// A TCP port the kernel just handed out (bound on every address) and released: free unless
// something races for it. -1 when binding fails.
int FreePort();
// Pids (other than this process) whose command line contains `needle`: what a test left running.
std::vector<pid_t> ProcessesMentioning(const std::string& needle);
std::string ReadAll(const std::string& path);

}  // namespace accel::testing
