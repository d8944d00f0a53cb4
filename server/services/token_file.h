// The client token: a random secret in a file only its owner can read. acceld creates it (mode
// 0600, 64 hex characters) on its first start when the file is absent; accelctl reads the same
// file. An existing file is read under rpc/credential_files.h's rules, the ones accelctl and the
// Python client apply (a regular file of at most 8 KiB, opened without blocking; a token of
// printable ASCII, 1..4096 bytes, surrounding whitespace dropped): InvalidArgument naming the
// file otherwise. One readable by group or others is refused (FailedPrecondition): a token
// others can read authenticates them too.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace accel::server {

[[nodiscard]] absl::StatusOr<std::string> EnsureTokenFile(const std::string& path);

}  // namespace accel::server
