// Pre-tokenizers of tokenizer.json ("pre_tokenizer"): ByteLevel (add_prefix_space, use_regex
// with GPT-2's pattern), Split (the file's regex or string; behaviors Isolated and Removed;
// invert) and Sequence, with Hugging Face's semantics. They cut a normalized piece of text into
// the words the model tokenizes one by one; empty words are dropped, as HF drops them. Any
// other type or Split behavior is refused by name when the file is loaded.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/text/json_fields.h"

namespace accel::text {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces each word of `words` (valid UTF-8) with the words it splits into, in order.
  [[nodiscard]] virtual absl::Status PreTokenize(std::vector<std::string>* words) const = 0;
};

// The pre-tokenizer a tokenizer.json "pre_tokenizer" value describes; nullptr for null.
[[nodiscard]] absl::StatusOr<std::unique_ptr<PreTokenizer>> PreTokenizerFromJson(
    const Json& j, const JsonPath& at);

// GPT-2's: ByteLevel with add_prefix_space false and use_regex true (vocab.json + merges.txt).
[[nodiscard]] absl::StatusOr<std::unique_ptr<PreTokenizer>> Gpt2PreTokenizer();

}  // namespace accel::text
