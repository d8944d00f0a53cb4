#include "tests/e2e/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace accel::testing {

ChildProcess StartProcess(const std::vector<std::string>& argv, const std::string& dir,
                          const std::string& name) {
  ChildProcess c;
  c.stdout_path = dir + "/" + name + ".out";
  c.stderr_path = dir + "/" + name + ".err";
  c.pid = fork();
  if (c.pid == 0) {
    int out = open(c.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(c.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return c;
}

double TimeScale() {
  static const double scale = [] {
    const char* text = std::getenv("ACCEL_TEST_TIME_SCALE");
    if (text == nullptr || *text == '\0') return 1.0;
    char* end = nullptr;
    const double v = std::strtod(text, &end);
    if (*end != '\0' || !(v >= 1 && v <= 1000)) {
      std::fprintf(stderr, "ACCEL_TEST_TIME_SCALE=%s: expected a number from 1 to 1000\n", text);
      std::exit(2);
    }
    return v;
  }();
  return scale;
}

int WaitProcess(const ChildProcess& child, double timeout_s) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s * TimeScale());
  while (true) {
    int status = 0;
    pid_t r = waitpid(child.pid, &status, WNOHANG);
    if (r == child.pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return -2;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child.pid, SIGKILL);
      waitpid(child.pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace accel::testing
