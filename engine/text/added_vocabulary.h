// AddedVocabulary: tokenizer.json's "added_tokens" (special and not), found in the text before
// the model sees it, as Hugging Face's AddedVocabulary does:
//  - ids: a token whose content is in the model's vocabulary takes the model's id, any other
//    takes the next id after the vocabulary (HF ignores the file's "id"; a file whose ids
//    disagree with that is refused rather than silently renumbered);
//  - matching: leftmost-longest over the raw text for tokens with "normalized": false, then over
//    each normalized piece for "normalized": true (their content normalized too);
//  - single_word (no word character touching either side), lstrip / rstrip (the whitespace
//    beside the token is taken into it), with HF's \w and \s classes.
// Special tokens are always matched (HF's encode_special_tokens is false); add_special_tokens
// only controls the post-processor.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/text/json_fields.h"
#include "engine/text/normalizers.h"
#include "engine/text/regex.h"
#include "engine/text/string_map.h"

namespace accel::text {

class BpeModel;

struct AddedToken {
  std::string content;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
};

// One added token of tokenizer.json's "added_tokens" or tokenizer_config.json's
// "added_tokens_decoder" (content required; flags false when absent, "normalized" as given).
[[nodiscard]] absl::StatusOr<AddedToken> AddedTokenFromJson(const Json& j, const JsonPath& at,
                                                            bool normalized_default);

// A stretch of text: either an added token (id set) or text for the model.
struct TextPiece {
  std::optional<int32_t> id;
  std::string text;
};

class AddedVocabulary {
 public:
  // `file_ids[i]` is the id the file gives tokens[i] (or nullopt). `normalizer` may be null.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<AddedVocabulary>> Create(
      const std::vector<AddedToken>& tokens, const std::vector<std::optional<int32_t>>& file_ids,
      const BpeModel& model, const Normalizer* normalizer, std::string_view origin);

  // Splits `text` at the tokens of one pass (normalized == false: the raw-text pass; true: the
  // pass over a normalized piece). Pieces are never empty.
  [[nodiscard]] absl::Status Split(std::string_view text, bool normalized,
                                   std::vector<TextPiece>* out) const;

  std::optional<int32_t> TokenToId(std::string_view content) const;
  const AddedToken* ById(int32_t id) const;
  bool IsSpecial(std::string_view content) const;
  // One past the largest added id (0 when there are none).
  int32_t end_id() const { return end_id_; }

 private:
  struct Pattern {
    std::string text;
    int32_t id;
  };
  AddedVocabulary() = default;

  StringMap<int32_t> by_content_;
  absl::flat_hash_map<int32_t, AddedToken> by_id_;
  StringMap<bool> special_;
  // Per pass, patterns by first byte, longest first.
  std::vector<std::vector<Pattern>> first_byte_[2];
  bool empty_[2] = {true, true};
  int32_t end_id_ = 0;
  std::unique_ptr<Regex> word_start_, space_start_;  // one-character classes \w, \s
};

}  // namespace accel::text
