// Test helper: the dashboard's routes on an httplib server of their own, on 127.0.0.1 and a
// free port, served from a thread (no auth: acceld's HTTP server adds that in front).
#pragma once

#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "server/dashboard.h"

namespace accel::server {

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
