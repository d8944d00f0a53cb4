// Fuzz target: acceld's HTTP request parser (server/http/http_request.h), the bytes any peer of
// --http-listen may send. Small limits, so the size refusals are reached too.
// Properties: RequestHeadLength finds the first empty line, the same when fed in two pieces
// (resuming its search) as at once; a refusal is one of the documented statuses with a
// message; a parsed request has a method token, a decoded path that starts with '/', is UTF-8
// and holds no NUL, header values without CR or LF, a body length within the cap — and written
// back out it parses to the same request.
#include <string>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_check.h"
#include "server/http/http_request.h"

namespace {

using accel::server::HttpLimits;
using accel::server::HttpRefusal;
using accel::server::HttpRequest;

size_t NaiveHeadLength(absl::string_view bytes) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != '\n') continue;
    if (i + 1 < bytes.size() && bytes[i + 1] == '\n') return i + 2;
    if (i + 2 < bytes.size() && bytes[i + 1] == '\r' && bytes[i + 2] == '\n') return i + 3;
  }
  return 0;
}

void CheckParsed(const HttpRequest& r, const HttpLimits& limits) {
  FUZZ_CHECK(!r.method.empty(), "an empty method");
  FUZZ_CHECK(!r.path.empty() && r.path[0] == '/', "a path not starting with '/': " + r.path);
  FUZZ_CHECK(accel::server::IsValidUtf8(r.path), "a path that is not UTF-8");
  FUZZ_CHECK(r.path.find('\0') == std::string::npos, "a NUL in the path");
  FUZZ_CHECK(r.minor_version == 0 || r.minor_version == 1, "an HTTP version other than 1.x");
  FUZZ_CHECK(r.content_length >= 0 &&
                 static_cast<uint64_t>(r.content_length) <= limits.max_body_bytes,
             absl::StrCat("a body length past the cap: ", r.content_length));
  for (const auto& [name, value] : r.headers) {
    FUZZ_CHECK(!name.empty(), "an empty field name");
    FUZZ_CHECK(value.find_first_of("\r\n") == std::string::npos, "CR or LF in a field value");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accel::fuzz;
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  HttpLimits limits;
  limits.max_head_bytes = 2048;
  limits.max_body_bytes = 4096;

  size_t scanned = 0;
  const size_t want = NaiveHeadLength(bytes);
  const size_t split = size / 2;
  size_t got = accel::server::RequestHeadLength(bytes.substr(0, split), &scanned);
  if (got == 0) got = accel::server::RequestHeadLength(bytes, &scanned);
  FUZZ_CHECK(got == want, absl::StrCat("head length ", got, " in pieces, ", want, " at once"));

  HttpRequest request;
  HttpRefusal refusal;
  const absl::string_view head = want ? bytes.substr(0, want) : bytes;
  if (!accel::server::ParseRequestHead(head, limits, &request, &refusal)) {
    const int s = refusal.status;
    FUZZ_CHECK(s == 400 || s == 411 || s == 413 || s == 414 || s == 431 || s == 505,
               absl::StrCat("an undocumented refusal status ", s));
    FUZZ_CHECK(!refusal.message.empty(), "a refusal without a reason");
    if (head.size() > limits.max_head_bytes) {
      const int too_large = accel::server::HeadTooLarge(head, limits).status;
      FUZZ_CHECK(too_large == 414 || too_large == 431, "an oversized head not 414 or 431");
    }
    return 0;
  }
  CheckParsed(request, limits);

  // Written back out (canonical CRLF, one space after the colon), it parses the same.
  std::string again = absl::StrCat(request.method, " ", request.target, " HTTP/1.",
                                   request.minor_version, "\r\n");
  for (const auto& [name, value] : request.headers) absl::StrAppend(&again, name, ": ", value, "\r\n");
  absl::StrAppend(&again, "\r\n");
  HttpRequest reparsed;
  limits.max_head_bytes = again.size() + 1;  // the canonical form may be longer than the input
  FUZZ_CHECK(accel::server::ParseRequestHead(again, limits, &reparsed, &refusal),
             "a parsed request refused when written back: " + refusal.message);
  FUZZ_CHECK(reparsed.method == request.method && reparsed.target == request.target &&
                 reparsed.path == request.path && reparsed.query == request.query &&
                 reparsed.headers == request.headers &&
                 reparsed.content_length == request.content_length &&
                 reparsed.keep_alive == request.keep_alive,
             "a request that does not survive being written back");
  return 0;
}
