// Test helpers of the dashboard's tests: an in-process acceld, and the dashboard's routes on an
// HTTP front of their own (server/http/http_front.h), on 127.0.0.1 and a free port (no auth: acceld's
// HTTP server adds that in front). The tests' clients are cpp-httplib's (included here).
#pragma once

#include <httplib.h>

#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "server/acceld.h"
#include "server/http/dashboard.h"
#include "server/http/http_server.h"

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
    RegisterDashboardRoutes(routes_, deps);
    // Bound and listening once this returns, so clients may connect at once.
    absl::StatusOr<HttpListener> listener = ListenHttp("127.0.0.1:0");
    EXPECT_TRUE(listener.ok()) << listener.status();
    if (!listener.ok()) return;
    port_ = listener->port;
    absl::StatusOr<std::unique_ptr<HttpFront>> front = HttpFront::Start(
        listener->fd, HttpLimits(), nullptr,
        [this](const HttpRequest& req) { return routes_.Serve(req); });
    EXPECT_TRUE(front.ok()) << front.status();
    if (front.ok()) front_ = std::move(*front);
  }
  ~DashboardTestServer() {
    if (front_) front_->Stop();
  }
  DashboardTestServer(const DashboardTestServer&) = delete;
  DashboardTestServer& operator=(const DashboardTestServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  HttpRoutes routes_;
  std::unique_ptr<HttpFront> front_;
  int port_ = -1;
};

}  // namespace accel::server
