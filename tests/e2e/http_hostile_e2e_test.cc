// acceld's HTTP side under 200 hostile connections (docs/observability.md "Limits"): a real
// acceld process with --http-listen, and on loopback
//   - 200 idle connections from 127.0.0.2 (the per-peer cap turns most away at once),
//   - 8 clients from 127.0.0.3 dripping one header byte a second (the head deadline cuts them),
//   - 3 clients from 127.0.0.4 sending 400 MB bodies, one with the token to /api/v1/cluster
//     (refused with 413 from the head; nothing of the body is kept).
// Throughout, a prober on 127.0.0.1 gets /healthz within 1 s and the API with the token, and
// acceld's resident memory (VmRSS) grows by less than 64 MB. The hostile peers use other
// addresses than the prober because the per-peer cap is meant to shut one address out: what
// stays up is the server for everyone else. 127.0.0.0/8 is all loopback, so no setup is needed.
// No job runs, so the worker binary is /bin/true.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/process.h"

namespace accel {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using ::testing::StartsWith;

// A connected socket from `from` to 127.0.0.1:port, or -1.
int Connect(int port, const char* from) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  inet_pton(AF_INET, from, &src.sin_addr);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  timeval tv{1, 0};  // no call of this test blocks for long
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof(src)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof(dst)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// One request on a fresh connection from 127.0.0.1: the status line, or "" when no answer
// came within `seconds`.
std::string Ask(int port, const std::string& request, double seconds) {
  const int fd = Connect(port, "127.0.0.1");
  if (fd < 0) return "";
  std::string got;
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(request.size())) {
    const auto give_up = Clock::now() + std::chrono::milliseconds(static_cast<int>(seconds * 1e3));
    while (got.find("\r\n") == std::string::npos && Clock::now() < give_up) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      char buf[512];
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return got.substr(0, got.find("\r\n"));
}

int64_t RssKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

TEST(HttpHostileE2E, HealthzAndTheApiAnswerAndMemoryStaysFlatUnder200HostileConnections) {
  const std::string dir = ::testing::TempDir() + "/accel_http_hostile_" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  testing::ChildProcess acceld = testing::StartProcess(
      {ACCELD_BIN, "--listen", "127.0.0.1:0", "--state-dir", dir + "/state", "--cpu-slots", "1",
       "--worker-bin", "/bin/true", "--address-file", dir + "/addr", "--http-listen",
       "127.0.0.1:0", "--http-address-file", dir + "/http"},
      dir, "acceld");
  const auto started = Clock::now();
  while (!fs::exists(dir + "/http") && Clock::now() - started < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(fs::exists(dir + "/http")) << testing::ReadAll(acceld.stderr_path);
  std::string address, token;
  std::ifstream(dir + "/http") >> address;
  std::ifstream(dir + "/state/token") >> token;
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  const double bound_s = 1.0 * testing::TimeScale();
  const std::string healthz = "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n";
  const std::string cluster = "GET /api/v1/cluster HTTP/1.1\r\nAuthorization: Bearer " + token +
                              "\r\nConnection: close\r\n\r\n";
  ASSERT_THAT(Ask(port, healthz, 5 * bound_s), StartsWith("HTTP/1.1 200"));
  const int64_t rss_before = RssKb(acceld.pid);
  ASSERT_GT(rss_before, 0);

  std::atomic<bool> stop{false};
  // 200 idle connections from one address.
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) idle.push_back(Connect(port, "127.0.0.2"));
  // 8 drips from another: a byte a second; a connection the server cuts is opened again.
  std::atomic<int> drips_cut{0};
  std::thread drips([&] {
    const std::string head = "GET /api/v1/jobs HTTP/1.1\r\nX-Drip: " + std::string(200, 'a');
    std::vector<int> fds(8, -1);
    std::vector<size_t> sent(8, 0);
    while (!stop.load()) {
      for (int i = 0; i < 8; ++i) {
        if (fds[i] < 0) fds[i] = Connect(port, "127.0.0.3"), sent[i] = 0;
        if (fds[i] < 0) continue;
        char c = head[sent[i]++ % head.size()];
        char buf[512];
        // Cut: our byte refused, or the server's answer (408) or end arrived.
        if (send(fds[i], &c, 1, MSG_NOSIGNAL) != 1 ||
            recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT) >= 0) {
          close(fds[i]);
          fds[i] = -1;
          drips_cut.fetch_add(1);
        }
      }
      for (int t = 0; t < 20 && !stop.load(); ++t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  });
  // 3 senders of 400 MB bodies from a third address, one of them with the token.
  std::atomic<int64_t> body_bytes_sent{0};
  std::vector<std::thread> senders;
  for (int s = 0; s < 3; ++s) {
    senders.emplace_back([&, s] {
      const std::string head =
          (s == 0 ? "GET /api/v1/cluster HTTP/1.1\r\nAuthorization: Bearer " + token + "\r\n"
                  : std::string("GET /healthz HTTP/1.1\r\n")) +
          "Content-Length: 400000000\r\n\r\n";
      const std::string chunk(1 << 20, 'x');
      while (!stop.load()) {
        const int fd = Connect(port, "127.0.0.4");
        if (fd < 0) continue;
        ssize_t n = send(fd, head.data(), head.size(), MSG_NOSIGNAL);
        while (n > 0 && !stop.load()) {
          n = send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
          if (n > 0) body_bytes_sent.fetch_add(n);
        }
        close(fd);
        // Cut off: a moment before the next, so the test's own CPU goes to the prober too.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }

  // The prober: for 14 s (past the 10 s head deadline), /healthz within 1 s, the API, memory.
  int probes = 0;
  int64_t rss_peak = rss_before;
  const auto hostile_until = Clock::now() + std::chrono::seconds(14);
  while (Clock::now() < hostile_until) {
    const auto asked = Clock::now();
    EXPECT_THAT(Ask(port, healthz, bound_s), StartsWith("HTTP/1.1 200")) << "probe " << probes;
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - asked).count(), bound_s);
    if (probes % 4 == 0) {
      EXPECT_THAT(Ask(port, cluster, 2 * bound_s), StartsWith("HTTP/1.1 200")) << probes;
    }
    rss_peak = std::max(rss_peak, RssKb(acceld.pid));
    ++probes;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  stop.store(true);
  drips.join();
  for (std::thread& t : senders) t.join();
  for (int fd : idle) {
    if (fd >= 0) close(fd);
  }

  std::printf("%d probes; acceld VmRSS %lld kB before, %lld kB at most; %d drips cut; %lld MB "
              "of bodies sent\n",
              probes, static_cast<long long>(rss_before), static_cast<long long>(rss_peak),
              drips_cut.load(), static_cast<long long>(body_bytes_sent.load() >> 20));
  EXPECT_GT(probes, 20);
  EXPECT_LT(rss_peak - rss_before, 64 * 1024)
      << "acceld grew from " << rss_before << " kB to " << rss_peak << " kB";
  // Every drip was cut by the head deadline (10 s), not left to drip for 14 s.
  EXPECT_GE(drips_cut.load(), 8);
  // The body senders did push (the test exercised what it claims), far more than acceld grew.
  EXPECT_GT(body_bytes_sent.load(), int64_t{64} << 20);
  EXPECT_THAT(Ask(port, healthz, bound_s), StartsWith("HTTP/1.1 200"));

  kill(acceld.pid, SIGTERM);
  EXPECT_EQ(testing::WaitProcess(acceld, 30), 0) << testing::ReadAll(acceld.stderr_path);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace accel
