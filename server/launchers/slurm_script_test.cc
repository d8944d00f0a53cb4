// The slurm launcher's pure half: the batch script, and reading scontrol, srun and sbatch.
#include "server/launchers/slurm_script.h"

#include <signal.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

GangLaunch Gang() {
  GangLaunch g;
  g.job_id = "job-3";
  g.attempt = 2;
  g.shape = {2, 2, "cpu"};
  g.worker_argv = {"/opt/accel/bin/accel-worker"};
  g.shared_env = {"ACCEL_JOB_ID=job-3", "ACCEL_COORDINATOR=10.0.0.1:7070", "ODD=it's"};
  g.token = "secret-token";
  g.log_dir = "/shared/accel/logs/job-3/attempt-2";
  return g;
}

TEST(SlurmScriptTest, TheBatchScriptAsksForTheGangAndSrunsTheWorker) {
  SlurmOptions defaults;
  defaults.partition = "cpu";
  defaults.time = "01:00:00";
  GangLaunch g = Gang();
  g.settings["partition"] = "debug";  // the job's wins over acceld's
  const std::string s = RenderSlurmBatch(g, defaults);
  EXPECT_THAT(s, HasSubstr("#SBATCH --nodes=2\n"));
  EXPECT_THAT(s, HasSubstr("#SBATCH --ntasks-per-node=2\n"));
  EXPECT_THAT(s, HasSubstr("#SBATCH --no-requeue\n"));
  EXPECT_THAT(s, HasSubstr("#SBATCH --partition=debug\n"));
  EXPECT_THAT(s, HasSubstr("#SBATCH --time=01:00:00\n"));
  EXPECT_THAT(s, Not(HasSubstr("--account")));
  EXPECT_THAT(s, Not(HasSubstr("--gpus-per-task")));
  EXPECT_THAT(s, HasSubstr("#SBATCH --output=/shared/accel/logs/job-3/attempt-2/slurm-%j.out\n"));
  EXPECT_THAT(s, HasSubstr("export ACCEL_COORDINATOR='10.0.0.1:7070'\n"));
  EXPECT_THAT(s, HasSubstr("export ODD='it'\\''s'\n"));
  // The token is read from its file, never written into the script.
  EXPECT_THAT(s, Not(HasSubstr("secret-token")));
  EXPECT_THAT(s, HasSubstr("ACCEL_WORKER_TOKEN=$(cat '/shared/accel/logs/job-3/attempt-2/worker.token')"));
  EXPECT_THAT(s, HasSubstr("exec srun --kill-on-bad-exit=1 --export=ALL "
                           "--output='/shared/accel/logs/job-3/attempt-2/rank-%t.log' "
                           "'/opt/accel/bin/accel-worker'\n"));
  g.shape.device = "cuda";
  EXPECT_THAT(RenderSlurmBatch(g, defaults), HasSubstr("#SBATCH --gpus-per-task=1\n"));
}

TEST(SlurmScriptTest, ReadsScontrolsJobLine) {
  auto st = ParseScontrolJob(
      "JobId=7 JobName=accel-job-3-a2 UserId=root(0) JobState=FAILED Reason=NonZeroExitCode "
      "Dependency=(null) Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=137:0 RunTime=00:00:04");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->state, "FAILED");
  EXPECT_EQ(st->reason, "NonZeroExitCode");
  EXPECT_EQ(st->exit_code, 137);
  EXPECT_EQ(st->signal, 0);
  EXPECT_TRUE(st->ended());
  EXPECT_FALSE(st->pending());
  for (const char* running : {"RUNNING", "COMPLETING"}) {
    SlurmJobStatus s{running};
    EXPECT_FALSE(s.ended()) << running;
  }
  for (const char* queued : {"PENDING", "CONFIGURING"}) {
    SlurmJobStatus s{queued};
    EXPECT_TRUE(s.pending()) << queued;
    EXPECT_FALSE(s.ended()) << queued;
  }
  for (const char* done : {"COMPLETED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}) {
    SlurmJobStatus s{done};
    EXPECT_TRUE(s.ended()) << done;
  }
  EXPECT_FALSE(ParseScontrolJob("slurm_load_jobs error: Invalid job id specified").ok());
}

TEST(SlurmScriptTest, ReadsWhichTasksSrunSaysEndedBadly) {
  const auto ends = ParseSrunTaskEnds(
      "srun: error: n2: task 1: Killed\n"
      "srun: launch/slurm: _step_signal: Terminating StepId=9.0\n"
      "srun: error: n1: task 0: Terminated\n"
      "srun: error: n3: tasks 4-5,7: Exited with exit code 3\n"
      "srun: Force Terminated StepId=9.0\n");
  ASSERT_EQ(ends.size(), 5u);
  EXPECT_EQ(ends.at(1).signal, SIGKILL);
  EXPECT_EQ(ends.at(0).signal, SIGTERM);
  EXPECT_EQ(ends.at(4).exit_code, 3);
  EXPECT_EQ(ends.at(5).exit_code, 3);
  EXPECT_EQ(ends.at(7).exit_code, 3);
  EXPECT_EQ(ends.count(6), 0u);
}

TEST(SlurmScriptTest, ReadsSbatchsJobId) {
  EXPECT_EQ(*ParseSbatchJobId("4711\n"), "4711");
  EXPECT_EQ(*ParseSbatchJobId("4711;lab\n"), "4711");
  EXPECT_FALSE(ParseSbatchJobId("sbatch: error: invalid partition\n").ok());
}

}  // namespace
}  // namespace accel::server
