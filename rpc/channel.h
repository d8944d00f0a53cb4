// Client-side plumbing shared by accelctl, accel-worker and the tests: where acceld keeps its
// state and token by default, reading the token, opening a channel, and attaching the bearer
// token to a call.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace accel::rpc {

inline constexpr char kDefaultListen[] = "127.0.0.1:7070";

// $XDG_STATE_HOME/accel, else ~/.local/state/accel.
std::string DefaultStateDir();
// DefaultStateDir() + "/token": acceld's client token file unless --token-file says otherwise.
std::string DefaultTokenFile();

// The token in `path` under rpc/credential_files.h's rules (a regular file, surrounding
// whitespace dropped, printable ASCII of at most 4096 bytes). NotFound naming the file and who
// writes it when absent; InvalidArgument naming the file for anything else wrong with it.
[[nodiscard]] absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// OK for an address MakeChannel dials: "host:port" (host a name, IPv4, or [IPv6]; port
// 1..65535, digits only), "unix:PATH", or a gRPC target URI with a scheme ("dns:///h:p",
// "ipv4:...", "unix-abstract:..."), which gRPC checks itself. InvalidArgument naming the
// address otherwise (gRPC would wrap a port above 65535 and dial another one).
[[nodiscard]] absl::Status CheckServerAddress(const std::string& address);

// A channel to `address` (CheckServerAddress). With `tls_ca` (a PEM file holding a
// certificate, rpc/credential_files.h) the channel uses TLS and checks the server against it;
// otherwise it is plaintext.
[[nodiscard]] absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(
    const std::string& address, const std::string& tls_ca = "");

// Adds `authorization: Bearer <token>` to the call.
void Authorize(grpc::ClientContext& ctx, const std::string& token);

}  // namespace accel::rpc
