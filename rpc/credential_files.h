// The small files a connection is made from: the client token (acceld --token-file, accelctl
// --token-file), TLS certificates and keys (acceld --tls-cert / --tls-key / --worker-tls-ca) and
// CA bundles (accelctl --tls-ca, a worker's ACCEL_TLS_CA). acceld and accelctl read all of them
// through this one reader, and the Python client (clients/python/accel_client) applies the same
// rules (docs/rpc.md "Auth"):
//   - only a regular file is read: a FIFO, a device (/dev/zero), a socket or a directory is
//     refused before a byte is read, and opening never blocks (PosixEnv opens O_NONBLOCK and
//     checks S_ISREG with fstat), so a FIFO cannot hang a daemon that has blocked SIGTERM;
//   - a file larger than its cap is refused from its size alone (a token file 8 KiB, a PEM file
//     1 MiB), so nothing grows without end;
//   - a token is the file's text with surrounding ASCII whitespace dropped (a trailing newline
//     is fine), 1..4096 bytes of printable ASCII without spaces: what a gRPC header carries;
//   - a PEM file must hold a PEM block of its kind ("-----BEGIN CERTIFICATE-----" for
//     certificates and CA bundles, "-----BEGIN ... PRIVATE KEY-----" for keys).
// Every error is one line naming the file; bad contents and non-regular files are
// InvalidArgument, a missing file NotFound, an unreadable one FailedPrecondition.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/base/env.h"

namespace accel::rpc {

// The longest token: it travels in every call's `authorization` header.
inline constexpr size_t kMaxTokenBytes = 4096;
// A token file may be larger than its token only by surrounding whitespace.
inline constexpr uint64_t kMaxTokenFileBytes = 2 * kMaxTokenBytes;
// Certificate chains and CA bundles are a few KiB; a system bundle is about 200 KiB.
inline constexpr uint64_t kMaxPemFileBytes = 1 << 20;

// The contents of the regular file `path`, at most `max_bytes` long. `what` names the file's
// role at the start of every message ("token file", "--tls-cert", "CA file").
[[nodiscard]] absl::StatusOr<std::string> ReadCredentialFile(Env* env, const std::string& path,
                                                             absl::string_view what,
                                                             uint64_t max_bytes);

// The token in a token file's `contents` under the rules above; `path` is named in errors.
// This is the function that sees untrusted bytes (fuzz/token_file_fuzz.cc).
[[nodiscard]] absl::StatusOr<std::string> ParseToken(absl::string_view contents,
                                                     const std::string& path);

// The same rules for another bearer token: `what` names the file's role in messages ("token
// file", "--kube-token-file"), `max_token_bytes` replaces kMaxTokenBytes (a Kubernetes
// service-account JWT may be longer than acceld's own tokens) and `carrier` says where it
// travels ("a gRPC header", "an HTTP header").
[[nodiscard]] absl::StatusOr<std::string> ParseBearerToken(absl::string_view contents,
                                                           const std::string& path,
                                                           absl::string_view what,
                                                           size_t max_token_bytes,
                                                           absl::string_view carrier);

// ReadCredentialFile(kMaxTokenFileBytes) then ParseToken.
[[nodiscard]] absl::StatusOr<std::string> ReadToken(Env* env, const std::string& path);

enum class PemKind { kCertificate, kPrivateKey };

// A PEM file of `kind` (see above), at most kMaxPemFileBytes. `what` as for ReadCredentialFile.
[[nodiscard]] absl::StatusOr<std::string> ReadPemFile(Env* env, const std::string& path,
                                                      absl::string_view what, PemKind kind);

}  // namespace accel::rpc
