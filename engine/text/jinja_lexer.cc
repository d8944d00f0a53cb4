#include "engine/text/jinja_lexer.h"

#include <array>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace accel::text::jinja {
namespace {

// The template after preprocessing, with the original line of every byte.
struct Source {
  std::string text;
  std::vector<int> line;
  void Push(char c, int l) { text.push_back(c); line.push_back(l); }
};

bool AsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// HF's preprocess(): the regex replacements of src/lexer.ts, in their order, on bytes.
Source Preprocess(std::string_view t) {
  Source in;
  int line = 1;
  for (char c : t) { in.Push(c, line); if (c == '\n') ++line; }
  if (!in.text.empty() && in.text.back() == '\n') { in.text.pop_back(); in.line.pop_back(); }
  // lstrip_blocks: /^[ \t]*({[#%-])/gm -> "$1" (^ after \n or \r, as JS multiline does).
  Source a;
  for (size_t i = 0; i < in.text.size();) {
    const bool line_start = i == 0 || in.text[i - 1] == '\n' || in.text[i - 1] == '\r';
    if (line_start) {
      size_t j = i;
      while (j < in.text.size() && (in.text[j] == ' ' || in.text[j] == '\t')) ++j;
      if (j > i && j + 1 < in.text.size() && in.text[j] == '{' &&
          (in.text[j + 1] == '#' || in.text[j + 1] == '%' || in.text[j + 1] == '-')) {
        i = j;
        continue;
      }
    }
    a.Push(in.text[i], in.line[i]);
    ++i;
  }
  // trim_blocks: /([#%-]})\n/g -> "$1".
  Source b;
  for (size_t i = 0; i < a.text.size(); ++i) {
    if (a.text[i] == '\n' && i >= 2 && a.text[i - 1] == '}' &&
        (a.text[i - 2] == '#' || a.text[i - 2] == '%' || a.text[i - 2] == '-')) {
      continue;
    }
    b.Push(a.text[i], a.line[i]);
  }
  // /(\s*){%(-?)\s*(?:end)?generation\s*(-?)%}(\s*)/gs: the markers go, with the blanks around
  // them unless their side carries "-".
  Source out;
  const std::string& s = b.text;
  size_t done = 0;  // bytes of s already moved to out
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] != '{' || s[i + 1] != '%') continue;
    size_t j = i + 2;
    const bool lstrip = j < s.size() && s[j] == '-';
    if (lstrip) ++j;
    while (j < s.size() && AsciiSpace(s[j])) ++j;
    if (s.compare(j, 3, "end") == 0) j += 3;
    if (s.compare(j, 10, "generation") != 0) continue;
    j += 10;
    while (j < s.size() && AsciiSpace(s[j])) ++j;
    const bool rstrip = j < s.size() && s[j] == '-';
    if (rstrip) ++j;
    if (s.compare(j, 2, "%}") != 0) continue;
    j += 2;
    size_t before = i;
    while (before > done && AsciiSpace(s[before - 1])) --before;
    size_t after = j;
    while (after < s.size() && AsciiSpace(s[after])) ++after;
    for (size_t k = done; k < (lstrip ? before : i); ++k) out.Push(s[k], b.line[k]);
    if (!rstrip) for (size_t k = j; k < after; ++k) out.Push(s[k], b.line[k]);
    done = after;
    i = after - 1;
  }
  for (size_t k = done; k < s.size(); ++k) out.Push(s[k], b.line[k]);
  return out;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsWord(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// src/lexer.ts ORDERED_MAPPING_TABLE: the first entry that matches wins.
constexpr std::array<std::pair<std::string_view, Tok>, 29> kTable = {{
    {"{%", Tok::kOpenStmt}, {"%}", Tok::kCloseStmt}, {"{{", Tok::kOpenExpr},
    {"}}", Tok::kCloseExpr}, {"(", Tok::kLParen}, {")", Tok::kRParen}, {"{", Tok::kLBrace},
    {"}", Tok::kRBrace}, {"[", Tok::kLBracket}, {"]", Tok::kRBracket}, {",", Tok::kComma},
    {".", Tok::kDot}, {":", Tok::kColon}, {"|", Tok::kPipe}, {"<=", Tok::kCompare},
    {">=", Tok::kCompare}, {"==", Tok::kCompare}, {"!=", Tok::kCompare}, {"<", Tok::kCompare},
    {">", Tok::kCompare}, {"+", Tok::kAdd}, {"-", Tok::kAdd}, {"~", Tok::kAdd},
    {"**", Tok::kPow}, {"*", Tok::kMul}, {"//", Tok::kMul}, {"/", Tok::kMul}, {"%", Tok::kMul},
    {"=", Tok::kEquals},
}};

}  // namespace

size_t JsSpaceAt(std::string_view s, size_t pos) {
  if (pos >= s.size()) return 0;
  const auto c = static_cast<unsigned char>(s[pos]);
  if (c < 0x80) return AsciiSpace(static_cast<char>(c)) ? 1 : 0;
  auto at = [&](size_t k) { return pos + k < s.size() ? static_cast<unsigned char>(s[pos + k]) : 0; };
  if (c == 0xC2 && at(1) == 0xA0) return 2;                  // U+00A0
  if (c == 0xE1 && at(1) == 0x9A && at(2) == 0x80) return 3;  // U+1680
  if (c == 0xE2 && at(1) == 0x80 && (at(2) <= 0x8A || at(2) == 0xA8 || at(2) == 0xA9 ||
                                     at(2) == 0xAF)) {
    return at(2) >= 0x80 ? 3 : 0;  // U+2000..200A, U+2028, U+2029, U+202F
  }
  if (c == 0xE2 && at(1) == 0x81 && at(2) == 0x9F) return 3;  // U+205F
  if (c == 0xE3 && at(1) == 0x80 && at(2) == 0x80) return 3;  // U+3000
  if (c == 0xEF && at(1) == 0xBB && at(2) == 0xBF) return 3;  // U+FEFF
  return 0;
}

std::string_view TrimStart(std::string_view s) {
  size_t i = 0;
  while (size_t n = JsSpaceAt(s, i)) i += n;
  return s.substr(i);
}

std::string_view TrimEnd(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = end - 1;  // the first byte of the last character
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    if (JsSpaceAt(s, start) != end - start) break;
    end = start;
  }
  return s.substr(0, end);
}

absl::StatusOr<std::vector<Token>> Tokenize(std::string_view source) {
  const Source src = Preprocess(source);
  const std::string& s = src.text;
  std::vector<Token> tokens;
  size_t pos = 0;
  auto line_at = [&](size_t p) { return src.line.empty() ? 1 : src.line[std::min(p, s.size() - 1)]; };
  auto error = [&](size_t p, std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("chat template line ", line_at(p), ": ", std::string(what)));
  };
  auto push = [&](Tok type, std::string value, size_t at) {
    tokens.push_back(Token{type, std::move(value), line_at(at)});
  };
  auto strip_trailing = [&] {
    if (!tokens.empty() && tokens.back().type == Tok::kText) {
      tokens.back().value = std::string(TrimEnd(tokens.back().value));
      if (tokens.back().value.empty()) tokens.pop_back();
    }
  };
  auto skip_leading = [&] { while (size_t n = JsSpaceAt(s, pos)) pos += n; };
  auto starts = [&](std::string_view what) { return s.compare(pos, what.size(), what) == 0; };
  int curly_depth = 0;
  while (pos < s.size()) {
    const Tok last = tokens.empty() ? Tok::kCloseStmt : tokens.back().type;
    if (last == Tok::kCloseStmt || last == Tok::kCloseExpr || last == Tok::kComment) {
      const size_t begin = pos;
      while (pos < s.size() && !(s[pos] == '{' && pos + 1 < s.size() &&
                                 (s[pos + 1] == '%' || s[pos + 1] == '{' || s[pos + 1] == '#'))) {
        ++pos;
      }
      if (pos > begin) { push(Tok::kText, s.substr(begin, pos - begin), begin); continue; }
    }
    if (starts("{#")) {
      const size_t begin = pos;
      pos += 2;
      const bool strip_before = pos < s.size() && s[pos] == '-';
      if (strip_before) ++pos;
      const size_t end = s.find("#}", pos);
      if (end == std::string::npos) return error(begin, "missing end of comment tag \"#}\"");
      std::string comment = s.substr(pos, end - pos);
      const bool strip_after = !comment.empty() && comment.back() == '-';
      if (strip_after) comment.pop_back();
      if (strip_before) strip_trailing();
      push(Tok::kComment, std::move(comment), begin);
      pos = end + 2;
      if (strip_after) skip_leading();
      continue;
    }
    if (starts("{%-")) { strip_trailing(); push(Tok::kOpenStmt, "{%", pos); pos += 3; continue; }
    if (starts("{{-")) {
      strip_trailing(); push(Tok::kOpenExpr, "{{", pos); curly_depth = 0; pos += 3; continue;
    }
    while (pos < s.size() && AsciiSpace(s[pos])) ++pos;
    if (pos >= s.size()) break;
    if (starts("-%}")) { push(Tok::kCloseStmt, "%}", pos); pos += 3; skip_leading(); continue; }
    if (starts("-}}")) { push(Tok::kCloseExpr, "}}", pos); pos += 3; skip_leading(); continue; }
    const char c = s[pos];
    if (c == '-' || c == '+') {
      if (tokens.empty() || tokens.back().type == Tok::kText) {
        return error(pos, absl::StrCat("unexpected character '", std::string(1, c), "'"));
      }
      const Tok t = tokens.back().type;
      if (t != Tok::kIdent && t != Tok::kNumber && t != Tok::kString && t != Tok::kRParen &&
          t != Tok::kRBracket) {
        const size_t begin = pos++;
        std::string num;
        while (pos < s.size() && IsDigit(s[pos])) num.push_back(s[pos++]);
        if (!num.empty() && pos + 1 < s.size() && s[pos] == '.' && IsDigit(s[pos + 1])) {
          num.push_back(s[pos++]);
          while (pos < s.size() && IsDigit(s[pos])) num.push_back(s[pos++]);
        }
        push(num.empty() ? Tok::kUnary : Tok::kNumber, std::string(1, c) + num, begin);
        continue;
      }
    }
    bool matched = false;
    for (const auto& [seq, type] : kTable) {
      if (seq == "}}" && curly_depth > 0) continue;
      if (!starts(seq)) continue;
      push(type, std::string(seq), pos);
      if (type == Tok::kOpenExpr) curly_depth = 0;
      if (type == Tok::kLBrace) ++curly_depth;
      if (type == Tok::kRBrace) --curly_depth;
      pos += seq.size();
      matched = true;
      break;
    }
    if (matched) continue;
    if (c == '\'' || c == '"') {
      const size_t begin = pos++;
      std::string str;
      while (true) {
        if (pos >= s.size()) return error(begin, "unterminated string literal");
        if (s[pos] == c) break;
        if (s[pos] != '\\') { str.push_back(s[pos++]); continue; }
        if (++pos >= s.size()) return error(begin, "unterminated string literal");
        const char e = s[pos++];
        if (e == 'x' || e == 'u') {
          const size_t n = e == 'x' ? 2 : 4;
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k, ++pos) {
            const char h = pos < s.size() ? s[pos] : '\0';
            const int v = IsDigit(h) ? h - '0' : (h | 0x20) >= 'a' && (h | 0x20) <= 'f' ? (h | 0x20) - 'a' + 10 : -1;
            if (v < 0) return error(begin, absl::StrCat("invalid escape \\", std::string(1, e)));
            cp = cp * 16 + static_cast<uint32_t>(v);
          }
          AppendUtf8(str, cp);
          continue;
        }
        static constexpr std::string_view kFrom = "ntrbfv'\"\\", kTo = "\n\t\r\b\f\v'\"\\";
        const size_t k = kFrom.find(e);
        if (k == std::string_view::npos) {
          return error(begin, absl::StrCat("unexpected escaped character '", std::string(1, e), "'"));
        }
        str.push_back(kTo[k]);
      }
      ++pos;
      push(Tok::kString, std::move(str), begin);
      continue;
    }
    if (IsDigit(c)) {
      const size_t begin = pos;
      std::string num;
      while (pos < s.size() && IsDigit(s[pos])) num.push_back(s[pos++]);
      if ((tokens.empty() || tokens.back().type != Tok::kDot) && pos + 1 < s.size() &&
          s[pos] == '.' && IsDigit(s[pos + 1])) {
        num.push_back(s[pos++]);
        while (pos < s.size() && IsDigit(s[pos])) num.push_back(s[pos++]);
      }
      push(Tok::kNumber, std::move(num), begin);
      continue;
    }
    if (IsWord(c)) {
      const size_t begin = pos;
      while (pos < s.size() && IsWord(s[pos])) ++pos;
      push(Tok::kIdent, s.substr(begin, pos - begin), begin);
      continue;
    }
    return error(pos, absl::StrCat("unexpected character '", std::string(1, c), "'"));
  }
  return tokens;
}

}  // namespace accel::text::jinja
