// absl::Status <-> grpc::Status. The canonical codes are the same numbers on both sides, so the
// restart policy and the CLI see the engine's codes unchanged (STYLE.md: error codes).
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace accel::rpc {

inline grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

inline absl::Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace accel::rpc
