// Refusal before OOM, for real: accel-worker --standalone inside a memory cgroup (v1) with a
// 300 MiB limit. A plan that cannot fit exits 1 at start with one line naming the pool, the bytes
// and the cgroup's limit file, and what would fit; following that advice runs to the end, with
// the cgroup's usage and limit in the rank statistics; and the same job forced past the check
// with --ignore-memory-plan is what the check saved it from: the OOM killer (SIGKILL).
// Needs root and the cgroup v1 memory controller; skipped with the reason otherwise.
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/base/env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/memory_cgroup.h"
#include "tests/e2e/process.h"

namespace accel::testing {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kLimit = int64_t{300} << 20;

class MemoryCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = MemoryCgroup::WhyUnavailable(); !why.empty()) GTEST_SKIP() << why;
    dir_ = ::testing::TempDir() + "/memory_cgroup_" + std::to_string(::getpid());
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_).ok());
    absl::StatusOr<MemoryCgroup> cgroup =
        MemoryCgroup::Create("accel_memplan_" + std::to_string(::getpid()), kLimit);
    ASSERT_TRUE(cgroup.ok()) << cgroup.status();
    cgroup_ = std::make_unique<MemoryCgroup>(std::move(*cgroup));
  }
  void TearDown() override {
    cgroup_.reset();  // every child has exited (WaitProcess): the cgroup is empty and can go
    if (!dir_.empty()) (void)Env::Default()->DeleteRecursively(dir_);
  }

  // accel-worker gpt2-mini at T=256 inside the cgroup: {exit code, stdout, stderr}.
  struct Outcome {
    int code;
    std::string out, err;
  };
  Outcome RunInCgroup(const std::vector<std::string>& extra, const std::string& name) {
    std::vector<std::string> argv = {ACCEL_WORKER_BIN, "--standalone", "--model", "gpt2-mini",
                                     "--seq", "256", "--data", ACCEL_DATA, "--threads", "1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    ChildProcess c = StartProcess(cgroup_->Wrap(argv), dir_, name);
    const int code = WaitProcess(c, 300);
    return {code, ReadAll(c.stdout_path), ReadAll(c.stderr_path)};
  }

  std::string dir_;
  std::unique_ptr<MemoryCgroup> cgroup_;
};

TEST_F(MemoryCgroupTest, RefusesAtStartWhatCannotFitAndRunsWhatCan) {
  // B=16: about 245 MiB of planned buffers, beside what the process holds of its own.
  Outcome refused = RunInCgroup({"--batch", "16", "--steps", "1"}, "refused");
  EXPECT_EQ(refused.code, 1) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("memory plan does not fit: the compute pool needs "));
  EXPECT_THAT(refused.err, HasSubstr("activations 228.3 MiB"));
  EXPECT_THAT(refused.err, HasSubstr(" of RAM, available "));
  EXPECT_THAT(refused.err, HasSubstr("memory cgroup limit 300.0 MiB in " + cgroup_->path() +
                                     "/memory.limit_in_bytes"));
  EXPECT_THAT(refused.err, HasSubstr("would fit with: activation_checkpointing"));
  EXPECT_THAT(refused.err, HasSubstr("--ignore-memory-plan"));
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;

  // The advice fits: it trains to the end, and its records carry the cgroup's numbers.
  Outcome ran = RunInCgroup(
      {"--batch", "16", "--steps", "2", "--activation-checkpointing", "--output", "json"}, "ran");
  ASSERT_EQ(ran.code, 0) << ran.err;
  int steps = 0;
  std::istringstream lines(ran.out);
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (!j.contains("ranks")) continue;
    ++steps;
    const nlohmann::json& process = j["ranks"][0]["process"];
    EXPECT_EQ(process["cgroup_limit"], kLimit) << line;
    EXPECT_GT(process["cgroup_usage"].get<int64_t>(), 0) << line;
    EXPECT_LE(process["cgroup_usage"].get<int64_t>(), kLimit) << line;
    EXPECT_GT(process["peak_rss"].get<int64_t>(), 0) << line;
  }
  EXPECT_EQ(steps, 2) << ran.out;

  // Forced past the check, the refused job meets the OOM killer instead.
  Outcome forced =
      RunInCgroup({"--batch", "16", "--steps", "1", "--ignore-memory-plan"}, "forced");
  EXPECT_EQ(forced.code, 128 + 9) << forced.err;
}

}  // namespace
}  // namespace accel::testing
