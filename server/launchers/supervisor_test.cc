#include "server/launchers/supervisor.h"

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/test_util.h"

namespace accel::server {
namespace {

using ::testing::HasSubstr;

// Running or stopped, not a zombie waiting for a reaper (in a container, PID 1 may never reap
// the orphans it inherits).
bool Alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string content((std::istreambuf_iterator<char>(stat)), {});
  if (content.empty()) return false;
  const size_t paren = content.rfind(')');
  return paren == std::string::npos || content.size() < paren + 3 || content[paren + 2] != 'Z';
}

GangLaunch ShellGang(const std::string& dir, const std::vector<std::string>& scripts) {
  GangLaunch g;
  g.job_id = "job-1";
  g.attempt = 1;
  for (size_t r = 0; r < scripts.size(); ++r) {
    RankLaunch l;
    l.rank = static_cast<int>(r);
    l.argv = {"/bin/sh", "-c", scripts[r]};
    l.env = {"PATH=/usr/bin:/bin", "RANK=" + std::to_string(r)};
    l.log_path = dir + "/rank-" + std::to_string(r) + ".log";
    g.ranks.push_back(l);
  }
  return g;
}

// Polls until `n` exits were seen (or 20 s).
PollResult PollUntil(Supervisor& s, size_t n) {
  PollResult all;
  for (int i = 0; i < 2000 && all.exits.size() < n; ++i) {
    PollResult p = s.Poll();
    for (auto& e : p.exits) all.exits.push_back(e);
    for (auto& l : p.lines) all.lines.push_back(l);
    if (all.exits.size() < n) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return all;
}

TEST(SupervisorTest, RunsEachRankWithItsEnvAndReportsExitsAndOutput) {
  const std::string dir = FreshTestDir();
  Supervisor s(Env::Default());
  ASSERT_TRUE(s.Launch(ShellGang(dir, {"echo rank=$RANK; exit 0", "echo oops >&2; exit 3"})).ok());
  PollResult r = PollUntil(s, 2);
  ASSERT_EQ(r.exits.size(), 2u);
  for (const RankExit& e : r.exits) {
    if (e.rank == 0) {
      EXPECT_TRUE(e.ok());
    } else {
      EXPECT_EQ(e.exit_code, 3);
      EXPECT_THAT(e.log_tail, HasSubstr("oops"));
      EXPECT_EQ(e.Describe(), "exited with code 3");
    }
  }
  std::vector<std::string> lines;
  for (const auto& l : r.lines) lines.push_back(std::to_string(l.rank) + ":" + l.line);
  EXPECT_THAT(lines, ::testing::UnorderedElementsAre("0:rank=0", "1:oops"));
  EXPECT_EQ(s.live(), 0);
  std::ifstream log(dir + "/rank-0.log");
  std::string content((std::istreambuf_iterator<char>(log)), {});
  EXPECT_EQ(content, "rank=0\n");
}

TEST(SupervisorTest, StopTerminatesTheWholeProcessGroupEscalatingToSigkill) {
  const std::string dir = FreshTestDir();
  Supervisor s(Env::Default());
  // Rank 0 ignores SIGTERM and has a grandchild; rank 1 dies on SIGTERM.
  ASSERT_TRUE(s.Launch(ShellGang(dir, {"trap '' TERM; sleep 100 & echo child=$!; wait; sleep 100",
                                       "sleep 100"}))
                  .ok());
  std::vector<pid_t> pids = s.Pids("job-1");
  ASSERT_EQ(pids.size(), 2u);
  // Learn the grandchild's pid from the log.
  pid_t grandchild = -1;
  for (int i = 0; i < 500 && grandchild < 0; ++i) {
    for (const auto& l : s.Poll().lines) {
      if (l.line.rfind("child=", 0) == 0) grandchild = std::stoi(l.line.substr(6));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(grandchild, 0);
  const auto start = std::chrono::steady_clock::now();
  s.Stop("job-1", 1, absl::Milliseconds(300));
  PollResult r = PollUntil(s, 2);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exits.size(), 2u);
  for (const RankExit& e : r.exits) {
    EXPECT_EQ(e.signal, e.rank == 0 ? SIGKILL : SIGTERM) << "rank " << e.rank;
  }
  EXPECT_GE(seconds, 0.25);  // rank 0 ignored SIGTERM until the grace ran out
  EXPECT_LT(seconds, 5.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(Alive(grandchild));
  for (pid_t p : pids) EXPECT_FALSE(Alive(p));
}

TEST(SupervisorTest, ABadProgramExitsWith127) {
  const std::string dir = FreshTestDir();
  Supervisor s(Env::Default());
  GangLaunch g = ShellGang(dir, {""});
  g.ranks[0].argv = {"/nonexistent/accel-worker"};
  ASSERT_TRUE(s.Launch(g).ok());
  PollResult r = PollUntil(s, 1);
  ASSERT_EQ(r.exits.size(), 1u);
  EXPECT_EQ(r.exits[0].exit_code, 127);
}

TEST(SupervisorTest, DestructorKillsLiveRanks) {
  const std::string dir = FreshTestDir();
  std::vector<pid_t> pids;
  {
    Supervisor s(Env::Default());
    ASSERT_TRUE(s.Launch(ShellGang(dir, {"sleep 100", "sleep 100"})).ok());
    pids = s.Pids("job-1");
  }
  for (pid_t p : pids) EXPECT_FALSE(Alive(p));
}

TEST(SupervisorTest, RequestCheckpointSignalsEachRankProcessWhichExitsCheckpointed) {
  const std::string dir = FreshTestDir();
  Supervisor s(Env::Default());
  // A rank that answers the request the way accel-worker does: exit kWorkerExitCheckpointed.
  const std::string rank = "trap 'echo saving; exit 3' USR1; echo ready; "
                           "while :; do sleep 0.05; done";
  ASSERT_TRUE(s.Launch(ShellGang(dir, {rank, rank})).ok());
  // Wait until both traps are installed (each printed "ready").
  int ready = 0;
  for (int i = 0; i < 2000 && ready < 2; ++i) {
    for (const RankLogLine& l : s.Poll().lines) ready += l.line == "ready";
    if (ready < 2) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(ready, 2);
  s.RequestCheckpoint("job-1", 1);
  PollResult r = PollUntil(s, 2);
  ASSERT_EQ(r.exits.size(), 2u);
  for (const RankExit& e : r.exits) {
    EXPECT_TRUE(e.checkpointed()) << e.Describe();
    EXPECT_FALSE(e.ok());
    EXPECT_THAT(e.log_tail, HasSubstr("saving"));
  }
  EXPECT_EQ(s.live(), 0);
}

}  // namespace
}  // namespace accel::server
