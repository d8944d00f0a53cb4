#include "worker/torchrun_store.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "rpc/grpc_store.h"

namespace accel::worker {
namespace {

std::string GetEnv(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" ||
         absl::StartsWith(host, "127.");
}

// "host:port", bracketing a bare IPv6 literal.
std::string HostPort(const std::string& host, int port) {
  if (host.find(':') != std::string::npos && !absl::StartsWith(host, "[")) {
    return absl::StrCat("[", host, "]:", port);
  }
  return absl::StrCat(host, ":", port);
}

// This host's address on the route to host:port (no packet is sent: connect() on a UDP socket
// only picks the route). Unavailable naming MASTER_ADDR when it does not resolve.
absl::StatusOr<std::string> LocalAddressToward(const std::string& host, int port) {
  if (IsLoopback(host)) return std::string("127.0.0.1");
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 ||
      res == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("MASTER_ADDR: cannot resolve \"", host, "\" to an IPv4 address"));
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
    return absl::UnavailableError(
        absl::StrCat("MASTER_ADDR: no route from this host to ", host));
  }
  return local;
}

}  // namespace

absl::StatusOr<std::optional<TorchrunEnv>> TorchrunEnvFromEnvironment() {
  TorchrunEnv env;
  env.master_addr = GetEnv("MASTER_ADDR");
  const std::string port = GetEnv("MASTER_PORT");
  if (env.master_addr.empty() || port.empty()) return std::nullopt;
  if (!absl::SimpleAtoi(port, &env.master_port) || env.master_port < 1 ||
      env.master_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("MASTER_PORT: \"", port, "\" is not a port number (1-65535)"));
  }
  env.token = GetEnv("ACCEL_RDZV_TOKEN");
  return env;
}

absl::StatusOr<NetworkRendezvous> StartTorchrunRendezvous(const TorchrunEnv& env, int rank,
                                                          absl::Duration timeout) {
  NetworkRendezvous r;
  ACCEL_ASSIGN_OR_RETURN(r.local_address, LocalAddressToward(env.master_addr, env.master_port));
  const std::string target = HostPort(env.master_addr, env.master_port);
  if (rank == 0) {
    const std::string bind = IsLoopback(env.master_addr)
                                 ? target
                                 : absl::StrCat("0.0.0.0:", env.master_port);
    absl::StatusOr<std::unique_ptr<rpc::StoreServer>> server =
        rpc::StoreServer::Start(bind, env.token);
    if (!server.ok()) {
      return absl::UnavailableError(absl::StrCat("rank 0 (MASTER_PORT=", env.master_port,
                                                 "): ", server.status().message()));
    }
    r.server = std::move(*server);
  }
  // Ranks may start before rank 0 listens: wait for it rather than fail the first call,
  // retrying every second at most (gRPC's default backoff grows to two minutes).
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  const auto deadline = std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout);
  if (!channel->WaitForConnected(deadline)) {
    return absl::UnavailableError(absl::StrCat(
        "rank ", rank, ": no rendezvous store at MASTER_ADDR:MASTER_PORT = ", target,
        " after ", absl::FormatDuration(timeout), " (rank 0 serves it; is it running, and is "
        "the port reachable from here?)"));
  }
  r.store = std::make_unique<rpc::GrpcStore>(channel, env.token);
  return r;
}

}  // namespace accel::worker
