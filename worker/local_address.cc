#include "worker/local_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace accel::worker {

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" ||
         absl::StartsWith(host, "127.");
}

std::string HostPort(const std::string& host, int port) {
  if (host.find(':') != std::string::npos && !absl::StartsWith(host, "[")) {
    return absl::StrCat("[", host, "]:", port);
  }
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<std::string> LocalAddressToward(const std::string& host, int port,
                                               const std::string& what) {
  if (IsLoopbackHost(host)) return std::string("127.0.0.1");
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 ||
      res == nullptr) {
    return absl::UnavailableError(
        absl::StrCat(what, ": cannot resolve \"", host, "\" to an IPv4 address"));
  }
  std::string local;
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_in addr{};
    socklen_t len = sizeof(addr);
    char buf[INET_ADDRSTRLEN] = {};
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0 &&
        inet_ntop(AF_INET, &addr.sin_addr, buf, sizeof(buf)) != nullptr) {
      local = buf;
    }
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(res);
  if (local.empty()) {
    return absl::UnavailableError(absl::StrCat(what, ": no route from this host to ", host));
  }
  return local;
}

std::pair<std::string, int> SplitTarget(const std::string& target) {
  if (absl::StartsWith(target, "unix:")) return {"localhost", 0};
  std::string host = target;
  int port = 0;
  if (absl::StartsWith(target, "[")) {
    const size_t close = target.find(']');
    if (close == std::string::npos) return {target, 0};
    host = target.substr(1, close - 1);
    if (close + 1 < target.size() && target[close + 1] == ':') {
      if (!absl::SimpleAtoi(target.substr(close + 2), &port)) port = 0;
    }
    return {host, port};
  }
  const size_t colon = target.rfind(':');
  if (colon != std::string::npos && target.find(':') == colon) {
    host = target.substr(0, colon);
    if (!absl::SimpleAtoi(target.substr(colon + 1), &port)) port = 0;
  }
  return {host, port};
}

}  // namespace accel::worker
