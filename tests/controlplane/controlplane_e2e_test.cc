// End to end with real processes on 127.0.0.1: acceld (its own process, killed with -9 where
// the test says so), accel-worker ranks it starts, and accelctl's job commands. Training,
// failures and restarts here; TLS, gang admission and rejected input in
// controlplane_admission_test.cc.
#include "tests/controlplane/daemon_harness.h"

namespace accel {
namespace {

using namespace controlplane_testing;  // NOLINT: the harness is this test's vocabulary

TEST(ControlPlaneE2E, SubmitWaitTrainsTwoRanksToSucceededWithEveryKindOfEvent) {
  Daemon d(FreshDir());
  d.Start(2);
  const std::string job = WriteJob(d.dir(), "tiny", R"(
model: {preset: gpt2-tiny}
train: {steps: 40, micro_batch: 2, seq_len: 32, log_every: 5}
checkpoint: {dir: ckpt, every_n_steps: 20, keep_last: 1}
resources: {num_processes: 2}
sharding: {strategy: full_shard}
)");
  std::string out, err;
  ASSERT_EQ(d.Accelctl({"submit", job, "--wait", "--output", "json"}, &out, &err), 0)
      << out << err << testing::ReadAll(d.child().stderr_path);
  // The --wait stream: one JSON object per line, the job first, then every event.
  std::vector<nlohmann::json> lines;
  std::stringstream ss(out);
  for (std::string line; std::getline(ss, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_GT(lines.size(), 2u);
  const std::string id = lines[0]["id"];
  std::vector<v1::Event> events = d.Events(id);
  ExpectConsecutive(events);
  EXPECT_EQ(lines.size() - 1, events.size());
  std::set<int64_t> metric_steps;
  std::set<int> memory_ranks;
  std::vector<int64_t> checkpoint_steps;
  for (const v1::Event& e : events) {
    if (e.has_metrics()) metric_steps.insert(e.metrics().step());
    if (e.has_memory()) {
      memory_ranks.insert(e.rank());
      EXPECT_GT(e.memory().device_peak(), 0);
    }
    if (e.has_checkpoint()) checkpoint_steps.push_back(e.checkpoint().step());
  }
  EXPECT_EQ(metric_steps, (std::set<int64_t>{0, 4, 9, 14, 19, 24, 29, 34, 39}));
  EXPECT_EQ(memory_ranks, (std::set<int>{0, 1}));
  EXPECT_EQ(checkpoint_steps, (std::vector<int64_t>{20, 40}));
  EXPECT_EQ(events.back().state().state(), v1::SUCCEEDED);
  const v1::Job final_job = d.Get(id);
  EXPECT_EQ(final_job.attempt(), 1);
  EXPECT_EQ(final_job.last_step(), 39);
  // keep_last: 1 -> only the newest checkpoint is on disk; both are in the registry.
  EXPECT_TRUE(fs::exists(d.dir() + "/ckpt/step_40/metadata.json"));
  EXPECT_TRUE(fs::exists(d.dir() + "/ckpt/latest"));
  EXPECT_FALSE(fs::exists(d.dir() + "/ckpt/step_20"));
  ASSERT_EQ(d.Accelctl({"checkpoints", id}, &out), 0);
  EXPECT_THAT(out, HasSubstr(d.dir() + "/ckpt/step_40"));
  EXPECT_TRUE(d.Workers(id).empty());
  // Text views.
  ASSERT_EQ(d.Accelctl({"status", id}, &out), 0);
  EXPECT_THAT(out, HasSubstr("SUCCEEDED"));
  ASSERT_EQ(d.Accelctl({"watch", id}, &out), 0);
  EXPECT_THAT(out, HasSubstr("step 40/40 [####################] 100% | loss"));
  ASSERT_EQ(d.Accelctl({"logs", id, "--rank", "1"}, &out), 0);
  EXPECT_THAT(out, HasSubstr("done: 40 steps"));
}

TEST(ControlPlaneE2E, AKilledWorkerRestartsTheGangAsANewAttemptThatSucceeds) {
  Daemon d(FreshDir());
  d.Start(2);
  const std::string id = d.Submit(WriteJob(d.dir(), "restart", R"(
model: {preset: gpt2-mini}
train: {steps: 40, micro_batch: 4, seq_len: 64, log_every: 1}
checkpoint: {dir: ckpt/, every_n_steps: 5, keep_last: 2}
resources: {num_processes: 2}
sharding: {strategy: full_shard}
max_restarts: 2
)"));
  // Kill after the first checkpoint is committed, so the next attempt has one to resume from.
  ASSERT_TRUE(WaitFor(
      [&] { return fs::exists(d.dir() + "/ckpt/latest") && d.Get(id).last_step() >= 6; }, 60));
  std::vector<pid_t> first = d.Workers(id);
  ASSERT_EQ(first.size(), 2u);
  // Kill whichever pid is rank 1: the one whose environment says RANK=1.
  pid_t victim = -1;
  for (pid_t p : first) {
    std::ifstream env("/proc/" + std::to_string(p) + "/environ", std::ios::binary);
    std::string content((std::istreambuf_iterator<char>(env)), {});
    if (content.find(std::string("\0RANK=1\0", 8)) != std::string::npos) victim = p;
  }
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  ASSERT_TRUE(d.WaitState(id, v1::SUCCEEDED, 90)) << v1::JobState_Name(d.Get(id).state());
  const v1::Job job = d.Get(id);
  EXPECT_EQ(job.attempt(), 2);
  EXPECT_EQ(job.restarts_used(), 1);
  std::vector<v1::Event> events = d.Events(id);
  ExpectConsecutive(events);
  std::set<int> metric_attempts;
  bool restart_reason = false;
  for (const v1::Event& e : events) {
    if (e.has_metrics()) metric_attempts.insert(e.attempt());
    if (e.has_state() && e.state().state() == v1::RESTARTING) {
      restart_reason = e.state().message().find("rank 1 killed by signal 9") != std::string::npos;
    }
  }
  EXPECT_EQ(metric_attempts, (std::set<int>{1, 2}));
  EXPECT_TRUE(restart_reason);
  // Attempt 2 resumed from a sharded checkpoint (a multiple of 5 steps), not from step 0.
  int64_t first_step_of_attempt2 = -1;
  for (const v1::Event& e : events) {
    if (e.has_metrics() && e.attempt() == 2 && first_step_of_attempt2 < 0) {
      first_step_of_attempt2 = e.metrics().step();
    }
  }
  EXPECT_GE(first_step_of_attempt2, 5);
  EXPECT_EQ(first_step_of_attempt2 % 5, 0);
  EXPECT_TRUE(d.Workers(id).empty());  // neither attempt left a worker behind
}

TEST(ControlPlaneE2E, CancelEndsCancelledWithNoWorkerLeft) {
  Daemon d(FreshDir());
  d.Start(2);
  const std::string id = d.Submit(WriteJob(d.dir(), "long", R"(
model: {preset: gpt2-tiny}
train: {steps: 1000000, micro_batch: 2, seq_len: 32, log_every: 100}
resources: {num_processes: 2}
)"));
  ASSERT_TRUE(d.WaitState(id, v1::RUNNING, 60));
  ASSERT_EQ(d.Workers(id).size(), 2u);
  std::string out, err;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(d.Accelctl({"cancel", id}, &out, &err), 0) << err;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3.5);
  EXPECT_THAT(out, HasSubstr("CANCELLED"));
  EXPECT_TRUE(d.Workers(id).empty());
  EXPECT_EQ(d.Get(id).state(), v1::CANCELLED);
  // Cancelling again is harmless; a finished job's cancel is refused.
  EXPECT_EQ(d.Accelctl({"cancel", id}, &out), 0);
}

TEST(ControlPlaneE2E, AcceldKilledAndRestartedKeepsJobsAndEventsAndResumesTheJob) {
  Daemon d(FreshDir());
  d.Start(2);
  const std::string id = d.Submit(WriteJob(d.dir(), "survive", R"(
model: {preset: gpt2-mini}
train: {steps: 60, micro_batch: 4, seq_len: 64, log_every: 1}
resources: {num_processes: 2}
max_restarts: 0
)"));
  // A watcher follows through the daemon's death and comes back on the same address.
  std::string watch_out, watch_err;
  int watch_code = -1;
  std::thread watcher([&] {
    watch_code = d.Accelctl({"watch", id, "--output", "json"}, &watch_out, &watch_err);
  });
  ASSERT_TRUE(WaitFor([&] { return d.Get(id).last_step() >= 2; }, 60));
  const int64_t seq_before = d.Get(id).last_seq();
  const int port = d.port();
  d.Kill9();
  // The workers die with acceld (parent-death signal), never orphaned.
  EXPECT_TRUE(WaitFor([&] { return d.Workers(id).empty(); }, 10));
  d.Start(2, port);
  const v1::Job after = d.Get(id);
  EXPECT_GE(after.last_seq(), seq_before);  // every earlier event is still there
  ASSERT_TRUE(d.WaitState(id, v1::SUCCEEDED, 90)) << v1::JobState_Name(d.Get(id).state());
  const v1::Job job = d.Get(id);
  EXPECT_EQ(job.attempt(), 2);
  EXPECT_EQ(job.restarts_used(), 0);  // the daemon's restart does not use up a restart
  std::vector<v1::Event> events = d.Events(id);
  ExpectConsecutive(events);
  bool resumed = false;
  for (const v1::Event& e : events) {
    if (e.has_state() && e.state().state() == v1::RESTARTING &&
        e.state().message().find("acceld restarted") != std::string::npos) {
      resumed = true;
    }
  }
  EXPECT_TRUE(resumed);
  watcher.join();
  EXPECT_EQ(watch_code, 0) << watch_err;
  std::vector<int64_t> seen;
  std::stringstream ss(watch_out);
  for (std::string line; std::getline(ss, line);) {
    seen.push_back(std::stoll(nlohmann::json::parse(line)["seq"].get<std::string>()));
  }
  ASSERT_EQ(seen.size(), events.size()) << watch_err;  // reconnected and missed nothing
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<int64_t>(i + 1));
  EXPECT_EQ(d.Terminate(), 0);
}

TEST(ControlPlaneE2E, SigtermToAcceldCheckpointsTheRunningJobWhichResumesFromThatStep) {
  Daemon d(FreshDir());
  d.Start(2);
  // No periodic checkpoint before the end: the only one mid-run is the one SIGTERM asks for.
  // A long grace, so a slow step on a loaded machine still reaches its checkpoint.
  const std::string id = d.Submit(WriteJob(d.dir(), "drain", R"(
model: {preset: gpt2-mini}
train: {steps: 60, micro_batch: 4, seq_len: 64, log_every: 1}
checkpoint: {dir: ckpt, every_n_steps: 1000}
resources: {num_processes: 2}
sharding: {strategy: full_shard}
max_restarts: 0
stop_grace_s: 20
)"));
  ASSERT_TRUE(WaitFor([&] { return d.Get(id).last_step() >= 3; }, 60));
  const int64_t step_seen = d.Get(id).last_step();
  const int port = d.port();
  EXPECT_EQ(d.Terminate(), 0) << testing::ReadAll(d.child().stderr_path);
  EXPECT_TRUE(WaitFor([&] { return d.Workers(id).empty(); }, 10));
  EXPECT_TRUE(fs::exists(d.dir() + "/ckpt/latest"));
  d.Start(2, port);
  ASSERT_TRUE(d.WaitState(id, v1::SUCCEEDED, 90)) << v1::JobState_Name(d.Get(id).state());
  const v1::Job job = d.Get(id);
  EXPECT_EQ(job.attempt(), 2);
  EXPECT_EQ(job.restarts_used(), 0);  // a drained daemon does not use up a restart
  std::vector<v1::Event> events = d.Events(id);
  ExpectConsecutive(events);
  int64_t saved_step = -1, last_step_1 = -1, first_step_2 = -1;
  bool notice = false;
  for (const v1::Event& e : events) {
    if (e.has_checkpoint() && e.attempt() == 1) saved_step = e.checkpoint().step();
    if (e.has_metrics() && e.attempt() == 1) last_step_1 = e.metrics().step();
    if (e.has_metrics() && e.attempt() == 2 && first_step_2 < 0) first_step_2 = e.metrics().step();
    if (e.has_log() && e.log().stream() == "acceld" &&
        e.log().line().find("asked the 2 ranks to checkpoint") != std::string::npos) {
      notice = true;
    }
  }
  EXPECT_TRUE(notice);
  // Attempt 1 checkpointed the step it had reached (steps completed = last 0-based step + 1),
  // after the step seen before SIGTERM, and attempt 2 went on from exactly there.
  EXPECT_GT(saved_step, step_seen);
  EXPECT_LT(saved_step, 60);
  EXPECT_EQ(saved_step, last_step_1 + 1);
  EXPECT_EQ(first_step_2, saved_step);
  EXPECT_TRUE(d.Workers(id).empty());
}

// scripts/run-default.sh's acceld: a unix socket and no TCP port. Its workers once got
// MASTER_PORT=0, which every rank refused, and the README's first command failed.
TEST(ControlPlaneE2E, AnAcceldOnAUnixSocketAloneTrainsAJob) {
  Daemon d(FreshDir());
  const std::string socket = d.dir() + "/s.sock";
  d.Start(2, 0, {"--listen", "", "--unix-socket", socket});  // the last --listen wins
  ASSERT_EQ(d.address(), "unix:" + socket);
  const std::string job = WriteJob(d.dir(), "unix", R"(
model: {preset: gpt2-tiny}
train: {steps: 6, micro_batch: 2, seq_len: 32, log_every: 3}
resources: {num_processes: 2}
)");
  std::string out, err;
  ASSERT_EQ(d.Accelctl({"submit", job, "--wait"}, &out, &err), 0)
      << out << err << testing::ReadAll(d.child().stderr_path);
  EXPECT_THAT(out, HasSubstr("SUCCEEDED"));
}

}  // namespace
}  // namespace accel
