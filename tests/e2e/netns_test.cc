// NetnsLab on the real kernel: nodes have their own addresses, reach each other across the
// bridge at the shaped rate, and teardown leaves no process, namespace or link behind.
#include "tests/e2e/netns.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::testing {
namespace {

using ::testing::HasSubstr;

#define SKIP_WITHOUT_NETNS()                                          \
  if (const std::string why = NetnsLab::SkipReason(); !why.empty()) { \
    GTEST_SKIP() << why;                                              \
  }

struct Received {
  int64_t bytes = 0;
  double seconds = 0;  // from accept to end of stream
};

// Listens on `address`:port inside the namespace at `netns_path` (setns moves only this
// thread) and counts what the first connection sends.
Received Sink(const std::string& netns_path, const std::string& address, int port,
              std::promise<bool>* listening) {
  const int ns = ::open(netns_path.c_str(), O_RDONLY | O_CLOEXEC);
  const bool joined = ns >= 0 && ::setns(ns, CLONE_NEWNET) == 0;
  if (ns >= 0) ::close(ns);
  const int fd = joined ? ::socket(AF_INET, SOCK_STREAM, 0) : -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, address.c_str(), &addr.sin_addr);
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::listen(fd, 1) == 0;
  listening->set_value(ok);
  Received r;
  if (!ok) return r;
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const int conn = ::accept(fd, nullptr, nullptr);
  const auto start = std::chrono::steady_clock::now();
  if (conn >= 0) {
    ::setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[1 << 16];
    for (ssize_t n; (n = ::read(conn, buf, sizeof(buf))) > 0;) r.bytes += n;
    ::close(conn);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(fd);
  return r;
}

TEST(NetnsLabTest, NodesHaveOwnAddressesAndTalkAtTheShapedRate) {
  SKIP_WITHOUT_NETNS();
  auto lab = NetnsLab::Create(2, LinkShape{"100mbit", "1ms"});
  ASSERT_TRUE(lab.ok()) << lab.status();
  NetnsLab& l = **lab;
  EXPECT_NE(l.address(0), l.address(1));
  const std::string dir = ::testing::TempDir();
  const std::string tag = std::to_string(::getpid());

  // Each node sees its own address on eth0, and lo is up.
  ChildProcess show = l.Start(1, {"/usr/sbin/ip", "-o", "addr", "show"}, dir, "show" + tag);
  ASSERT_EQ(WaitProcess(show, 30), 0) << ReadAll(show.stderr_path);
  const std::string addrs = ReadAll(show.stdout_path);
  EXPECT_THAT(addrs, HasSubstr("inet " + l.address(1) + "/24"));
  EXPECT_THAT(addrs, HasSubstr("inet 127.0.0.1/8"));
  EXPECT_THAT(addrs, ::testing::Not(HasSubstr(l.address(0) + "/")));

  // 2.5 MB from node 0 to node 1 at 100 Mbit/s take at least 0.2 s (loopback: a few ms).
  std::promise<bool> listening;
  std::future<bool> ready = listening.get_future();
  const int port = 20000 + ::getpid() % 20000;
  auto sink = std::async(std::launch::async, Sink, l.netns_path(1), l.address(1), port, &listening);
  ASSERT_TRUE(ready.get());
  const int64_t bytes = 2'500'000;
  ChildProcess send = l.Start(0,
                              {"/bin/bash", "-c",
                               "head -c " + std::to_string(bytes) + " /dev/zero > /dev/tcp/" +
                                   l.address(1) + "/" + std::to_string(port)},
                              dir, "send" + tag);
  ASSERT_EQ(WaitProcess(send, 60), 0) << ReadAll(send.stderr_path);
  const Received got = sink.get();
  EXPECT_EQ(got.bytes, bytes);
  EXPECT_GT(got.seconds, 0.8 * bytes * 8 / 100e6) << l.applied();
  std::printf("%lld bytes in %.3f s over \"%s\"\n", static_cast<long long>(got.bytes), got.seconds,
              l.applied().c_str());
}

TEST(NetnsLabTest, TeardownKillsProcessesAndRemovesNamespacesAndLinks) {
  SKIP_WITHOUT_NETNS();
  std::string netns, path;
  ChildProcess sleeper;
  {
    auto lab = NetnsLab::Create(1);
    ASSERT_TRUE(lab.ok()) << lab.status();
    netns = (*lab)->netns_name(0);
    path = (*lab)->netns_path(0);
    sleeper = (*lab)->Start(0, {"/bin/sleep", "1000"}, ::testing::TempDir(), "sleeper");
    // nsenter execs sleep in place: the namespace then holds exactly the child's pid.
    for (int i = 0; i < 100 && (*lab)->ProcessesIn(0).empty(); ++i) usleep(20000);
    EXPECT_THAT((*lab)->ProcessesIn(0), ::testing::ElementsAre(sleeper.pid));
  }
  EXPECT_EQ(WaitProcess(sleeper, 10), 128 + SIGKILL);
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << path << " still exists";
}

TEST(NetnsLabTest, TwoLabsAtOnceGetDifferentSubnets) {
  SKIP_WITHOUT_NETNS();
  auto a = NetnsLab::Create(1), b = NetnsLab::Create(1);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE((*a)->bridge_address(), (*b)->bridge_address());
  EXPECT_NE((*a)->netns_name(0), (*b)->netns_name(0));
}

TEST(NetnsLabTest, RejectsABadNodeCount) {
  EXPECT_FALSE(NetnsLab::Create(0).ok());
  EXPECT_FALSE(NetnsLab::Create(65).ok());
}

}  // namespace
}  // namespace accel::testing
