// Which of this host's addresses other hosts reach it at: the address gloo listens on must be
// reachable by every peer, and the peers are wherever the rendezvous point (MASTER_ADDR, or
// acceld for daemon workers) is reachable from.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace accel::worker {

// localhost, ::1, [::1] and 127.x.x.x.
bool IsLoopbackHost(const std::string& host);

// "host:port", bracketing a bare IPv6 literal.
std::string HostPort(const std::string& host, int port);

// This host's address on the route to host:port: "127.0.0.1" for a loopback host, else what the
// kernel picks for a UDP socket connected there (no packet is sent). Unavailable naming `what`
// ("MASTER_ADDR", "ACCEL_COORDINATOR") when host does not resolve to IPv4 or has no route.
[[nodiscard]] absl::StatusOr<std::string> LocalAddressToward(const std::string& host, int port,
                                                             const std::string& what);

// The host of a gRPC target "host:port", "[v6]:port" or "unix:/path" ("localhost" for unix:)
// and its port (0 when none).
std::pair<std::string, int> SplitTarget(const std::string& target);

}  // namespace accel::worker
