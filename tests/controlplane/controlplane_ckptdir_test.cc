// A checkpoint directory belongs to one job, end to end (docs/job.md "Restarts and
// checkpoints"): with real acceld, workers and accelctl, a second job on a directory in use is
// refused at submit, and after the first job is cancelled its steps stay and its directory is
// still refused — issue 28 found a second job pruning a cancelled job's steps without a word.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "tests/controlplane/daemon_harness.h"

namespace accel {
namespace {

using namespace controlplane_testing;  // NOLINT: the harness is this test's vocabulary

std::vector<std::string> Steps(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step_", 0) == 0) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ControlPlaneCheckpointDirs, ASecondJobIsRefusedAndACancelledJobKeepsItsSteps) {
  Daemon d(FreshDir());
  d.Start(2);
  auto body = [](const std::string& dir) {
    return absl::StrCat("model: {preset: gpt2-tiny}\n"
                        "train: {steps: 100000, micro_batch: 2, seq_len: 32, log_every: 10}\n"
                        "checkpoint: {dir: ",
                        dir, ", every_n_steps: 2, keep_last: 2}\n"
                        "resources: {num_processes: 1}\n");
  };
  const std::string first = d.Submit(WriteJob(d.dir(), "first", body("ckpt")));
  const std::string second = WriteJob(d.dir(), "second", body("ckpt/"));
  std::string out, err;
  EXPECT_EQ(d.Accelctl({"submit", second}, &out, &err), 1) << out;
  EXPECT_THAT(err, HasSubstr("checkpoint.dir " + d.dir() + "/ckpt"));
  EXPECT_THAT(err, HasSubstr(" is used by job " + first + " ("));
  EXPECT_THAT(err, HasSubstr("give another directory or cancel it"));

  ASSERT_TRUE(WaitFor([&] { return fs::exists(d.dir() + "/ckpt/latest"); }, 90))
      << testing::ReadAll(d.child().stderr_path);
  ASSERT_EQ(d.Accelctl({"cancel", first}), 0);
  ASSERT_TRUE(d.WaitState(first, v1::CANCELLED, 60));
  const std::vector<std::string> kept = Steps(d.dir() + "/ckpt");
  ASSERT_FALSE(kept.empty());
  EXPECT_THAT(testing::ReadAll(d.dir() + "/ckpt/owner.json"), HasSubstr("\"job\":\"" + first));

  // The ended job's directory is still its own: refused, its steps untouched.
  err.clear();
  EXPECT_EQ(d.Accelctl({"submit", second}, &out, &err), 1) << out;
  EXPECT_THAT(err, HasSubstr("holds the checkpoints of job " + first + " (CANCELLED)"));
  // A job with a directory of its own trains beside it and leaves it alone.
  const std::string third = d.Submit(WriteJob(d.dir(), "third", absl::StrCat(
      "model: {preset: gpt2-tiny}\ntrain: {steps: 4, micro_batch: 2, seq_len: 32}\n"
      "checkpoint: {dir: ckpt3, every_n_steps: 2, keep_last: 1}\n"
      "resources: {num_processes: 1}\n")));
  ASSERT_TRUE(d.WaitState(third, v1::SUCCEEDED, 90)) << v1::JobState_Name(d.Get(third).state());
  EXPECT_EQ(Steps(d.dir() + "/ckpt3"), std::vector<std::string>{"step_4"});
  EXPECT_EQ(Steps(d.dir() + "/ckpt"), kept);
}

}  // namespace
}  // namespace accel
