// SlurmLauncher against a scripted Slurm (the commands answered in-process): what it submits,
// how it reads a job's end into rank exits, stop, checkpoint and forget. The real cluster runs in
// tests/e2e/slurm_e2e_test.cc.
#include "server/launchers/slurm_launcher.h"

#include <signal.h>
#include <sys/stat.h>

#include <fstream>

#include "absl/strings/str_join.h"
#include "engine/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/test_util.h"

namespace accel::server {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Answers sbatch with job 100, 101, ...; scontrol with `state` of that job.
struct FakeSlurm {
  std::vector<std::string> calls;
  std::map<std::string, std::string> state;  // slurm id -> "JobState=... ExitCode=a:b"
  int next_id = 100;
  CommandRunner Runner() {
    return [this](const std::vector<std::string>& argv,
                  absl::Duration) -> absl::StatusOr<CommandResult> {
      calls.push_back(absl::StrJoin(argv, " "));
      CommandResult r;
      if (argv[0] == "sbatch") {
        const std::string id = std::to_string(next_id++);
        state[id] = "JobState=PENDING ExitCode=0:0";
        r.out = id + "\n";
      } else if (argv[0] == "scontrol") {
        auto it = state.find(argv.back());
        if (it == state.end()) {
          r.exit_code = 1;
          r.err = "slurm_load_jobs error: Invalid job id specified";
        } else {
          r.out = "JobId=" + argv.back() + " " + it->second + "\n";
        }
      }
      return r;
    };
  }
};

class SlurmLauncherTest : public ::testing::Test {
 protected:
  GangLaunch Gang() {
    GangLaunch g;
    g.job_id = "job-1";
    g.attempt = 1;
    g.shape = {2, 1, "cpu"};
    g.worker_argv = {"/bin/accel-worker"};
    g.token = "tok";
    g.log_dir = dir_ + "/attempt-1";
    return g;
  }
  std::string dir_ = FreshTestDir();
  accel::testing::FakeClock clock_{1'000'000};
  FakeSlurm slurm_;
  SlurmLauncher launcher_{SlurmOptions{}, &clock_, slurm_.Runner()};
};

TEST_F(SlurmLauncherTest, SubmitsTheScriptAndKeepsTheTokenPrivate) {
  auto placed = launcher_.Launch(Gang());
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_EQ(*placed, "slurm job 100");
  EXPECT_THAT(slurm_.calls, ElementsAre("sbatch --parsable " + dir_ + "/attempt-1/job.sbatch"));
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/attempt-1/worker.token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(launcher_.Pending("job-1", 1));
  EXPECT_EQ(launcher_.live(), 2);
  slurm_.state["100"] = "JobState=RUNNING ExitCode=0:0";
  launcher_.Poll();
  EXPECT_FALSE(launcher_.Pending("job-1", 1));
}

TEST_F(SlurmLauncherTest, ACompletedJobIsEveryRankExitingZeroWithItsOutput) {
  ASSERT_TRUE(launcher_.Launch(Gang()).ok());
  std::ofstream(dir_ + "/attempt-1/rank-1.log") << "step 1 loss 4.2\n";
  slurm_.state["100"] = "JobState=COMPLETED ExitCode=0:0";
  PollResult r = launcher_.Poll();
  ASSERT_EQ(r.exits.size(), 2u);
  EXPECT_TRUE(r.exits[0].ok());
  EXPECT_TRUE(r.exits[1].ok());
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_EQ(r.lines[0].rank, 1);
  EXPECT_EQ(r.lines[0].line, "step 1 loss 4.2");
  EXPECT_EQ(launcher_.live(), 0);
}

TEST_F(SlurmLauncherTest, TheTaskThatDiedLeadsAndTheOnesSrunStoppedFollow) {
  ASSERT_TRUE(launcher_.Launch(Gang()).ok());
  std::ofstream(dir_ + "/attempt-1/slurm-100.out")
      << "srun: error: n2: task 1: Killed\nsrun: error: n1: task 0: Terminated\n";
  slurm_.state["100"] = "JobState=FAILED ExitCode=137:0";
  PollResult first = launcher_.Poll();
  ASSERT_EQ(first.exits.size(), 1u);
  EXPECT_EQ(first.exits[0].rank, 1);
  EXPECT_EQ(first.exits[0].signal, SIGKILL);
  EXPECT_EQ(launcher_.live(), 1);
  PollResult second = launcher_.Poll();
  ASSERT_EQ(second.exits.size(), 1u);
  EXPECT_EQ(second.exits[0].rank, 0);
  EXPECT_EQ(second.exits[0].signal, SIGTERM);
  EXPECT_EQ(launcher_.live(), 0);
}

TEST_F(SlurmLauncherTest, StopCheckpointAndForgetAreScancels) {
  ASSERT_TRUE(launcher_.Launch(Gang()).ok());
  launcher_.RequestCheckpoint("job-1", 1);
  launcher_.Stop("job-1", 1, absl::Seconds(5));
  launcher_.Stop("job-1", 1, absl::Seconds(5));  // once
  launcher_.Forget("slurm job 77");
  launcher_.Forget("slurm job 100");  // still this acceld's own: Stop handles it
  launcher_.Forget("kubernetes job x");
  EXPECT_THAT(slurm_.calls, ElementsAre(HasSubstr("sbatch"), "scancel --signal=USR1 100",
                                        "scancel 100", "scancel 77"));
  slurm_.state["100"] = "JobState=CANCELLED ExitCode=0:15";
  PollResult r = launcher_.Poll();
  ASSERT_EQ(r.exits.size(), 2u);
  EXPECT_EQ(r.exits[0].signal, SIGTERM);
}

TEST_F(SlurmLauncherTest, AJobSlurmForgotHasEndedAndARefusedSubmitIsAnError) {
  ASSERT_TRUE(launcher_.Launch(Gang()).ok());
  slurm_.state.erase("100");
  PollResult r = launcher_.Poll();
  ASSERT_EQ(r.exits.size(), 2u);
  EXPECT_FALSE(r.exits[0].ok());
  // Ended by Slurm itself (here: a batch step that could not start): the error says so.
  ASSERT_TRUE(launcher_.Launch(Gang()).ok());
  slurm_.state["101"] = "JobState=CANCELLED Reason=launch_failed ExitCode=0:0";
  r = launcher_.Poll();
  ASSERT_EQ(r.exits.size(), 2u);
  EXPECT_EQ(r.exits[0].exit_code, 1);
  EXPECT_THAT(r.exits[0].log_tail,
              HasSubstr("Slurm ended job 101 CANCELLED (launch_failed) before its tasks reported"));

  SlurmLauncher refusing(SlurmOptions{}, &clock_,
                         [](const std::vector<std::string>&, absl::Duration) {
                           CommandResult c;
                           c.exit_code = 1;
                           c.err = "sbatch: error: Batch job submission failed: Invalid partition";
                           return absl::StatusOr<CommandResult>(c);
                         });
  auto placed = refusing.Launch(Gang());
  ASSERT_FALSE(placed.ok());
  EXPECT_THAT(std::string(placed.status().message()), HasSubstr("Invalid partition"));
}

TEST(RunCommandTest, CapturesOutputExitCodeAndEnforcesTheDeadline) {
  auto ok = RunCommand({"sh", "-c", "echo out; echo err >&2; exit 4"}, absl::Seconds(10));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->out, "out\n");
  EXPECT_EQ(ok->err, "err\n");
  EXPECT_EQ(ok->exit_code, 4);
  auto slow = RunCommand({"sleep", "30"}, absl::Milliseconds(200));
  EXPECT_EQ(slow.status().code(), absl::StatusCode::kDeadlineExceeded);
  auto missing = RunCommand({"no-such-program-accel"}, absl::Seconds(5));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace accel::server

namespace accel::server {
namespace {

// Issue 28: with no Slurm config, sbatch and scontrol look for a controller through DNS SRV
// records; acceld refuses to start the launcher instead, naming what it looked for.
TEST(SlurmConfigTest, FoundThroughSlurmConfElseTheDefaultPathElseRefused) {
  const std::string dir = FreshTestDir();
  const std::string conf = dir + "/slurm.conf";
  std::ofstream(conf) << "ClusterName=test\n";
  const std::string missing = dir + "/none/slurm.conf";

  absl::StatusOr<std::string> found = SlurmLauncher::FindConfig(conf.c_str(), missing);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, conf);
  found = SlurmLauncher::FindConfig(nullptr, conf);  // unset: the default path
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, conf);
  EXPECT_TRUE(SlurmLauncher::FindConfig("", conf).ok());  // empty reads as unset

  absl::Status unset = SlurmLauncher::FindConfig(nullptr, missing).status();
  EXPECT_EQ(unset.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(unset.message(), HasSubstr("needs a Slurm config: SLURM_CONF is unset and " +
                                         missing + " does not exist"));
  EXPECT_THAT(unset.message(), HasSubstr("DNS SRV"));
  absl::Status gone = SlurmLauncher::FindConfig(missing.c_str(), conf).status();
  EXPECT_THAT(gone.message(), HasSubstr("SLURM_CONF=" + missing + " does not exist"));
  absl::Status folder = SlurmLauncher::FindConfig(dir.c_str(), conf).status();
  EXPECT_THAT(folder.message(), HasSubstr("SLURM_CONF=" + dir + " is not a regular file"));
  EXPECT_EQ(std::string(SlurmLauncher::kDefaultConfig), "/etc/slurm/slurm.conf");
}

}  // namespace
}  // namespace accel::server
