// Chaos: tiny jobs train under a real acceld while a seeded random loop kills workers (SIGKILL,
// one rank or a whole gang), kills acceld (SIGKILL, or SIGTERM) and starts it again on the same
// state dir and port, fills the checkpoint filesystem (a small tmpfs) for a while, and stops a
// rank (SIGSTOP) past the heartbeat deadline or briefly. Afterwards every job must have
// SUCCEEDED with exactly the training state of an uninterrupted run of the same job, gap-free
// events (as stored, and as an accelctl follower saw them), a complete attempt history and
// intact checkpoint directories, and no acceld, worker or accelctl may be left.
// ACCEL_CHAOS_SEED=N replays a run's sequence of fault choices (timings still vary with the
// machine); docs/reliability.md, "Chaos test".
#include <functional>
#include <memory>
#include <optional>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/core/state_store.h"
#include "tests/controlplane/chaos_faults.h"
#include "tests/controlplane/daemon_harness.h"

namespace accel {
namespace {

using namespace controlplane_testing;  // NOLINT: the harness is this test's vocabulary
using namespace chaos_testing;         // NOLINT

constexpr int kSteps = 500;
constexpr double kHeartbeatTimeoutS = 4;
constexpr double kFaultWindowS = 90;  // faults are injected this long (or until all jobs end)

struct ChaosJob {
  std::string name, body;  // body: the job file without name, data and checkpoint.dir
  int64_t every;
};

// Small enough to train in seconds on two shared cores; checkpoints every step or two, so every
// fault lands between two saves; restarts enough that faults never exhaust them.
std::vector<ChaosJob> Jobs() {
  const std::string common = absl::StrCat(
      "model: {preset: gpt2-tiny}\n"
      "train: {steps: ",
      kSteps,
      ", micro_batch: 2, seq_len: 32, log_every: 10, seed: 7}\n"
      "max_restarts: 1000\nheartbeat_timeout_s: ",
      kHeartbeatTimeoutS, "\nstop_grace_s: 2\ncomm_timeout_s: 60\n");
  return {
      {"fsdp2", common + "resources: {num_processes: 2}\nsharding: {strategy: full_shard}\n", 2},
      {"single", common + "resources: {num_processes: 1}\n", 1},
      {"zero1", common + "resources: {num_processes: 2}\nsharding: {strategy: zero1}\n", 1}};
}

std::string JobFile(const std::string& dir, const ChaosJob& job, const std::string& ckpt,
                    int keep_last) {
  return WriteJob(dir, job.name,
                  absl::StrCat(job.body, "checkpoint: {dir: ", ckpt, ", every_n_steps: ", job.every,
                               ", keep_last: ", keep_last, "}\n"));
}

// The errors a checkpoint save that met a full disk ends an attempt with, on any rank.
bool IsFullDiskSaveError(const std::string& why) {
  return absl::StrContains(why, "No space left on device") ||
         absl::StrContains(why, "could not commit the step") ||
         absl::StrContains(why, "could not write its part");
}

uint64_t Seed() {
  if (const char* s = std::getenv("ACCEL_CHAOS_SEED")) return std::stoull(s);
  return static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

class Chaos {
 public:
  Chaos(Daemon& d, std::vector<std::string> ids, uint64_t seed, std::string ckpt_fs)
      : d_(d), ids_(std::move(ids)), rng_(seed), ckpt_fs_(std::move(ckpt_fs)) {}

  // Injects one random fault; returns a line saying what it did.
  std::string Step() {
    std::string freed;
    if (ballast_until_.has_value() && std::chrono::steady_clock::now() >= *ballast_until_) {
      Finish();
      freed = "ballast removed; ";
    }
    return freed + Fault();
  }
  // Gives the checkpoint filesystem its space back.
  void Finish() {
    if (ballast_until_.has_value()) ballast_removed_ = std::chrono::steady_clock::now();
    fs::remove(Ballast());
    ballast_until_.reset();
  }
  double Uniform(double lo, double hi) { return std::uniform_real_distribution<>(lo, hi)(rng_); }
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<>(lo, hi)(rng_); }

  struct LongStop {  // a rank stopped past the heartbeat deadline: its attempt must end
    std::string job;
    int attempt, rank;
    bool disk_full;  // the checkpoint filesystem was full then (or just before): a save may
                     // have failed first, and that is the attempt's error instead
  };
  const std::vector<LongStop>& long_stops() const { return long_stops_; }

 private:
  std::string Fault() {
    const int roll = Uniform(0, 99);
    if (roll < 35) return KillWorker();
    if (roll < 55) return RestartAcceld();
    if (roll < 75) return FillDisk();
    return StopRank(/*past_deadline=*/roll < 90);
  }
  void Sleep(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

  // A random worker of a random job in `state` (or any non-terminal job when UNSPECIFIED). A
  // RUNNING job counts only while every rank is alive: a gang already stopping for an earlier
  // fault would end with that fault's error.
  pid_t PickWorker(v1::JobState state, std::string* job, int* attempt) {
    std::vector<std::pair<std::string, int>> candidates;
    for (const std::string& id : ids_) {
      const v1::Job j = d_.Get(id);
      if (state == v1::JOB_STATE_UNSPECIFIED
              ? !IsTerminal(j.state())
              : j.state() == state && static_cast<int>(d_.Workers(id).size()) ==
                                          j.spec().resources().num_processes()) {
        candidates.emplace_back(id, j.attempt());
      }
    }
    if (candidates.empty()) return -1;
    std::tie(*job, *attempt) = candidates[Uniform(0, static_cast<int>(candidates.size()) - 1)];
    std::vector<pid_t> pids = d_.Workers(*job);
    if (pids.empty()) return -1;
    return pids[Uniform(0, static_cast<int>(pids.size()) - 1)];
  }
  static bool IsTerminal(v1::JobState s) {
    return s == v1::SUCCEEDED || s == v1::FAILED || s == v1::CANCELLED;
  }

  // One rank, or now and then the whole gang at once.
  std::string KillWorker() {
    std::string job;
    int attempt = 0;
    const pid_t pid = PickWorker(v1::JOB_STATE_UNSPECIFIED, &job, &attempt);
    if (pid < 0) return "kill worker: none running";
    if (Uniform(0, 3) == 0) {
      const std::vector<pid_t> gang = d_.Workers(job);
      for (pid_t p : gang) kill(p, SIGKILL);
      return absl::StrCat("SIGKILL all ", gang.size(), " workers of ", job, " attempt ", attempt);
    }
    const int rank = RankOf(pid);
    kill(pid, SIGKILL);
    return absl::StrCat("SIGKILL ", job, " attempt ", attempt, " rank ", rank, " (pid ", pid, ")");
  }

  // kill -9, or now and then SIGTERM (the graceful stop: running gangs checkpoint first).
  std::string RestartAcceld() {
    const int port = d_.port();
    std::string how = "SIGKILL";
    if (Uniform(0, 2) == 0) {
      how = "SIGTERM";
      const int code = d_.Terminate();
      EXPECT_EQ(code, 0) << "acceld's exit after SIGTERM";
    } else {
      d_.Kill9();
    }
    const double down = Uniform(0.0, 1.5);
    Sleep(down);
    d_.Start(5, port);
    return absl::StrFormat("%s acceld, restarted after %.1fs", how, down);
  }

  // The ballast stays while later faults strike; a later Step (or Finish) removes it.
  std::string FillDisk() {
    if (ballast_until_.has_value()) return "checkpoint filesystem already full";
    // Sometimes a little room is left, so that rank files fit and the commit's own writes
    // (metadata.json, latest) are the ones that fail.
    const int64_t room = Uniform(0, 2) == 0 ? Uniform(0, 3 << 20) : 0;
    const int64_t bytes = FillWithBallast(Ballast(), room);
    const double hold = Uniform(1.0, 6.0);
    ballast_until_ = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(hold));
    return absl::StrFormat("checkpoint filesystem full (%d bytes of ballast, %d left) for %.1fs",
                           bytes, room, hold);
  }
  std::string Ballast() const { return ckpt_fs_ + "/ballast"; }

  // Past the deadline, acceld must notice the silent rank and restart the gang; a brief stop
  // (under half the deadline) must pass unnoticed.
  std::string StopRank(bool past_deadline) {
    std::string job;
    int attempt = 0;
    const pid_t pid = PickWorker(v1::RUNNING, &job, &attempt);
    if (pid < 0) return "stop rank: no job running";
    const int rank = RankOf(pid);
    // A save that met the full disk can report its error seconds after the ballast is gone (two
    // shared cores, a gang of 2 that must agree before it says so), and that error may then end
    // the attempt before the heartbeat deadline does.
    const bool disk_full = ballast_until_.has_value() || Seconds(ballast_removed_) < 10;
    const double stopped = past_deadline ? kHeartbeatTimeoutS + 3 : Uniform(0.2, 1.0);
    kill(pid, SIGSTOP);
    Sleep(stopped);
    kill(pid, SIGCONT);  // harmless when acceld has killed it meanwhile
    if (past_deadline) long_stops_.push_back({job, attempt, rank, disk_full});
    return absl::StrFormat("SIGSTOP %s attempt %d rank %d for %.1fs", job, attempt, rank, stopped);
  }

  Daemon& d_;
  std::vector<std::string> ids_;
  std::mt19937_64 rng_;
  std::string ckpt_fs_;
  std::vector<LongStop> long_stops_;
  std::optional<std::chrono::steady_clock::time_point> ballast_until_;
  std::chrono::steady_clock::time_point ballast_removed_;
};

TEST(ControlPlaneChaos, JobsSurviveRandomFaultsWithTheStateOfAnUninterruptedRun) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to mount a tmpfs for the checkpoints";
  const uint64_t seed = Seed();
  std::cout << "chaos seed " << seed << " (replay: ACCEL_CHAOS_SEED=" << seed << ")" << std::endl;
  RecordProperty("seed", std::to_string(seed));
  const auto test_start = std::chrono::steady_clock::now();
  const std::string root = FreshDir();
  const std::vector<ChaosJob> jobs = Jobs();

  // The uninterrupted runs, on an ordinary disk.
  {
    Daemon ref(root + "/ref");
    fs::create_directories(ref.dir());
    ref.Start(5);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    std::vector<std::string> ids;
    for (const ChaosJob& j : jobs)
      ids.push_back(ref.Submit(JobFile(ref.dir(), j, "ckpt-" + j.name, 1)));
    for (const std::string& id : ids) {
      ASSERT_TRUE(ref.WaitState(id, v1::SUCCEEDED, 120)) << id << " " << ref.Get(id).error();
    }
    EXPECT_EQ(ref.Terminate(), 0);
  }
  std::cout << "reference runs: " << Seconds(test_start) << "s" << std::endl;

  // The chaos run: checkpoints on a 24 MiB tmpfs (the three jobs keep about 8 MiB).
  Daemon d(root + "/chaos");
  fs::create_directories(d.dir());
  const std::string ckpt_fs = d.dir() + "/ckptfs";
  Tmpfs tmpfs(ckpt_fs, 24);
  if (!tmpfs.error().empty())
    GTEST_SKIP() << "cannot mount the checkpoint tmpfs: " << tmpfs.error();
  d.Start(5);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  std::vector<std::string> ids;
  for (size_t i = 0; i < jobs.size(); ++i) {
    ids.push_back(
        d.Submit(JobFile(d.dir(), jobs[i], ckpt_fs + "/" + jobs[i].name, static_cast<int>(i) + 1)));
  }
  // A user follows each job through every fault (accelctl reconnects to a restarted acceld).
  std::vector<testing::ChildProcess> watchers;
  for (const std::string& id : ids) {
    watchers.push_back(
        testing::StartProcess({ACCELCTL_BIN, "--server", d.address(), "--token-file",
                               d.dir() + "/state/token", "watch", id, "--output", "json"},
                              d.dir(), "watch-" + id));
  }
  // A test that stops early does not leave its followers behind.
  std::unique_ptr<void, std::function<void(void*)>> reap_watchers(&watchers, [&](void*) {
    for (const testing::ChildProcess& w : watchers) {
      if (w.pid > 0) testing::WaitProcess(w, 0);  // kills one still running, and reaps it
    }
  });
  Chaos chaos(d, ids, seed, ckpt_fs);
  const auto chaos_start = std::chrono::steady_clock::now();
  auto all_ended = [&] {
    for (const std::string& id : ids) {
      const v1::JobState s = d.Get(id).state();
      if (s != v1::SUCCEEDED && s != v1::FAILED && s != v1::CANCELLED) return false;
    }
    return true;
  };
  int faults = 0;
  while (Seconds(chaos_start) < kFaultWindowS && !all_ended()) {
    std::this_thread::sleep_for(std::chrono::duration<double>(chaos.Uniform(0.3, 2.5)));
    const std::string what = chaos.Step();
    ASSERT_FALSE(::testing::Test::HasFatalFailure()) << what;
    std::cout << absl::StrFormat("[%6.1fs] %s", Seconds(chaos_start), what) << std::endl;
    ++faults;
  }
  chaos.Finish();
  std::cout << faults << " faults in " << Seconds(chaos_start) << "s" << std::endl;
  ASSERT_TRUE(WaitFor(all_ended, 150)) << "jobs still running 150s after the last fault";
  std::cout << "all jobs ended " << Seconds(chaos_start) << "s after the first fault" << std::endl;

  int long_stops_on_a_free_disk = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    SCOPED_TRACE(ids[i] + " (" + jobs[i].name + ")");
    const v1::Job job = d.Get(ids[i]);
    EXPECT_EQ(job.state(), v1::SUCCEEDED) << job.error();
    EXPECT_EQ(job.last_step(), kSteps - 1);
    std::cout << ids[i] << " " << jobs[i].name << ": attempt " << job.attempt()
              << ", restarts used " << job.restarts_used() << std::endl;
    const std::vector<v1::Event> events = d.Events(ids[i]);
    ExpectConsecutive(events);
    ASSERT_FALSE(events.empty());
    // The follower saw every event once, in order, and ended with the job.
    EXPECT_EQ(testing::WaitProcess(watchers[i], 60), 0)
        << testing::ReadAll(watchers[i].stderr_path);
    watchers[i].pid = -1;  // reaped
    std::stringstream seen(testing::ReadAll(watchers[i].stdout_path));
    int64_t expected_seq = 0;
    for (std::string line; std::getline(seen, line);) {
      const int64_t seq = std::stoll(nlohmann::json::parse(line)["seq"].get<std::string>());
      ASSERT_EQ(seq, ++expected_seq) << "the follower of " << ids[i];
    }
    EXPECT_EQ(expected_seq, static_cast<int64_t>(events.size())) << "the follower of " << ids[i];
    EXPECT_EQ(events.back().state().state(), v1::SUCCEEDED);
    // A rank stopped past the deadline ended its attempt, and acceld said why (unless a full
    // disk failed a save first: then the first rank to report may be one that only learned
    // that another rank's part or rank 0's commit failed).
    for (const Chaos::LongStop& stop : chaos.long_stops()) {
      if (stop.job != ids[i]) continue;
      std::string why = "(none)";
      for (const v1::Event& e : events) {
        if (e.has_state() && e.attempt() == stop.attempt && e.state().state() == v1::RESTARTING) {
          why = e.state().message();
        }
      }
      const std::string heartbeat = absl::StrCat("rank ", stop.rank, " sent no heartbeat");
      EXPECT_TRUE(absl::StrContains(why, heartbeat) ||
                  (stop.disk_full && IsFullDiskSaveError(why)))
          << "attempt " << stop.attempt << " rank " << stop.rank << " ended: " << why;
      if (!stop.disk_full) ++long_stops_on_a_free_disk;
    }
    const std::string ckpt = ckpt_fs + "/" + jobs[i].name;
    ExpectCheckpointDirIntact(ckpt, kSteps);
    ExpectSameTrainingState(root + "/ref/ckpt-" + jobs[i].name + "/step_" + std::to_string(kSteps),
                            ckpt + "/step_" + std::to_string(kSteps));
  }
  // A brief stop never costs a restart: every restart for a silent registered rank is one of
  // the long stops.
  int hung_restarts = 0;
  for (const std::string& id : ids) {
    for (const v1::Event& e : d.Events(id)) {
      if (e.has_state() && e.state().state() == v1::RESTARTING &&
          absl::StrContains(e.state().message(), "sent no heartbeat") &&
          absl::StrContains(e.state().message(), "hung?")) {
        ++hung_restarts;
      }
    }
  }
  EXPECT_GE(hung_restarts, long_stops_on_a_free_disk);
  EXPECT_LE(hung_restarts, static_cast<int>(chaos.long_stops().size()));
  if (!::testing::Test::HasFailure()) fs::remove_all(root + "/ref");  // 2 GB of steps otherwise

  const std::string address = d.address();
  EXPECT_EQ(d.Terminate(), 0);
  // The attempt history: every attempt recorded once, in start order, each ended, the last
  // one succeeded.
  absl::StatusOr<std::unique_ptr<server::StateStore>> store =
      server::StateStore::Open(d.dir() + "/state/state.db");
  ASSERT_TRUE(store.ok()) << store.status();
  for (const std::string& id : ids) {
    const std::vector<server::AttemptRecord> attempts = *(*store)->ListAttempts(id);
    ASSERT_FALSE(attempts.empty()) << id;
    for (size_t a = 0; a < attempts.size(); ++a) {
      SCOPED_TRACE(absl::StrCat(id, " attempt ", attempts[a].attempt, ": ", attempts[a].outcome));
      EXPECT_EQ(attempts[a].attempt, static_cast<int>(a) + 1);
      EXPECT_FALSE(attempts[a].outcome.empty());
      EXPECT_GE(attempts[a].end_us, attempts[a].start_us);
      if (a > 0) {
        EXPECT_GE(attempts[a].start_us, attempts[a - 1].start_us);
      }
    }
    EXPECT_EQ(attempts.back().outcome, "succeeded") << id;
  }
  EXPECT_THAT(LeftoverProcesses(root, address), ::testing::IsEmpty());
  std::cout << "chaos test: " << Seconds(test_start) << "s, seed " << seed << std::endl;
}

}  // namespace
}  // namespace accel
