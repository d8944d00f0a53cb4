// The HTTP front over real loopback sockets with small limits: connection caps per peer and in
// all, one deadline for a whole request head (a drip does not extend it), bodies refused from
// the head, /healthz answered while every handler thread is busy, keep-alive and HEAD.
// Peers are told apart by source address: 127.0.0.0/8 is all loopback, so a client may bind
// 127.0.0.2 and still reach a server on 127.0.0.1.
#include "server/http/http_front.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/http/http_server.h"

namespace accel::server {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using Clock = std::chrono::steady_clock;

// A blocking client socket from `from` (an address of 127.0.0.0/8) to 127.0.0.1:port.
int Connect(int port, const char* from = "127.0.0.1") {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  inet_pton(AF_INET, from, &src.sin_addr);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof(src)), 0) << from;
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof(dst)), 0);
  return fd;
}

void Send(int fd, const std::string& bytes) {
  EXPECT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
}

// What arrives within `seconds`, until the server closes (or `until` shows up).
std::string Receive(int fd, double seconds, const std::string& until = "") {
  std::string got;
  const auto give_up = Clock::now() + std::chrono::milliseconds(static_cast<int>(seconds * 1000));
  while (Clock::now() < give_up) {
    pollfd p{fd, POLLIN, 0};
    const int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now()).count());
    if (poll(&p, 1, std::max(left, 1)) <= 0) break;
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
    if (!until.empty() && got.find(until) != std::string::npos) break;
  }
  return got;
}

// True when the server has closed `fd` (EOF or reset) within `seconds`.
bool ClosedWithin(int fd, double seconds) {
  const auto give_up = Clock::now() + std::chrono::milliseconds(static_cast<int>(seconds * 1000));
  while (Clock::now() < give_up) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) > 0) {
      char buf[4096];
      if (recv(fd, buf, sizeof(buf), 0) <= 0) return true;
    }
  }
  return false;
}

class HttpFrontTest : public ::testing::Test {
 protected:
  void Serve(HttpLimits limits) {
    absl::StatusOr<HttpListener> listener = ListenHttp("127.0.0.1:0");
    ASSERT_TRUE(listener.ok()) << listener.status();
    port_ = listener->port;
    auto front = HttpFront::Start(
        listener->fd, limits,
        [](const HttpRequest& req) -> std::optional<HttpResponse> {
          if (req.path == "/healthz") return TextResponse(200, "ok");
          return std::nullopt;
        },
        [this](const HttpRequest& req) {
          if (req.path == "/block") blocked_.WaitForNotification();
          handled_.fetch_add(1);
          return routes_.Serve(req);
        });
    ASSERT_TRUE(front.ok()) << front.status();
    front_ = std::move(*front);
  }
  void SetUp() override {
    routes_.Get("/page", [](const HttpRequest& req, const std::vector<std::string>&) {
      return TextResponse(200, "page " + req.peer);
    });
    routes_.Get("/block", [](const HttpRequest&, const std::vector<std::string>&) {
      return TextResponse(200, "unblocked");
    });
  }
  void TearDown() override {
    if (!blocked_.HasBeenNotified()) blocked_.Notify();
    if (front_) front_->Stop();
  }

  // GET /healthz from `from` on a fresh connection: the status line, or "" after 1 s.
  std::string Healthz(const char* from = "127.0.0.1") {
    const int fd = Connect(port_, from);
    Send(fd, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
    const std::string got = Receive(fd, 1.0, "\r\n");
    close(fd);
    return got.substr(0, got.find("\r\n"));
  }

  HttpRoutes routes_;
  std::unique_ptr<HttpFront> front_;
  int port_ = 0;
  absl::Notification blocked_;
  std::atomic<int> handled_{0};
};

TEST_F(HttpFrontTest, APeerOverItsCapIsTurnedAwayAndOthersStillGetIn) {
  HttpLimits limits;
  limits.max_connections_per_peer = 4;
  Serve(limits);
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(Connect(port_, "127.0.0.2"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // all accepted
  const int fifth = Connect(port_, "127.0.0.2");
  EXPECT_THAT(Receive(fifth, 2.0), StartsWith("HTTP/1.1 503 Service Unavailable"));
  EXPECT_TRUE(ClosedWithin(fifth, 1.0));
  EXPECT_EQ(Healthz("127.0.0.1"), "HTTP/1.1 200 OK");
  for (int fd : idle) close(fd);
  close(fifth);
}

TEST_F(HttpFrontTest, AFullServerMakesRoomForANewPeerFromTheBiggestCrowd) {
  HttpLimits limits;
  limits.max_connections = 4;
  limits.max_connections_per_peer = 4;
  Serve(limits);
  std::vector<int> crowd;
  for (int i = 0; i < 4; ++i) crowd.push_back(Connect(port_, "127.0.0.2"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(Healthz("127.0.0.1"), "HTTP/1.1 200 OK");
  // The crowd's oldest connection made the room.
  EXPECT_TRUE(ClosedWithin(crowd[0], 1.0));
  for (int fd : crowd) close(fd);
}

TEST_F(HttpFrontTest, ADripDoesNotExtendTheHeadDeadline) {
  HttpLimits limits;
  limits.request_deadline = absl::Milliseconds(600);
  Serve(limits);
  const int fd = Connect(port_);
  const auto start = Clock::now();
  const std::string head = "GET /page HTTP/1.1\r\nX-Slow: " + std::string(100, 'a');
  std::string got;
  // A byte every 50 ms: a per-read timeout of 600 ms would never fire.
  for (char c : head) {
    if (send(fd, &c, 1, MSG_NOSIGNAL) != 1) break;
    got += Receive(fd, 0.05);
    if (!got.empty()) break;
  }
  got += Receive(fd, 1.0, "\r\n\r\n");
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_THAT(got, StartsWith("HTTP/1.1 408 Request Timeout"));
  EXPECT_LT(took, 3.0);
  EXPECT_TRUE(ClosedWithin(fd, 4.0));
  close(fd);
  // An idle connection is closed at the deadline without an answer.
  const int idle = Connect(port_);
  EXPECT_TRUE(ClosedWithin(idle, 3.0));
  close(idle);
}

TEST_F(HttpFrontTest, ABodyOverTheCapIsRefusedFromTheHeadAlone) {
  Serve(HttpLimits());
  const int fd = Connect(port_);
  Send(fd, "GET /healthz HTTP/1.1\r\nContent-Length: 400000000\r\n\r\n");
  const std::string got = Receive(fd, 2.0, "\r\n\r\n");
  EXPECT_THAT(got, StartsWith("HTTP/1.1 413 Content Too Large"));
  EXPECT_THAT(got, HasSubstr("Connection: close"));
  close(fd);
  EXPECT_EQ(handled_.load(), 0);

  const int chunked = Connect(port_);
  Send(chunked, "GET /page HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  EXPECT_THAT(Receive(chunked, 2.0, "\r\n"), StartsWith("HTTP/1.1 411 Length Required"));
  close(chunked);

  const int big_head = Connect(port_);
  Send(big_head, "GET /page HTTP/1.1\r\nX: " + std::string(20 << 10, 'a'));
  EXPECT_THAT(Receive(big_head, 2.0, "\r\n"),
              StartsWith("HTTP/1.1 431 Request Header Fields Too Large"));
  close(big_head);
}

TEST_F(HttpFrontTest, ASmallBodyIsDroppedAndTheConnectionServesTheNextRequest) {
  Serve(HttpLimits());
  const int fd = Connect(port_);
  // Pipelined: a POST with a body (405: no route takes one), then a GET, then a HEAD.
  Send(fd,
       "POST /page HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
       "GET /page HTTP/1.1\r\n\r\n"
       "HEAD /page HTTP/1.1\r\nConnection: close\r\n\r\n");
  const std::string got = Receive(fd, 3.0);
  close(fd);
  const size_t second = got.find("HTTP/1.1 200 OK");
  ASSERT_NE(second, std::string::npos) << got;
  EXPECT_THAT(got.substr(0, second), StartsWith("HTTP/1.1 405 Method Not Allowed"));
  EXPECT_THAT(got.substr(0, second), HasSubstr("Allow: GET, HEAD\r\n"));
  EXPECT_THAT(got, HasSubstr("page 127.0.0.1\n"));
  const size_t third = got.find("HTTP/1.1 200 OK", second + 1);
  ASSERT_NE(third, std::string::npos) << got;
  // HEAD: the GET's head (its length counted), no body.
  EXPECT_THAT(got.substr(third), HasSubstr("Content-Length: 15\r\n"));
  EXPECT_EQ(got.substr(third).find("page 127"), std::string::npos);
}

TEST_F(HttpFrontTest, HealthzAnswersWhileEveryHandlerThreadIsBusy) {
  HttpLimits limits;
  limits.handler_threads = 2;
  Serve(limits);
  std::vector<int> waiting;
  for (int i = 0; i < 4; ++i) {
    waiting.push_back(Connect(port_));
    Send(waiting.back(), "GET /block HTTP/1.1\r\n\r\n");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(Healthz(), "HTTP/1.1 200 OK");
  blocked_.Notify();
  for (int fd : waiting) {
    EXPECT_THAT(Receive(fd, 5.0, "unblocked"), HasSubstr("unblocked"));
    close(fd);
  }
}

}  // namespace
}  // namespace accel::server
