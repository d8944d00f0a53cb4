// Faults and checks for the chaos test (controlplane_chaos_test.cc): a small tmpfs for the
// checkpoints, a ballast file that fills it, per-process inspection (/proc), and the two
// end-of-run checks on checkpoint directories — every step present is committed and verifies,
// and two final steps hold bit-identical training state. Header-only test code.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/base/env.h"
#include "engine/checkpoint/inspect.h"
#include "engine/checkpoint/step_reader.h"
#include "gtest/gtest.h"
#include "tests/controlplane/daemon_harness.h"

namespace accel::chaos_testing {

namespace fs = std::filesystem;
using controlplane_testing::ProcStrings;

// A tmpfs of `megabytes` mounted at `dir` for the test's life (needs root); unmounted lazily at
// the end so a process that still had a file open cannot keep the mount around.
class Tmpfs {
 public:
  Tmpfs(std::string dir, int megabytes) : dir_(std::move(dir)) {
    fs::create_directories(dir_);
    const std::string options = "size=" + std::to_string(megabytes) + "m,mode=0755";
    if (mount("accel-chaos", dir_.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      error_ = "mount -t tmpfs -o " + options + " " + dir_ + ": " + std::strerror(errno);
    }
  }
  ~Tmpfs() {
    if (error_.empty()) umount2(dir_.c_str(), MNT_DETACH);
  }
  Tmpfs(const Tmpfs&) = delete;
  Tmpfs& operator=(const Tmpfs&) = delete;
  const std::string& error() const { return error_; }  // empty when mounted

 private:
  std::string dir_, error_;
};

// Fills the filesystem holding `path` with the file `path` up to the last byte, then gives
// `room` bytes back (0: a write past the end is ENOSPC). Returns the bytes the file holds.
inline int64_t FillWithBallast(const std::string& path, int64_t room) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return -1;
  std::vector<char> chunk(1 << 16, 'x');
  int64_t total = 0;
  for (;;) {  // tmpfs allocates on write; stop at the first short or failed write
    const ssize_t n = write(fd, chunk.data(), chunk.size());
    if (n <= 0) break;
    total += n;
    if (static_cast<size_t>(n) < chunk.size()) break;
  }
  total = std::max<int64_t>(0, total - room);
  if (ftruncate(fd, total) != 0) total = -1;
  close(fd);
  return total;
}

// The RANK a worker was started with, -1 if the process is gone.
inline int RankOf(pid_t pid) {
  for (const std::string& var : ProcStrings(pid, "environ")) {
    if (var.rfind("RANK=", 0) == 0) return std::stoi(var.substr(5));
  }
  return -1;
}

// 'R', 'S', 'T', 'Z', ... from /proc/<pid>/stat; 0 when the process is gone.
inline char ProcState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  const size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() ? 0 : line[paren + 2];
}

// Live (non-zombie) processes that belong to this test: an acceld whose command line names a
// path under `dir`, or a worker whose environment names `coordinator`.
inline std::vector<std::string> LeftoverProcesses(const std::string& dir,
                                                  const std::string& coordinator) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(name);
    const char state = ProcState(pid);
    if (state == 0 || state == 'Z' || pid == getpid()) continue;
    bool ours = false;
    for (const std::string& arg : ProcStrings(pid, "cmdline")) {
      ours = ours || arg.rfind(dir, 0) == 0;
    }
    for (const std::string& var : ProcStrings(pid, "environ")) {
      ours = ours || var == "ACCEL_COORDINATOR=" + coordinator;
    }
    if (ours) {
      const std::vector<std::string> argv = ProcStrings(pid, "cmdline");
      out.push_back(name + " (" + (argv.empty() ? "?" : argv[0]) + ", state " + state + ")");
    }
  }
  return out;
}

// Every step directory under `dir` is committed and every checksum in it verifies, no
// uncommitted step_N.tmp is left, and `latest` names step_<final_step>.
inline void ExpectCheckpointDirIntact(const std::string& dir, int64_t final_step) {
  absl::StatusOr<checkpoint::InspectReport> report =
      checkpoint::InspectCheckpoints(Env::Default(), dir, /*verify=*/true);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok()) << checkpoint::InspectReportToText(*report);
  EXPECT_FALSE(report->steps.empty()) << dir;
  for (const checkpoint::StepReport& step : report->steps) {
    EXPECT_TRUE(step.complete && step.verified) << step.path << ": " << step.status;
  }
  EXPECT_EQ(report->latest, "step_" + std::to_string(final_step)) << dir;
}

// The parameters and both AdamW moments of two committed steps are bit-identical.
inline void ExpectSameTrainingState(const std::string& want_dir, const std::string& got_dir) {
  auto want = checkpoint::StepReader::Open(Env::Default(), want_dir);
  auto got = checkpoint::StepReader::Open(Env::Default(), got_dir);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  const int64_t n = (*want)->metadata().num_params;
  ASSERT_EQ((*got)->metadata().num_params, n);
  EXPECT_EQ((*got)->metadata().meta.step, (*want)->metadata().meta.step);
  EXPECT_EQ((*got)->metadata().meta.optimizer_step, (*want)->metadata().meta.optimizer_step);
  const char* names[] = {"params", "exp_avg", "exp_avg_sq"};
  for (int s = 0; s < checkpoint::kNumSections; ++s) {
    std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    const auto section = static_cast<checkpoint::Section>(s);
    ASSERT_TRUE((*want)->Read(section, 0, n, a.data()).ok());
    ASSERT_TRUE((*got)->Read(section, 0, n, b.data()).ok());
    int64_t differing = 0, first = -1;
    for (int64_t i = 0; i < n; ++i) {
      if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
        if (first < 0) first = i;
        ++differing;
      }
    }
    EXPECT_EQ(differing, 0) << names[s] << " of " << got_dir << " differs from " << want_dir
                            << " in " << differing << " of " << n << " elements, first at " << first
                            << " (" << b[first] << " vs " << a[first] << ")";
  }
}

}  // namespace accel::chaos_testing
