// Generate: a continuation of a prompt, token by token, on a KvDecoder (engine/model/
// kv_decoder.h). The prompt is one Step over all its positions; each new token is one Step of one
// position. Stops at the first of: an end token (EOS; not part of the result), a stop string
// (the text is cut before it; the ids keep the token that completed it), max_new_tokens, or the
// decoder's context (its capacity).
//
// Text: `decode` turns the new ids into text (the tokenizer's, or a byte-level model's bytes).
// `stream`, when set, receives the text as it grows, never text that a later token could still
// change: a trailing U+FFFD (an incomplete UTF-8 sequence of a byte-level BPE) and the tail that
// could begin a stop string are held back until they are settled. The pieces it receives
// concatenate to the result's text.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/generate/sampler.h"
#include "engine/model/kv_decoder.h"

namespace accel::generate {

struct GenerateOptions {
  int64_t max_new_tokens = 128;
  SamplingOptions sampling;
  std::vector<int32_t> end_ids;  // EOS
  std::vector<std::string> stop_strings;
};

struct GenerateResult {
  std::vector<int32_t> ids;  // the new tokens (without an end token)
  std::string text;
  // Why it stopped: "eos", "stop", "length" (max_new_tokens) or "context".
  std::string stop_reason;
};

using DecodeFn = std::function<std::string(absl::Span<const int32_t> ids)>;
using StreamFn = std::function<void(std::string_view text)>;

// InvalidArgument for an empty prompt, a prompt that leaves no room for a new token in the
// decoder's context (naming both lengths), max_new_tokens < 1, an empty stop string, or bad
// sampling options. The decoder is Reset first.
[[nodiscard]] absl::StatusOr<GenerateResult> Generate(model::KvDecoder& decoder, int64_t vocab,
                                                      const std::vector<int32_t>& prompt,
                                                      const GenerateOptions& options,
                                                      const DecodeFn& decode,
                                                      const StreamFn& stream = nullptr);

}  // namespace accel::generate
