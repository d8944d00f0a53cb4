#include "engine/text/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cctype>

#include "absl/strings/str_cat.h"
#include "engine/text/utf8.h"

namespace accel::text {
namespace {

std::string ErrorText(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof(buffer)) < 0) return absl::StrCat(code);
  return reinterpret_cast<const char*>(buffer);
}

pcre2_code* Code(void* code) { return static_cast<pcre2_code*>(code); }

// Oniguruma's \s (what HF's patterns mean) is Unicode White_Space: U+0009-000D, U+0085 and the
// separators Zs/Zl/Zp. PCRE2's UCP \s adds U+180E (Mongolian vowel separator, a format
// character since Unicode 6.3), so \s and \S are spelled out before compiling.
constexpr std::string_view kSpaceSet = R"(\t\n\x0B\f\r\x{85}\p{Z})";

// `pattern` with \s and \S replaced by kSpaceSet classes. \S inside a [...] class cannot be
// spelled that way and is left to PCRE2 (it differs from Oniguruma at U+180E only).
std::string SpellOutWhitespace(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[i + 1];
      if (e == 'Q') {  // \Q...\E quotes everything up to \E
        const size_t end = pattern.find("\\E", i + 2);
        const size_t stop = end == std::string_view::npos ? pattern.size() : end + 2;
        out.append(pattern.substr(i, stop - i));
        i = stop - 1;
      } else if (e == 's') {
        out += in_class ? std::string(kSpaceSet) : absl::StrCat("[", std::string(kSpaceSet), "]");
        ++i;
      } else if (e == 'S' && !in_class) {
        out += absl::StrCat("[^", std::string(kSpaceSet), "]");
        ++i;
      } else {
        out += c;
        out += e;
        ++i;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (in_class && c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
      const size_t end = pattern.find(":]", i + 2);  // a POSIX class such as [:alpha:]
      if (end != std::string_view::npos) {
        out.append(pattern.substr(i, end + 2 - i));
        i = end + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

// Per-thread match data, grown to the largest pattern seen: FindAll runs once per text piece,
// and allocating match data there would cost more than matching short pieces.
pcre2_match_data* ThreadMatchData() {
  struct Holder {
    pcre2_match_data* data = pcre2_match_data_create(32, nullptr);
    ~Holder() { pcre2_match_data_free(data); }
  };
  thread_local Holder holder;
  return holder.data;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Regex>> Regex::Compile(std::string_view pattern,
                                                      std::string_view where) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  const std::string spelled = SpellOutWhitespace(pattern);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(spelled.data()), spelled.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (code == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(where), ": regex \"", std::string(pattern), "\" does not compile: ",
        ErrorText(error), " (at offset ", offset, " of \"", spelled, "\")"));
  }
  uint32_t captures = 0;
  pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &captures);
  if (captures >= 32) {
    pcre2_code_free(code);
    return absl::InvalidArgumentError(absl::StrCat(std::string(where), ": regex \"",
                                                   std::string(pattern), "\" has ", captures,
                                                   " groups (31 at most)"));
  }
  // JIT is an optimisation only: without it (or when its stack runs out) matching falls back
  // to the interpreter.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return std::unique_ptr<Regex>(new Regex(code, std::string(pattern)));
}

std::string Regex::Escape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u)) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

Regex::~Regex() { pcre2_code_free(Code(code_)); }

absl::Status Regex::FindAll(std::string_view text,
                            std::vector<std::pair<size_t, size_t>>* matches) const {
  pcre2_match_data* data = ThreadMatchData();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    int rc =
        pcre2_match(Code(code_), subject, text.size(), start, PCRE2_NO_UTF_CHECK, data, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      rc = pcre2_match(Code(code_), subject, text.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                       data, nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      return absl::InternalError(absl::StrCat("regex \"", pattern_, "\" failed on a ", text.size(),
                                              "-byte text: ", ErrorText(rc)));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const size_t begin = ovector[0], end = ovector[1];
    matches->emplace_back(begin, end);
    if (end > begin) {
      start = end;
    } else if (end < text.size()) {
      start = end + CharLength(static_cast<unsigned char>(text[end]));
    } else {
      break;
    }
  }
  return absl::OkStatus();
}

absl::Status Regex::ReplaceAll(std::string_view content, std::string* text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  if (absl::Status s = FindAll(*text, &matches); !s.ok()) return s;
  if (matches.empty()) return absl::OkStatus();
  std::string out;
  size_t last = 0;
  for (const auto& [begin, end] : matches) {
    out.append(*text, last, begin - last);
    out.append(content);
    last = end;
  }
  out.append(*text, last);
  *text = std::move(out);
  return absl::OkStatus();
}

}  // namespace accel::text
