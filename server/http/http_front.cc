#include "server/http/http_front.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/http/http_handler_pool.h"

namespace accel::server {
namespace {

constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;
constexpr size_t kReadChunk = 16 << 10;
// After a refusal the client may still be sending (a large body): read and drop its bytes for
// a moment, so it sees our answer instead of a reset, but no longer and no more than this.
constexpr absl::Duration kLinger = absl::Seconds(2);

// Deadlines run on the monotonic clock: a step of the wall clock neither extends nor ends them.
using Clock = std::chrono::steady_clock;
Clock::time_point After(absl::Duration d) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(absl::ToChronoNanoseconds(d));
}
constexpr int64_t kLingerBytes = 1 << 20;

std::string PeerAddress(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, text, sizeof(text));
  } else if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, text,
              sizeof(text));
  }
  return text;
}

}  // namespace

class HttpFront::Loop {
 public:
  Loop(int listen_fd, const HttpLimits& limits, Quick quick, Handler handler)
      : listen_fd_(listen_fd), limits_(limits), quick_(std::move(quick)),
        handler_(std::move(handler)) {}

  absl::Status Init() {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    reserve_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (epoll_ < 0 || wake_ < 0 || fcntl(listen_fd_, F_SETFL, O_NONBLOCK) != 0 ||
        !Watch(listen_fd_, kListenId, EPOLLIN, EPOLL_CTL_ADD) ||
        !Watch(wake_, kWakeId, EPOLLIN, EPOLL_CTL_ADD)) {
      return absl::InternalError(absl::StrCat("--http-listen: epoll: ", std::strerror(errno)));
    }
    pool_ = std::make_unique<HttpHandlerPool>(limits_.handler_threads, handler_,
                                              [this] { Wake(); });
    thread_ = std::thread([this] { Run(); });
    return absl::OkStatus();
  }

  void Stop() {
    if (stopped_.exchange(true)) return;
    stop_.store(true);
    Wake();
    if (thread_.joinable()) thread_.join();
    close(listen_fd_);
    if (pool_) pool_->Stop();
    // Only now: a handler finishing late still writes to wake_.
    for (int fd : {epoll_, wake_, reserve_}) {
      if (fd >= 0) close(fd);
    }
  }

 private:
  enum class State { kHead, kBody, kHandling, kWriting, kLingering };
  struct Conn {
    uint64_t id = 0;
    int fd = -1;
    std::string peer;
    State state = State::kHead;
    std::string in;           // bytes of the next request head (or pipelined after it)
    size_t scanned = 0;       // RequestHeadLength's progress in `in`
    int64_t body_left = 0;    // body bytes still to read and drop
    HttpRequest request;      // parsed, waiting for its body or its answer
    std::string out;          // the answer being written
    size_t written = 0;
    bool close_after = false;
    bool linger = false;      // the request was refused before all of it was read
    int64_t lingered = 0;
    Clock::time_point deadline = Clock::time_point::max();
  };
  bool Watch(int fd, uint64_t id, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    return epoll_ctl(epoll_, op, fd, &ev) == 0;
  }
  // Level-triggered; 0 while a handler runs (errors and hang-ups are reported regardless).
  void Interest(Conn& c, uint32_t events) { Watch(c.fd, c.id, events, EPOLL_CTL_MOD); }
  void Wake() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_, &one, sizeof(one));
  }

  void Run() {
    epoll_event events[64];
    while (!stop_.load()) {
      Clock::time_point next = After(absl::Seconds(1));
      for (const auto& [id, c] : conns_) next = std::min(next, c->deadline);
      const int64_t wait_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count() + 1;
      const int timeout_ms = static_cast<int>(std::clamp<int64_t>(wait_ms, 0, 1000));
      const int n = epoll_wait(epoll_, events, 64, timeout_ms);
      for (int i = 0; i < n; ++i) {
        const uint64_t id = events[i].data.u64;
        if (id == kListenId) {
          Accept();
        } else if (id == kWakeId) {
          TakeAnswers();
        } else if (auto it = conns_.find(id); it != conns_.end()) {
          OnEvent(*it->second, events[i].events);
        }
      }
      Expire(Clock::now());
    }
    while (!conns_.empty()) Close(*conns_.begin()->second);
  }

  // --- connections in and out -------------------------------------------------------------

  void Accept() {
    for (;;) {
      sockaddr_storage addr{};
      socklen_t len = sizeof(addr);
      const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if ((errno == EMFILE || errno == ENFILE) && reserve_ >= 0) {
          // Out of descriptors: take the connection with the spare one and close it, rather
          // than leave it in the backlog and spin on a listening socket that stays readable.
          close(reserve_);
          const int dropped = accept(listen_fd_, nullptr, nullptr);
          if (dropped >= 0) close(dropped);
          reserve_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
          continue;
        }
        return;  // EAGAIN, or an error of the one connection (ECONNABORTED, ...)
      }
      std::string peer = PeerAddress(addr);
      const auto known = per_peer_.find(peer);
      if (known != per_peer_.end() && known->second >= limits_.max_connections_per_peer) {
        Reject(fd, absl::StrCat("over ", limits_.max_connections_per_peer,
                                " connections from ", peer));
        continue;
      }
      if (static_cast<int>(conns_.size()) >= limits_.max_connections && !Evict(peer)) {
        Reject(fd, absl::StrCat("over ", limits_.max_connections, " connections in all"));
        continue;
      }
      auto c = std::make_unique<Conn>();
      c->id = next_id_++;
      c->fd = fd;
      c->peer = std::move(peer);
      c->deadline = After(limits_.request_deadline);
      if (!Watch(fd, c->id, EPOLLIN, EPOLL_CTL_ADD)) {
        close(fd);
        continue;
      }
      ++per_peer_[c->peer];
      conns_.emplace(c->id, std::move(c));
    }
  }

  // The total is full: close the oldest connection still waiting for its request from the
  // peer that holds the most, if that peer holds more than `newcomer` would after joining.
  bool Evict(const std::string& newcomer) {
    const std::string* crowd = nullptr;
    int most = 0;
    for (const auto& [peer, count] : per_peer_) {
      if (count > most) most = count, crowd = &peer;
    }
    const auto known = per_peer_.find(newcomer);
    const int newcomer_holds = known == per_peer_.end() ? 0 : known->second;
    if (crowd == nullptr || *crowd == newcomer || most <= newcomer_holds + 1) return false;
    Conn* oldest = nullptr;
    for (const auto& [id, c] : conns_) {
      if (c->peer == *crowd && c->state == State::kHead && (!oldest || c->id < oldest->id)) {
        oldest = c.get();
      }
    }
    if (oldest == nullptr) return false;
    Close(*oldest);
    return true;
  }

  // A connection over a cap: a 503 if the socket takes it at once, then closed.
  void Reject(int fd, const std::string& why) {
    const std::string bytes = SerializeResponse(
        [&] {
          HttpResponse r = TextResponse(503, "503 Service Unavailable: " + why);
          r.headers.emplace_back("Retry-After", "1");
          return r;
        }(),
        false, true, 1);
    [[maybe_unused]] ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    close(fd);
  }

  void Close(Conn& c) {
    epoll_ctl(epoll_, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    if (auto it = per_peer_.find(c.peer); it != per_peer_.end() && --it->second <= 0) {
      per_peer_.erase(it);
    }
    conns_.erase(c.id);  // destroys c
  }

  void Expire(Clock::time_point now) {
    std::vector<Conn*> late;
    for (const auto& [id, c] : conns_) {
      if (c->deadline <= now) late.push_back(c.get());
    }
    for (Conn* c : late) {
      if ((c->state == State::kHead && !c->in.empty()) || c->state == State::kBody) {
        Refuse(*c, {408, absl::StrCat("408 Request Timeout: the request did not arrive within ",
                                      absl::FormatDuration(limits_.request_deadline))});
      } else {
        Close(*c);  // idle, or not reading our answer, or done lingering
      }
    }
  }

  // --- one connection -----------------------------------------------------------------------

  void OnEvent(Conn& c, uint32_t events) {
    if (c.state == State::kHandling) {
      // Nothing is read meanwhile; a peer gone is closed now, its answer dropped when it comes.
      if (events & (EPOLLERR | EPOLLHUP)) Close(c);
      return;
    }
    if (events & EPOLLERR) return Close(c);
    if (c.state == State::kWriting) {
      if (events & (EPOLLOUT | EPOLLHUP)) Write(c);
      return;
    }
    if (events & (EPOLLIN | EPOLLHUP)) Read(c);
  }

  void Read(Conn& c) {
    char buf[kReadChunk];
    const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) return Close(c);  // the peer closed, or the socket failed
    switch (c.state) {
      case State::kLingering:
        c.lingered += n;
        if (c.lingered > kLingerBytes) Close(c);
        return;
      case State::kBody: {
        const int64_t dropped = std::min<int64_t>(c.body_left, n);
        c.body_left -= dropped;
        c.in.append(buf + dropped, static_cast<size_t>(n - dropped));
        if (c.body_left == 0) Dispatch(c);
        return;
      }
      case State::kHead:
        c.in.append(buf, static_cast<size_t>(n));
        return NextRequest(c);
      default:
        return;
    }
  }

  // Parses the head in c.in if it is all there, and moves on to its body or its answer.
  void NextRequest(Conn& c) {
    const size_t head = RequestHeadLength(c.in, &c.scanned);
    if (head == 0) {
      if (c.in.size() > limits_.max_head_bytes) Refuse(c, HeadTooLarge(c.in, limits_));
      return;
    }
    HttpRefusal refusal;
    if (!ParseRequestHead(absl::string_view(c.in).substr(0, head), limits_, &c.request, &refusal)) {
      return Refuse(c, refusal);
    }
    c.request.peer = c.peer;
    c.in.erase(0, head);
    c.scanned = 0;
    const int64_t in_buffer = std::min<int64_t>(c.request.content_length, c.in.size());
    c.in.erase(0, static_cast<size_t>(in_buffer));
    c.body_left = c.request.content_length - in_buffer;
    if (c.body_left > 0) {
      c.state = State::kBody;  // read and dropped: no route takes a body
      return;
    }
    Dispatch(c);
  }

  void Dispatch(Conn& c) {
    std::optional<HttpResponse> quick = quick_ ? quick_(c.request) : std::nullopt;
    if (quick.has_value()) return Answer(c, *quick);
    c.state = State::kHandling;
    c.deadline = Clock::time_point::max();  // our handler's time, not the peer's
    Interest(c, 0);
    pool_->Submit(c.id, c.request);
  }

  void Refuse(Conn& c, const HttpRefusal& refusal) {
    c.linger = true;
    c.request.keep_alive = false;
    c.request.method = "GET";  // a HEAD's refusal still carries its reason
    c.request.minor_version = 1;
    Answer(c, TextResponse(refusal.status, refusal.message));
  }

  void Answer(Conn& c, const HttpResponse& response) {
    c.close_after = c.linger || !c.request.keep_alive;
    c.out = SerializeResponse(response, c.request.method == "HEAD", c.close_after,
                              c.request.minor_version);
    c.written = 0;
    c.state = State::kWriting;
    c.deadline = After(limits_.write_deadline);
    Write(c);
  }

  void Write(Conn& c) {
    while (c.written < c.out.size()) {
      const ssize_t n =
          send(c.fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Interest(c, EPOLLOUT);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Close(c);
      c.written += static_cast<size_t>(n);
    }
    c.out.clear();
    c.out.shrink_to_fit();
    if (c.close_after && !c.linger) return Close(c);
    if (c.close_after) {
      shutdown(c.fd, SHUT_WR);
      c.state = State::kLingering;
      c.deadline = After(kLinger);
      return Interest(c, EPOLLIN);
    }
    c.state = State::kHead;
    c.request = HttpRequest();
    c.deadline = After(limits_.request_deadline);
    Interest(c, EPOLLIN);
    if (!c.in.empty()) NextRequest(c);  // pipelined
  }

  void TakeAnswers() {
    uint64_t count;
    [[maybe_unused]] ssize_t n = read(wake_, &count, sizeof(count));
    for (auto& [id, response] : pool_->TakeAnswers()) {
      auto it = conns_.find(id);
      if (it == conns_.end() || it->second->state != State::kHandling) continue;  // peer gone
      Answer(*it->second, response);
    }
  }

  const int listen_fd_;
  const HttpLimits limits_;
  const Quick quick_;
  const Handler handler_;
  int epoll_ = -1, wake_ = -1, reserve_ = -1;
  std::thread thread_;
  std::unique_ptr<HttpHandlerPool> pool_;
  std::atomic<bool> stop_{false}, stopped_{false};

  // The loop thread's alone.
  absl::flat_hash_map<uint64_t, std::unique_ptr<Conn>> conns_;
  absl::flat_hash_map<std::string, int> per_peer_;
  uint64_t next_id_ = 2;
};

absl::StatusOr<std::unique_ptr<HttpFront>> HttpFront::Start(int listen_fd, const HttpLimits& limits,
                                                            Quick quick, Handler handler) {
  auto loop = std::make_unique<Loop>(listen_fd, limits, std::move(quick), std::move(handler));
  if (absl::Status s = loop->Init(); !s.ok()) {
    loop->Stop();
    return s;
  }
  return std::unique_ptr<HttpFront>(new HttpFront(std::move(loop)));
}

HttpFront::HttpFront(std::unique_ptr<Loop> loop) : loop_(std::move(loop)) {}
HttpFront::~HttpFront() { Stop(); }
void HttpFront::Stop() {
  if (loop_) loop_->Stop();
}

}  // namespace accel::server
