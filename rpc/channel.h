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

// The token in `path` (surrounding whitespace dropped). NotFound naming the file when absent,
// InvalidArgument when empty.
[[nodiscard]] absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// A channel to `address`: "host:port" or "unix:/path". With `tls_ca` (a PEM file) the channel
// uses TLS and checks the server against it; otherwise it is plaintext.
[[nodiscard]] absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(
    const std::string& address, const std::string& tls_ca = "");

// Adds `authorization: Bearer <token>` to the call.
void Authorize(grpc::ClientContext& ctx, const std::string& token);

}  // namespace accel::rpc
