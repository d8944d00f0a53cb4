// Encode and decode; loading is in tokenizer_load.cc.
#include "engine/text/tokenizer.h"

#include <utility>

#include "absl/strings/str_join.h"
#include "engine/base/status_macros.h"
#include "engine/text/utf8.h"

namespace accel::text {

absl::StatusOr<std::vector<int32_t>> Tokenizer::Encode(std::string_view text,
                                                       bool add_special_tokens) const {
  std::string owned;
  if (!IsValidUtf8(text)) {
    owned = ToValidUtf8(text);
    text = owned;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<TextPiece> pieces;
  ACCEL_RETURN_IF_ERROR(added_->Split(text, /*normalized=*/false, &pieces));
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i].id) {
      ids.push_back(*pieces[i].id);
    } else {
      // Only the first piece starts at the start of the text.
      ACCEL_RETURN_IF_ERROR(EncodePiece(std::move(pieces[i].text), /*at_start=*/i == 0, &ids));
    }
  }
  if (post_processor_ != nullptr) post_processor_->Process(&ids, add_special_tokens);
  return ids;
}

// One stretch of text between added tokens: normalize, cut at normalized added tokens,
// pre-tokenize, run the model on each word.
absl::Status Tokenizer::EncodePiece(std::string text, bool at_start,
                                    std::vector<int32_t>* ids) const {
  if (normalizer_ != nullptr) ACCEL_RETURN_IF_ERROR(normalizer_->Normalize(&text));
  std::vector<TextPiece> pieces;
  ACCEL_RETURN_IF_ERROR(added_->Split(text, /*normalized=*/true, &pieces));
  Words words;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i].id) {
      ids->push_back(*pieces[i].id);
      continue;
    }
    words.items.assign(1, std::move(pieces[i].text));
    words.first_at_start = at_start && i == 0;
    if (pre_tokenizer_ != nullptr) ACCEL_RETURN_IF_ERROR(pre_tokenizer_->PreTokenize(&words));
    for (const std::string& word : words.items) model_->Tokenize(word, ids);
  }
  return absl::OkStatus();
}

std::string Tokenizer::Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::string* token = nullptr;
    if (const AddedToken* added = added_->ById(id)) {
      token = &added->content;
    } else {
      token = model_->IdToToken(id);
    }
    if (token == nullptr) continue;
    if (skip_special_tokens && added_->IsSpecial(*token)) continue;
    tokens.push_back(*token);
  }
  if (decoder_ == nullptr) return absl::StrJoin(tokens, " ");
  decoder_->DecodeChain(&tokens);
  return absl::StrJoin(tokens, "");
}

std::optional<int32_t> Tokenizer::TokenToId(std::string_view token) const {
  if (auto id = added_->TokenToId(token)) return id;
  return model_->TokenToId(token);
}

}  // namespace accel::text
