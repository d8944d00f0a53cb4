// RecordEncoder: one record of a dataset file (records.h) → token ids + loss mask.
//
// Every document starts as the tokenizer's post-processor makes it (BOS when the tokenizer adds
// one) and ends with EOS (appended unless the last id already is EOS). Per format:
//   text, jsonl          Encode(text, add_special_tokens=true) + EOS. No mask (every target
//                        counts).
//   prompt_completion    strings: ids = Encode(prompt + completion, true) + EOS; the first
//                        |Encode(prompt, true)| ids are masked (mask 0), the rest, EOS included,
//                        count — TRL's completion_only_loss, token for token.
//                        message lists: P = render(prompt, add_generation_prompt=true),
//                        F = render(prompt + completion, false); ids = Encode(F, false) + EOS,
//                        the first |Encode(P, false)| ids masked (TRL's conversational form).
//   messages             R = render(messages, false); ids = Encode(R, false) + EOS. For each
//                        assistant turn k, A_k = render(messages[:k], true) and
//                        B_k = render(messages[:k+1], false) must be prefixes of R; the ids from
//                        |Encode(R[:|A_k|])| to |Encode(R[:|B_k|])| count (the turn's content
//                        and its end-of-turn tokens), everything else is masked. The appended
//                        EOS counts when the token before it does. TRL marks the same spans with
//                        the template's {% generation %} tags instead; see docs/data.md.
// mask[i] = 1: id i is a target whose loss counts (the contract of docs/data.md "Mask shards").
//
// Errors are InvalidArgument with one line that names no file: the caller prefixes
// "file:line: " (prepare.cc). Thread safety: Encode is const and safe from many threads when
// the tokenizer and the chat renderer are.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/data/chat_renderer.h"
#include "engine/data/records.h"
#include "engine/text/tokenizer.h"

namespace accel::data {

struct EncodedDocument {
  std::vector<int32_t> ids;
  // Same length as ids for formats with a mask (FormatHasMask), else empty.
  std::vector<uint8_t> mask;
};

struct EncoderOptions {
  DatasetFormat format = DatasetFormat::kJsonl;
  std::string text_field = "text";
  // Needed by messages and by prompt_completion with message lists.
  ChatRenderer chat;
};

class RecordEncoder {
 public:
  // `tokenizer` must outlive the encoder. InvalidArgument when the tokenizer has no EOS token
  // (tokenizer_config.json eos_token, or GPT-2's "<|endoftext|>") or for the tokens format.
  [[nodiscard]] static absl::StatusOr<RecordEncoder> Create(const text::Tokenizer* tokenizer,
                                                            EncoderOptions options);

  [[nodiscard]] absl::StatusOr<EncodedDocument> Encode(std::string_view record) const;

  const EncoderOptions& options() const { return options_; }

 private:
  RecordEncoder(const text::Tokenizer* tokenizer, EncoderOptions options, int32_t eos)
      : tokenizer_(tokenizer), options_(std::move(options)), eos_(eos) {}

  absl::StatusOr<EncodedDocument> EncodeText(std::string_view text) const;
  absl::StatusOr<EncodedDocument> EncodePromptCompletion(const nlohmann::json& record) const;
  absl::StatusOr<EncodedDocument> EncodeMessages(const nlohmann::json& messages) const;
  absl::StatusOr<std::string> Render(const nlohmann::json& messages,
                                     bool add_generation_prompt) const;
  void AppendEos(EncodedDocument* doc, bool eos_counts) const;

  const text::Tokenizer* tokenizer_;
  EncoderOptions options_;
  int32_t eos_;
};

}  // namespace accel::data
