#include "server/http/http_request.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace accel::server {
namespace {

// RFC 9110 tchar: what a method and a field name are made of.
bool IsTokenChar(unsigned char c) {
  if (absl::ascii_isalnum(c)) return true;
  return absl::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != absl::string_view::npos;
}

bool IsToken(absl::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

// A field value: visible characters, spaces, tabs and obs-text; no other control character.
bool IsFieldValue(absl::string_view s) {
  for (unsigned char c : s) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

// The request-target's raw bytes: visible ASCII only (RFC 3986 has no spaces or controls; a
// non-ASCII byte must come percent-encoded).
bool IsTargetChar(unsigned char c) { return c > 0x20 && c < 0x7f; }

HttpRefusal Refuse(int status, std::string message) { return {status, std::move(message)}; }

// The text a refusal may quote from the request: short, and only printable ASCII.
std::string Quote(absl::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 60)) {
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  return absl::StrCat("\"", out, s.size() > 60 ? "...\"" : "\"");
}

bool ParseRequestLine(absl::string_view line, HttpRequest* r, HttpRefusal* refusal) {
  std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  if (parts.size() != 3 || !IsToken(parts[0]) || parts[1].empty()) {
    *refusal = Refuse(400, "malformed request line: expected METHOD /path HTTP/1.1, got " +
                               Quote(line));
    return false;
  }
  const absl::string_view version = parts[2];
  if (!absl::StartsWith(version, "HTTP/")) {
    *refusal = Refuse(400, "malformed request line: no HTTP version in " + Quote(line));
    return false;
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    *refusal = Refuse(505, "HTTP version not supported: " + Quote(version) + " (1.0 and 1.1 are)");
    return false;
  }
  r->minor_version = version.back() - '0';
  r->keep_alive = r->minor_version == 1;
  r->method = std::string(parts[0]);
  const absl::string_view target = parts[1];
  for (unsigned char c : target) {
    if (!IsTargetChar(c)) {
      *refusal = Refuse(400, "the request target has a control or non-ASCII byte");
      return false;
    }
  }
  if (target.front() != '/') {
    *refusal = Refuse(400, "the request target must be a path starting with '/', got " +
                               Quote(target));
    return false;
  }
  r->target = std::string(target);
  const size_t question = target.find('?');
  const absl::string_view raw_path = target.substr(0, question);
  if (!PercentDecode(raw_path, /*plus_is_space=*/false, &r->path)) {
    *refusal = Refuse(400, "bad percent-encoding in the path " + Quote(raw_path));
    return false;
  }
  if (!IsValidUtf8(r->path) || r->path.find('\0') != std::string::npos) {
    *refusal = Refuse(400, "the path " + Quote(raw_path) + " does not decode to UTF-8 text");
    return false;
  }
  if (question == absl::string_view::npos) return true;
  for (absl::string_view pair : absl::StrSplit(target.substr(question + 1), '&')) {
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string key, value;
    if (!PercentDecode(pair.substr(0, eq), true, &key) ||
        (eq != absl::string_view::npos && !PercentDecode(pair.substr(eq + 1), true, &value))) {
      *refusal = Refuse(400, "bad percent-encoding in the query " + Quote(pair));
      return false;
    }
    r->query.emplace_back(std::move(key), std::move(value));
  }
  return true;
}

// Applies the fields that shape the exchange: Content-Length, Transfer-Encoding, Connection.
bool ApplyFraming(const HttpLimits& limits, HttpRequest* r, HttpRefusal* refusal) {
  bool has_length = false, close = false, keep_alive = false;
  for (const auto& [name, value] : r->headers) {
    if (absl::EqualsIgnoreCase(name, "Transfer-Encoding")) {
      *refusal = Refuse(411, "Transfer-Encoding is not accepted (no route takes a body); send "
                             "Content-Length");
      return false;
    }
    if (absl::EqualsIgnoreCase(name, "Content-Length")) {
      int64_t length = 0;
      const bool digits = !value.empty() && value.size() <= 18 &&
                          std::all_of(value.begin(), value.end(), absl::ascii_isdigit);
      if (!digits) {
        *refusal = Refuse(400, "Content-Length: expected a number of bytes, got " + Quote(value));
        return false;
      }
      for (char c : value) length = length * 10 + (c - '0');
      if (has_length && length != r->content_length) {
        *refusal = Refuse(400, "two different Content-Length fields");
        return false;
      }
      has_length = true;
      r->content_length = length;
    }
    if (absl::EqualsIgnoreCase(name, "Connection")) {
      for (absl::string_view option : absl::StrSplit(value, ',')) {
        option = absl::StripAsciiWhitespace(option);
        close = close || absl::EqualsIgnoreCase(option, "close");
        keep_alive = keep_alive || absl::EqualsIgnoreCase(option, "keep-alive");
      }
    }
  }
  // "close" wins wherever it stands; HTTP/1.0 keeps the connection only when asked to.
  if (close) {
    r->keep_alive = false;
  } else if (keep_alive) {
    r->keep_alive = true;
  }
  if (static_cast<uint64_t>(r->content_length) > limits.max_body_bytes) {
    *refusal = Refuse(413, absl::StrCat("a body of ", r->content_length, " bytes is over the ",
                                        limits.max_body_bytes, "-byte limit (no route takes one)"));
    return false;
  }
  return true;
}

}  // namespace

std::string HttpRequest::Header(absl::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (absl::EqualsIgnoreCase(n, name)) return v;
  }
  return "";
}

bool HttpRequest::HasParam(absl::string_view name) const {
  for (const auto& [k, v] : query) {
    if (k == name) return true;
  }
  return false;
}

std::string HttpRequest::Param(absl::string_view name) const {
  for (const auto& [k, v] : query) {
    if (k == name) return v;
  }
  return "";
}

size_t RequestHeadLength(absl::string_view bytes, size_t* scanned) {
  // Resume one byte back: the previous search may have stopped between the two line ends.
  size_t i = *scanned > 0 ? *scanned - 1 : 0;
  for (; i < bytes.size(); ++i) {
    if (bytes[i] != '\n') continue;
    // An empty line: "\n\n", or "\n\r\n".
    if (i + 1 < bytes.size() && bytes[i + 1] == '\n') return i + 2;
    if (i + 2 < bytes.size() && bytes[i + 1] == '\r' && bytes[i + 2] == '\n') return i + 3;
    if (i + 2 >= bytes.size()) break;  // the next bytes may still end it
  }
  *scanned = std::min(i, bytes.size());
  return 0;
}

HttpRefusal HeadTooLarge(absl::string_view bytes, const HttpLimits& limits) {
  const absl::string_view prefix = bytes.substr(0, limits.max_head_bytes);
  if (prefix.find('\n') == absl::string_view::npos) {
    return Refuse(414, absl::StrCat("the request line is over the ", limits.max_head_bytes,
                                    "-byte limit"));
  }
  return Refuse(431, absl::StrCat("the request head is over the ", limits.max_head_bytes,
                                  "-byte limit"));
}

bool ParseRequestHead(absl::string_view head, const HttpLimits& limits, HttpRequest* request,
                      HttpRefusal* refusal) {
  *request = HttpRequest();
  if (head.size() > limits.max_head_bytes) {
    *refusal = HeadTooLarge(head, limits);
    return false;
  }
  std::vector<absl::string_view> lines;
  for (absl::string_view line : absl::StrSplit(head, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\r') != absl::string_view::npos) {
      *refusal = Refuse(400, "a bare CR inside a line of the request head");
      return false;
    }
    lines.push_back(line);
  }
  // A complete head ends with an empty line; StrSplit gives one more empty piece after it.
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty()) {
    *refusal = Refuse(400, "an empty request");
    return false;
  }
  if (!ParseRequestLine(lines[0], request, refusal)) return false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const absl::string_view line = lines[i];
    if (line.empty()) {
      *refusal = Refuse(400, "an empty line inside the request head");
      return false;
    }
    if (line.front() == ' ' || line.front() == '\t') {
      *refusal = Refuse(400, "folded header lines are not accepted");
      return false;
    }
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos || !IsToken(line.substr(0, colon))) {
      *refusal = Refuse(400, "malformed header field " + Quote(line));
      return false;
    }
    const absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (!IsFieldValue(value)) {
      *refusal = Refuse(400, "a control character in header field " + Quote(line.substr(0, colon)));
      return false;
    }
    request->headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  return ApplyFraming(limits, request, refusal);
}

bool PercentDecode(absl::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '+' && plus_is_space) {
      out->push_back(' ');
    } else if (c != '%') {
      out->push_back(c);
    } else {
      if (i + 2 >= in.size()) return false;
      if (!absl::ascii_isxdigit(in[i + 1]) || !absl::ascii_isxdigit(in[i + 2])) return false;
      auto hex = [](char h) {
        return absl::ascii_isdigit(h) ? h - '0' : absl::ascii_tolower(h) - 'a' + 10;
      };
      out->push_back(static_cast<char>(hex(in[i + 1]) * 16 + hex(in[i + 2])));
      i += 2;
    }
  }
  return true;
}

bool IsValidUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = s[i];
    int extra = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      extra = 1, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3, cp = c & 0x07;
    } else {
      return false;  // a continuation byte first, an overlong lead (c0, c1), or over U+10FFFF
    }
    if (i + extra >= s.size()) return false;
    for (int k = 1; k <= extra; ++k) {
      const unsigned char cc = s[i + k];
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    // Overlong forms, UTF-16 surrogates, and what lies past U+10FFFF.
    if ((extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

}  // namespace accel::server
