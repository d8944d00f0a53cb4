// Harness for the control-plane end-to-end tests: a real acceld in its own process (Daemon),
// job files, waiting helpers and event checks. Header-only test code, included by the test
// files of tests/controlplane only.
#pragma once

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

namespace accel::controlplane_testing {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
namespace v1 = accel::v1;

inline std::string FreshDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir =
      fs::path(::testing::TempDir()) / ("accel_cp_" + std::to_string(getpid())) / info->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// Polls `cond` until it holds or `seconds` (times testing::TimeScale()) have passed.
template <typename F>
bool WaitFor(F cond, double seconds) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration<double>(seconds * testing::TimeScale());
  while (std::chrono::steady_clock::now() < until) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

// /proc/<pid>/environ or cmdline split at its NULs; empty when the process is gone (or a
// zombie, whose environment reads empty).
inline std::vector<std::string> ProcStrings(pid_t pid, const char* file) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + file, std::ios::binary);
  std::vector<std::string> out;
  std::string item;
  while (std::getline(in, item, '\0')) out.push_back(item);
  return out;
}

// Live (non-zombie) processes whose environment says they are workers of `job` under the acceld
// at `address`.
inline std::vector<pid_t> WorkerPids(const std::string& address, const std::string& job) {
  std::vector<pid_t> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::vector<std::string> env = ProcStrings(std::stoi(name), "environ");
    const std::set<std::string> vars(env.begin(), env.end());
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
    std::vector<std::string> argv = {ACCELD_BIN,
                                     "--listen",
                                     "127.0.0.1:" + std::to_string(port),
                                     "--state-dir",
                                     dir_ + "/state",
                                     "--cpu-slots",
                                     std::to_string(slots),
                                     "--worker-bin",
                                     ACCEL_WORKER_BIN,
                                     "--address-file",
                                     dir_ + "/addr",
                                     "--stop-grace",
                                     "3"};
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

inline std::string WriteJob(const std::string& dir, const std::string& name,
                            const std::string& body) {
  const std::string path = dir + "/" + name + ".yaml";
  std::ofstream(path) << "name: " << name << "\ndata: {path: " << ACCEL_DATA << "}\n" << body;
  return path;
}

// Every event's seq is its index + 1: consecutive, from 1, no gaps or repeats.
inline void ExpectConsecutive(const std::vector<v1::Event>& events) {
  for (size_t i = 0; i < events.size(); ++i) {
    ASSERT_EQ(events[i].seq(), static_cast<int64_t>(i + 1)) << "event " << i;
  }
}

}  // namespace accel::controlplane_testing
