// Regex: the Unicode regular expressions of tokenizer files (GPT-2's, Llama 3's and Qwen's
// split patterns: \p{L}, \p{N}, lookahead, case-insensitive groups), through PCRE2 compiled
// with PCRE2_UTF | PCRE2_UCP and JIT when available. Hugging Face's Rust core uses Oniguruma;
// both are backtracking Perl-style engines with leftmost-first alternation, so the matches of
// these patterns agree (the parity test checks it on real text).
//
// Thread safety: a compiled Regex is immutable; FindAll may run from many threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace accel::text {

class Regex {
 public:
  // InvalidArgument naming `where` (e.g. "tokenizer.json: pre_tokenizer Split") and PCRE2's
  // message with the pattern offset when the pattern does not compile.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Regex>> Compile(std::string_view pattern,
                                                                      std::string_view where);
  // A pattern matching `literal` exactly (Hugging Face's {"String": ...} patterns).
  static std::string Escape(std::string_view literal);

  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the non-overlapping matches of the pattern in `text` (valid UTF-8), left to right,
  // as [begin, end) byte offsets. An empty match moves the search on by one character.
  // Internal only when PCRE2 gives up (its heap limit), naming the pattern.
  [[nodiscard]] absl::Status FindAll(std::string_view text,
                                     std::vector<std::pair<size_t, size_t>>* matches) const;

  // Replaces every match of FindAll in `text` with `content` (HF's Replace normalizer and
  // decoder).
  [[nodiscard]] absl::Status ReplaceAll(std::string_view content, std::string* text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  Regex(void* code, std::string pattern) : code_(code), pattern_(std::move(pattern)) {}
  void* code_;  // pcre2_code_8*, kept out of the header
  std::string pattern_;
};

}  // namespace accel::text
