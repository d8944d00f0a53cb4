// End to end with real processes on 127.0.0.1: acceld (its own process, killed with -9 where
// the test says so), accel-worker ranks it starts, and accelctl's job commands.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "CLI/CLI.hpp"
#include "accel/v1/coordinator.grpc.pb.h"
#include "client/job_commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "rpc/channel.h"
#include "tests/e2e/process.h"

namespace accel {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
namespace v1 = accel::v1;

std::string FreshDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(::testing::TempDir()) / ("accel_cp_" + std::to_string(getpid())) /
                 info->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

template <typename F>
bool WaitFor(F cond, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

// Live (non-zombie) processes whose environment says they are workers of `job` under the acceld
// at `address`.
std::vector<pid_t> WorkerPids(const std::string& address, const std::string& job) {
  std::vector<pid_t> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream env(entry.path() / "environ", std::ios::binary);
    std::string content((std::istreambuf_iterator<char>(env)), {});
    std::set<std::string> vars;
    std::stringstream ss(content);
    std::string var;
    while (std::getline(ss, var, '\0')) vars.insert(var);
    if (vars.count("ACCEL_COORDINATOR=" + address) && vars.count("ACCEL_JOB_ID=" + job)) {
      out.push_back(std::stoi(name));
    }
  }
  return out;
}

class Daemon {
 public:
  explicit Daemon(std::string dir) : dir_(std::move(dir)) {}
  ~Daemon() { Kill9(); }

  // port 0: any free port. With tls_ca, extra_args should carry --tls-cert / --tls-key, and
  // the test's channel and accelctl use TLS with that CA.
  void Start(int slots, int port = 0, std::vector<std::string> extra_args = {},
             std::string tls_ca = "") {
    fs::remove(dir_ + "/addr");
    tls_ca_ = std::move(tls_ca);
    std::vector<std::string> argv = {
        ACCELD_BIN, "--listen", "127.0.0.1:" + std::to_string(port), "--state-dir",
        dir_ + "/state", "--cpu-slots", std::to_string(slots), "--worker-bin", ACCEL_WORKER_BIN,
        "--address-file", dir_ + "/addr", "--stop-grace", "3"};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    child_ = testing::StartProcess(argv, dir_, "acceld-" + std::to_string(++starts_));
    ASSERT_TRUE(WaitFor([&] { return fs::exists(dir_ + "/addr"); }, 20))
        << testing::ReadAll(child_.stderr_path);
    std::ifstream in(dir_ + "/addr");
    in >> address_;
    channel_ = *rpc::MakeChannel(address_, tls_ca_);
    stub_ = v1::Coordinator::NewStub(channel_);
    token_ = *rpc::ReadTokenFile(dir_ + "/state/token");
    running_ = true;
  }
  void Kill9() {
    if (!running_) return;
    kill(child_.pid, SIGKILL);
    testing::WaitProcess(child_, 10);
    running_ = false;
  }
  int Terminate() {
    kill(child_.pid, SIGTERM);
    running_ = false;
    return testing::WaitProcess(child_, 30);
  }
  int port() const { return std::stoi(address_.substr(address_.rfind(':') + 1)); }

  // accelctl <args> against this daemon; returns the exit code, output in *out / *err.
  int Accelctl(std::vector<std::string> args, std::string* out = nullptr,
               std::string* err = nullptr) {
    args.insert(args.begin(), {"--server", address_, "--token-file", dir_ + "/state/token"});
    if (!tls_ca_.empty()) args.insert(args.begin(), {"--tls-ca", tls_ca_});
    CLI::App app;
    app.require_subcommand(1);
    client::JobCommand command;
    client::AddJobCommands(app, &command);
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
      app.parse(reversed);
    } catch (const CLI::ParseError& e) {
      ADD_FAILURE() << "bad accelctl arguments: " << e.what();
      return -1;
    }
    std::ostringstream o, e;
    const int code = client::RunParsedJobCommand(command, o, e);
    if (out) *out = o.str();
    if (err) *err = e.str();
    return code;
  }

  v1::Job Get(const std::string& id) {
    grpc::ClientContext ctx;
    rpc::Authorize(ctx, token_);
    v1::GetJobRequest req;
    req.set_job_id(id);
    v1::Job job;
    grpc::Status s = stub_->GetJob(&ctx, req, &job);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return job;
  }
  std::vector<v1::Event> Events(const std::string& id, int64_t from_seq = 0) {
    grpc::ClientContext ctx;
    rpc::Authorize(ctx, token_);
    v1::WatchJobRequest req;
    req.set_job_id(id);
    req.set_from_seq(from_seq);
    auto reader = stub_->WatchJob(&ctx, req);
    std::vector<v1::Event> out;
    v1::Event e;
    while (reader->Read(&e)) out.push_back(e);
    EXPECT_TRUE(reader->Finish().ok());
    return out;
  }
  std::string Submit(const std::string& job_file) {
    std::string out, err;
    EXPECT_EQ(Accelctl({"submit", job_file, "--output", "json"}, &out, &err), 0) << err;
    return nlohmann::json::parse(out)["id"].get<std::string>();
  }
  bool WaitState(const std::string& id, v1::JobState state, double seconds) {
    return WaitFor([&] { return Get(id).state() == state; }, seconds);
  }
  std::vector<pid_t> Workers(const std::string& job) { return WorkerPids(address_, job); }

  const std::string& address() const { return address_; }
  const std::string& dir() const { return dir_; }
  const testing::ChildProcess& child() const { return child_; }

 private:
  std::string dir_;
  testing::ChildProcess child_;
  bool running_ = false;
  int starts_ = 0;
  std::string address_, token_, tls_ca_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

std::string WriteJob(const std::string& dir, const std::string& name, const std::string& body) {
  const std::string path = dir + "/" + name + ".yaml";
  std::ofstream(path) << "name: " << name << "\ndata: {path: " << ACCEL_DATA << "}\n" << body;
  return path;
}

// Every event's seq is its index + 1: consecutive, from 1, no gaps or repeats.
void ExpectConsecutive(const std::vector<v1::Event>& events) {
  for (size_t i = 0; i < events.size(); ++i) {
    ASSERT_EQ(events[i].seq(), static_cast<int64_t>(i + 1)) << "event " << i;
  }
}

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
  ASSERT_TRUE(WaitFor([&] { return fs::exists(d.dir() + "/ckpt/latest") &&
                                   d.Get(id).last_step() >= 6; }, 60));
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
  std::thread watcher(
      [&] { watch_code = d.Accelctl({"watch", id, "--output", "json"}, &watch_out, &watch_err); });
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

TEST(ControlPlaneE2E, TlsClientsTrainAJobToSucceeded) {
  if (access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/openssl";
  Daemon d(FreshDir());
  const std::string cert = d.dir() + "/cert.pem", key = d.dir() + "/key.pem";
  const std::string cmd =
      "/usr/bin/openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " + key + " -out " + cert +
      " >" + d.dir() + "/openssl.log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << testing::ReadAll(d.dir() + "/openssl.log");
  d.Start(2, 0, {"--tls-cert", cert, "--tls-key", key}, cert);
  std::string out, err;
  const std::string job = WriteJob(d.dir(), "tls", R"(
model: {preset: gpt2-tiny}
train: {steps: 10, micro_batch: 2, seq_len: 32, log_every: 5}
resources: {num_processes: 2}
)");
  ASSERT_EQ(d.Accelctl({"submit", job, "--wait", "--output", "json"}, &out, &err), 0)
      << err << testing::ReadAll(d.child().stderr_path);
  // The workers could not have spoken TLS: they trained through acceld's private unix socket.
  // A plaintext client gets nothing.
  auto plain = v1::Coordinator::NewStub(*rpc::MakeChannel(d.address()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::Cluster cluster;
  EXPECT_FALSE(plain->GetCluster(&ctx, v1::GetClusterRequest(), &cluster).ok());
}

TEST(ControlPlaneE2E, GangsThatDoNotFitTogetherRunOneAfterTheOther) {
  Daemon d(FreshDir());
  d.Start(3);
  const std::string body = R"(
model: {preset: gpt2-tiny}
train: {steps: 30, micro_batch: 2, seq_len: 32, log_every: 10}
resources: {num_processes: 2}
)";
  const std::string a = d.Submit(WriteJob(d.dir(), "a", body));
  const std::string b = d.Submit(WriteJob(d.dir(), "b", body));
  ASSERT_TRUE(d.WaitState(b, v1::SUCCEEDED, 60));
  ASSERT_EQ(d.Get(a).state(), v1::SUCCEEDED);
  EXPECT_GE(d.Get(b).start_time_us(), d.Get(a).end_time_us());
  std::string out;
  ASSERT_EQ(d.Accelctl({"cluster", "--output", "json"}, &out), 0);
  EXPECT_EQ(nlohmann::json::parse(out)["free_slots"], 3);
}

TEST(ControlPlaneE2E, BadJobFilesAndTokensAreRejectedAndNothingIsQueued) {
  Daemon d(FreshDir());
  d.Start(2);
  std::string out, err;
  const std::string bad = WriteJob(d.dir(), "bad", "train: {steps: 10, stpes: 3}\n");
  EXPECT_EQ(d.Accelctl({"submit", bad}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("train.stpes: unknown key (did you mean train.steps?)"));
  const std::string too_big = WriteJob(d.dir(), "big", "resources: {num_processes: 3}\n");
  EXPECT_EQ(d.Accelctl({"submit", too_big}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("resources.num_processes"));
  // A DeepSpeed JSON that does not resolve: acceld's resolver names the file and the key.
  const std::string configs = fs::path(ACCEL_DATA).parent_path().parent_path() / "configs";
  const std::string bad_json = d.dir() + "/bad_ds.json";
  std::ofstream(bad_json) << R"({"zero_optimization": {"stage": 7}})";
  const std::string ds_job = WriteJob(d.dir(), "ds", "resources: {num_processes: 2}\n");
  EXPECT_EQ(d.Accelctl({"submit", ds_job, "--config", configs + "/ds_zero3_nvme.yaml",
                        "--deepspeed-config", bad_json}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr(bad_json));
  EXPECT_THAT(err, HasSubstr("zero_optimization.stage"));
  ASSERT_EQ(d.Accelctl({"list", "--output", "json"}, &out), 0);
  EXPECT_EQ(out, "");
  std::ofstream(d.dir() + "/wrong-token") << "not-the-token\n";
  chmod((d.dir() + "/wrong-token").c_str(), 0600);
  CLI::App app;
  client::JobCommand command;
  client::AddJobCommands(app, &command);
  std::vector<std::string> args = {"--token-file", d.dir() + "/wrong-token", "--server",
                                   d.address(), "list"};
  app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  std::ostringstream o, e;
  EXPECT_EQ(client::RunParsedJobCommand(command, o, e), 1);
  EXPECT_THAT(e.str(), HasSubstr("wrong token"));
}

}  // namespace
}  // namespace accel
