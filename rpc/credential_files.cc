#include "rpc/credential_files.h"

#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::rpc {

absl::StatusOr<std::string> ReadCredentialFile(Env* env, const std::string& path,
                                               absl::string_view what, uint64_t max_bytes) {
  // The Env opens without blocking and refuses anything but a regular file (posix_env.cc), so
  // a FIFO or a device is an error here, never a hang or an endless read.
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> file = env->NewRandomAccessFile(path);
  if (!file.ok()) {
    const absl::Status& s = file.status();
    if (absl::IsNotFound(s)) {
      return absl::NotFoundError(absl::StrCat(what, " ", path, " does not exist"));
    }
    if (absl::IsInvalidArgument(s)) {  // "<path> is a FIFO, not a regular file", a directory
      return absl::InvalidArgumentError(absl::StrCat(what, " ", s.message()));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read ", what, " ", path, ": ", s.message()));
  }
  const uint64_t size = (*file)->Size();
  if (size > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", path, " holds ", size,
                                                   " bytes; it may hold at most ", max_bytes,
                                                   ": is it the right file?"));
  }
  std::string contents(size, '\0');
  absl::Status read = (*file)->Read(0, size, contents.data());
  if (!read.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read ", what, " ", path, ": ", read.message()));
  }
  return contents;
}

absl::StatusOr<std::string> ParseBearerToken(absl::string_view contents, const std::string& path,
                                             absl::string_view what, size_t max_token_bytes,
                                             absl::string_view carrier) {
  const absl::string_view token = absl::StripAsciiWhitespace(contents);
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", path, " is empty"));
  }
  // A bearer token travels in a metadata / HTTP header: at most a few KiB of printable ASCII.
  // gRPC aborts the process on a header value with a control character (a newline inside the
  // token), so the check is here, before any call is made.
  if (token.size() > max_token_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " ", path, " holds a ", token.size(), "-byte token; a token is at most ",
        max_token_bytes, " (it travels in ", carrier, "): is it the right file?"));
  }
  for (size_t i = 0; i < token.size(); ++i) {
    const unsigned char ch = static_cast<unsigned char>(token[i]);
    if (ch < 0x21 || ch > 0x7e) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " ", path, " holds a character that cannot travel in a header (byte ",
          static_cast<int>(ch), " at offset ", (token.data() - contents.data()) + i,
          "; a token is printable ASCII without spaces, on one line)"));
    }
  }
  return std::string(token);
}

absl::StatusOr<std::string> ParseToken(absl::string_view contents, const std::string& path) {
  return ParseBearerToken(contents, path, "token file", kMaxTokenBytes, "a gRPC header");
}

absl::StatusOr<std::string> ReadToken(Env* env, const std::string& path) {
  ACCEL_ASSIGN_OR_RETURN(std::string contents,
                         ReadCredentialFile(env, path, "token file", kMaxTokenFileBytes));
  return ParseToken(contents, path);
}

absl::StatusOr<std::string> ReadPemFile(Env* env, const std::string& path, absl::string_view what,
                                        PemKind kind) {
  ACCEL_ASSIGN_OR_RETURN(std::string pem,
                         ReadCredentialFile(env, path, what, kMaxPemFileBytes));
  // gRPC answers an unparsable certificate only with a failed listen or an empty address list;
  // the marker check catches the common mistakes (a text file, the key given as the
  // certificate) at the door, naming the file.
  if (kind == PemKind::kCertificate && !absl::StrContains(pem, "-----BEGIN CERTIFICATE-----")) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " ", path, " holds no PEM certificate (no \"-----BEGIN CERTIFICATE-----\" line)"));
  }
  if (kind == PemKind::kPrivateKey &&
      !(absl::StrContains(pem, "-----BEGIN ") && absl::StrContains(pem, "PRIVATE KEY-----"))) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " ", path, " holds no PEM private key (no \"-----BEGIN ... PRIVATE KEY-----\" line)"));
  }
  return pem;
}

}  // namespace accel::rpc
