// Test helpers of the dashboard's tests: an in-process acceld, and the dashboard's routes on an
// httplib server of their own, on 127.0.0.1 and a free port, served from a thread (no auth:
// acceld's HTTP server adds that in front).
#pragma once

#include <httplib.h>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "server/acceld.h"
#include "server/dashboard.h"

namespace accel::server {

// An acceld on 127.0.0.1 (any port) with 2 CPU slots and its state under `dir`, starting
// `worker_bin` for each rank, and with `http` its HTTP side on a free port too; nullptr (with
// the failure recorded) when it does not start.
inline std::unique_ptr<Acceld> StartTestAcceld(const std::string& dir, const std::string& worker_bin,
                                               bool http = false) {
  AcceldOptions o;
  if (http) o.http_listen = "127.0.0.1:0";
  o.listen = "127.0.0.1:0";
  o.state_dir = dir + "/state";
  o.cpu_slots = 2;
  o.worker_bin = worker_bin;
  o.stop_grace = absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<Acceld>> daemon = Acceld::Start(o);
  EXPECT_TRUE(daemon.ok()) << daemon.status();
  return daemon.ok() ? *std::move(daemon) : nullptr;
}

// A "worker" that only waits (it never registers, so its job stays STARTING): jobs whose events
// a test appends itself. Returns its path, in `dir`.
inline std::string WriteIdleWorker(const std::string& dir) {
  const std::string path = dir + "/idle-worker.sh";
  std::ofstream(path) << "#!/bin/sh\nexec sleep 30\n";
  chmod(path.c_str(), 0755);
  return path;
}

// The dashboard's routes over `d`.
inline DashboardDeps DepsOf(Acceld& d) {
  return DashboardDeps{.registry = &d.registry(), .events = &d.events(), .store = &d.store(),
                       .manager = &d.manager(), .version = "accel dashboard test"};
}

class DashboardTestServer {
 public:
  explicit DashboardTestServer(const DashboardDeps& deps) {
    RegisterDashboardRoutes(server_, deps);
    // Bound and listening once this returns, so clients may connect before the thread runs.
    port_ = server_.bind_to_any_port("127.0.0.1");
    EXPECT_GT(port_, 0) << "could not bind 127.0.0.1";
    if (port_ <= 0) return;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() does nothing before the accept loop runs, so wait for it (at most 10 s).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_.is_running() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_TRUE(server_.is_running()) << "the dashboard's server did not start";
  }
  ~DashboardTestServer() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  DashboardTestServer(const DashboardTestServer&) = delete;
  DashboardTestServer& operator=(const DashboardTestServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
};

}  // namespace accel::server
