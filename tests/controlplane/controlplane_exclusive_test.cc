// One acceld per state directory, per port and per unix socket: a second daemon on any of them
// fails at start with a clear message and exit code 2 (or 1 for the port), and leaves the first
// one and other people's files alone. Deleting jobs keeps the directory's job ids unique.
#include "tests/controlplane/daemon_harness.h"

namespace accel {
namespace {

using namespace controlplane_testing;  // NOLINT: the harness is this test's vocabulary

// Runs a second acceld with `args` to its exit; returns {exit code, stderr}.
std::pair<int, std::string> SecondAcceld(const std::string& dir, std::vector<std::string> args) {
  std::vector<std::string> argv = {ACCELD_BIN, "--worker-bin", ACCEL_WORKER_BIN, "--cpu-slots",
                                   "1"};
  argv.insert(argv.end(), args.begin(), args.end());
  testing::ChildProcess c = testing::StartProcess(argv, dir, "second");
  const int code = testing::WaitProcess(c, 20);
  return {code, testing::ReadAll(c.stderr_path)};
}

TEST(ControlPlaneExclusive, ASecondAcceldOnTheSameStateDirSaysWhoHoldsIt) {
  Daemon d(FreshDir());
  d.Start(1);
  const auto [code, err] = SecondAcceld(
      d.dir(), {"--state-dir", d.dir() + "/state", "--listen", "",
                "--unix-socket", d.dir() + "/second.sock"});
  EXPECT_EQ(code, 2) << err;
  EXPECT_THAT(err, HasSubstr("is in use by acceld pid " + std::to_string(d.child().pid)));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  // The first one still serves.
  std::string out;
  EXPECT_EQ(d.Accelctl({"list"}, &out), 0);
}

TEST(ControlPlaneExclusive, ATakenPortFailsAtStart) {
  Daemon d(FreshDir());
  d.Start(1);
  const auto [code, err] = SecondAcceld(
      d.dir(), {"--state-dir", d.dir() + "/other", "--listen",
                "127.0.0.1:" + std::to_string(d.port())});
  EXPECT_NE(code, 0) << err;
  EXPECT_THAT(err, HasSubstr("cannot listen on 127.0.0.1:" + std::to_string(d.port())));
  std::string out;
  EXPECT_EQ(d.Accelctl({"list"}, &out), 0);
}

// Issue 28: acceld blocked inside open() on a FIFO --token-file, with SIGTERM blocked, and kept
// the state directory's lock until SIGKILL. It exits at once now, in one line naming the FIFO,
// and the directory is free for the next start.
TEST(ControlPlaneExclusive, AFifoTokenFileFailsAtStartAndFreesTheStateDir) {
  const std::string dir = FreshDir();
  const std::string fifo = dir + "/token.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto started = std::chrono::steady_clock::now();
  const auto [code, err] = SecondAcceld(dir, {"--state-dir", dir + "/state", "--listen", "",
                                              "--unix-socket", dir + "/a.sock", "--token-file",
                                              fifo});
  EXPECT_EQ(code, 2) << err;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_THAT(err, HasSubstr("acceld: error: token file " + fifo +
                             " is a FIFO, not a regular file\n"));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  Daemon d(dir);
  d.Start(1);  // the state directory's lock was released
  std::string out;
  EXPECT_EQ(d.Accelctl({"list"}, &out), 0);
}

TEST(ControlPlaneExclusive, AUnixSocketPathThatIsAFileIsNotReplaced) {
  const std::string dir = FreshDir();
  const std::string file = dir + "/precious.txt";
  std::ofstream(file) << "keep me";
  const auto [code, err] =
      SecondAcceld(dir, {"--state-dir", dir + "/state", "--listen", "", "--unix-socket", file});
  EXPECT_EQ(code, 2) << err;
  EXPECT_THAT(err, HasSubstr("exists and is not a socket"));
  EXPECT_EQ(testing::ReadAll(file), "keep me");
}

// accelctl delete: only ended jobs; the record, events and logs go; the id is never reused,
// even when the newest job is deleted and acceld restarts.
TEST(ControlPlaneExclusive, DeleteForgetsEndedJobsAndTheirIdsStayUsed) {
  Daemon d(FreshDir());
  d.Start(2);
  const std::string id = d.Submit(WriteJob(d.dir(), "long", R"(
model: {preset: gpt2-tiny}
train: {steps: 1000000, micro_batch: 2, seq_len: 32, log_every: 100}
resources: {num_processes: 1}
)"));
  ASSERT_TRUE(d.WaitState(id, v1::RUNNING, 60));
  std::string out, err;
  EXPECT_EQ(d.Accelctl({"delete", id}, &out, &err), 1);
  EXPECT_THAT(err, HasSubstr("is RUNNING: only ended jobs (SUCCEEDED, FAILED, CANCELLED) can be "
                             "deleted; cancel it first"));
  ASSERT_EQ(d.Accelctl({"cancel", id}, &out, &err), 0) << err;
  ASSERT_TRUE(fs::exists(d.dir() + "/state/logs/" + id));
  ASSERT_EQ(d.Accelctl({"delete", id}, &out, &err), 0) << err;
  EXPECT_EQ(out, id + " deleted (was CANCELLED)\n");
  EXPECT_FALSE(fs::exists(d.dir() + "/state/logs/" + id));
  EXPECT_EQ(d.Accelctl({"status", id}, &out, &err), 1);
  EXPECT_THAT(err, HasSubstr("no job " + id));
  EXPECT_EQ(d.Accelctl({"delete", std::string(200, 'x')}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("job id"));
  d.Kill9();
  d.Start(2);
  const std::string next = d.Submit(WriteJob(d.dir(), "next", R"(
model: {preset: gpt2-tiny}
train: {steps: 1, micro_batch: 2, seq_len: 32}
resources: {num_processes: 1}
)"));
  EXPECT_NE(next, id);
  EXPECT_EQ(next, "job-2");
  ASSERT_TRUE(d.WaitState(next, v1::SUCCEEDED, 120));
}

}  // namespace
}  // namespace accel
