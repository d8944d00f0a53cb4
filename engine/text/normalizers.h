// Normalizers of tokenizer.json ("normalizer"): NFC, Prepend, Replace and Sequence, with Hugging
// Face's semantics. They run on each piece of text between added tokens (so Llama 2's Prepend
// "▁" starts every such piece, as in HF), and on the content of added tokens marked
// "normalized": true. Any other type is refused by name when the file is loaded.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/text/json_fields.h"

namespace accel::text {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Rewrites `text` (valid UTF-8, kept valid).
  [[nodiscard]] virtual absl::Status Normalize(std::string* text) const = 0;
};

// The normalizer a tokenizer.json "normalizer" value describes; nullptr for null.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Normalizer>> NormalizerFromJson(const Json& j,
                                                                             const JsonPath& at);

// Unicode NFC (ICU's normalizer; ASCII text is returned untouched without calling it).
[[nodiscard]] absl::Status NormalizeNfc(std::string* text);

}  // namespace accel::text
