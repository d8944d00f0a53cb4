// Post-processors of tokenizer.json ("post_processor"), which add special tokens when encoding
// with add_special_tokens: TemplateProcessing (the "single" template: its SpecialToken pieces
// around the sequence $A, e.g. Llama 2's "<s> $A"), ByteLevel (offsets only: no ids change) and
// Sequence. Any other type, or a single template naming $B, is refused by name at load.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/text/json_fields.h"

namespace accel::text {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Applies the processor to the ids of one sequence. Without add_special_tokens HF applies no
  // template, and neither does this.
  virtual void Process(std::vector<int32_t>* ids, bool add_special_tokens) const = 0;
};

// nullptr for null.
[[nodiscard]] absl::StatusOr<std::unique_ptr<PostProcessor>> PostProcessorFromJson(
    const Json& j, const JsonPath& at);

}  // namespace accel::text
