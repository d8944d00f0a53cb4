// Fuzz target: the client token file and the PEM files acceld and accelctl read
// (rpc/credential_files.h): ParseToken on the bytes, then the same bytes as a file through
// ReadToken and ReadPemFile (MemEnv).
// Properties: an error is InvalidArgument naming the file, on one line; an accepted token is
// the input without surrounding ASCII whitespace, 1..4096 bytes of printable ASCII (what a gRPC
// header carries, so accelctl can never abort inside gRPC on it), and parses to itself again,
// with or without a trailing newline; the file reader accepts exactly what ParseToken does
// when the file is within 8 KiB and refuses it by its size otherwise; a PEM file is accepted
// exactly when it holds the marker of its kind.
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/testing/mem_env.h"
#include "fuzz/fuzz_check.h"
#include "rpc/credential_files.h"

namespace accel::fuzz {
namespace {

constexpr char kPath[] = "/state/token";

void CheckRefusal(const absl::Status& s) {
  CheckError(s, {absl::StatusCode::kInvalidArgument}, kPath);
  FUZZ_CHECK(!absl::StrContains(s.message(), '\n'), "a message of more than one line: " +
                                                       s.ToString());
}

void CheckToken(const std::string& token, absl::string_view input) {
  FUZZ_CHECK(!token.empty() && token.size() <= rpc::kMaxTokenBytes, "token size");
  for (const char ch : token) {
    FUZZ_CHECK(ch >= 0x21 && ch <= 0x7e, "a byte a gRPC header cannot carry");
  }
  FUZZ_CHECK(token == absl::StripAsciiWhitespace(input), "not the input stripped");
  auto again = rpc::ParseToken(token + "\n", kPath);
  FUZZ_CHECK(again.ok() && *again == token, "a token with its newline does not parse to itself");
}

}  // namespace
}  // namespace accel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accel::fuzz;
  namespace rpc = accel::rpc;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<std::string> parsed = rpc::ParseToken(input, kPath);
  if (parsed.ok()) {
    CheckToken(*parsed, input);
  } else {
    CheckRefusal(parsed.status());
  }

  accel::testing::MemEnv env;
  PutFile(&env, kPath, AsText(data, size));
  const absl::StatusOr<std::string> read = rpc::ReadToken(&env, kPath);
  if (size > rpc::kMaxTokenFileBytes) {
    FUZZ_CHECK(!read.ok(), "a token file over its cap was read");
    CheckRefusal(read.status());
    FUZZ_CHECK(absl::StrContains(read.status().message(), absl::StrCat("holds ", size, " bytes")),
               "the size refusal does not give the size: " + read.status().ToString());
  } else {
    FUZZ_CHECK(read.ok() == parsed.ok(), "the file reader and ParseToken disagree");
    FUZZ_CHECK(read.ok() ? *read == *parsed : read.status() == parsed.status(),
               "the file reader and ParseToken answer differently");
  }

  for (const auto kind : {rpc::PemKind::kCertificate, rpc::PemKind::kPrivateKey}) {
    const absl::StatusOr<std::string> pem = rpc::ReadPemFile(&env, kPath, "token file", kind);
    const bool marked = kind == rpc::PemKind::kCertificate
                            ? absl::StrContains(input, "-----BEGIN CERTIFICATE-----")
                            : absl::StrContains(input, "-----BEGIN ") &&
                                  absl::StrContains(input, "PRIVATE KEY-----");
    FUZZ_CHECK(pem.ok() == marked, "a PEM file accepted without its marker, or refused with it");
    if (pem.ok()) {
      FUZZ_CHECK(*pem == input, "a PEM file read back differently");
    } else {
      CheckRefusal(pem.status());
    }
  }
  return 0;
}
