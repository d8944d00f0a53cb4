// Pre-tokenizers of tokenizer.json ("pre_tokenizer"): ByteLevel (add_prefix_space, use_regex
// with GPT-2's pattern), Split (the file's regex or string; behaviors Isolated and Removed;
// invert), Metaspace (prepend_scheme always / first / never, split) and Sequence, with Hugging
// Face's semantics. They cut a normalized piece of text into the words the model tokenizes one by
// one; empty words are dropped, as HF drops them. Any other type or Split behavior is refused by
// name when the file is loaded.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/text/json_fields.h"

namespace accel::text {

// The words of one stretch of text, and whether the first of them starts at offset 0 of the
// whole input (Metaspace's prepend_scheme "first" prepends only there, as HF does).
struct Words {
  std::vector<std::string> items;
  bool first_at_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces each word (valid UTF-8) with the words it splits into, in order.
  [[nodiscard]] virtual absl::Status PreTokenize(Words* words) const = 0;
};

enum class MetaspacePrepend { kAlways, kFirst, kNever };
struct MetaspaceOptions {
  std::string replacement;  // one character
  MetaspacePrepend prepend = MetaspacePrepend::kAlways;
  bool split = true;
};
// Metaspace's fields (shared by the pre-tokenizer and the decoder, as in HF): replacement,
// prepend_scheme (default "always"), the older add_prefix_space, split (default true).
[[nodiscard]] absl::StatusOr<MetaspaceOptions> MetaspaceFromJson(const Json& j, const JsonPath& at);

// The pre-tokenizer a tokenizer.json "pre_tokenizer" value describes; nullptr for null.
[[nodiscard]] absl::StatusOr<std::unique_ptr<PreTokenizer>> PreTokenizerFromJson(
    const Json& j, const JsonPath& at);

// GPT-2's: ByteLevel with add_prefix_space false and use_regex true (vocab.json + merges.txt).
[[nodiscard]] absl::StatusOr<std::unique_ptr<PreTokenizer>> Gpt2PreTokenizer();

}  // namespace accel::text
