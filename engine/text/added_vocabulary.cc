#include "engine/text/added_vocabulary.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/text/bpe.h"
#include "engine/text/utf8.h"

namespace accel::text {
namespace {

// Rust regex's \w and \s (HF matches single_word and lstrip/rstrip with them): Unicode word
// characters and the White_Space property.
constexpr std::string_view kWordChar = R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}])";
constexpr std::string_view kSpaceChar = R"([\p{Z}\t\n\x0B\f\r\x{85}])";

// True when the one character `ch` is in the class `cls`.
bool CharIn(const Regex& cls, std::string_view ch) {
  std::vector<std::pair<size_t, size_t>> m;
  return cls.FindAll(ch, &m).ok() && !m.empty() && m[0].first == 0 && m[0].second == ch.size();
}

size_t PrevCharStart(std::string_view text, size_t end) {
  size_t i = end - 1;
  while (i > 0 && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) --i;
  return i;
}

}  // namespace

absl::StatusOr<AddedToken> AddedTokenFromJson(const Json& j, const JsonPath& at,
                                              bool normalized_default) {
  AddedToken token;
  ACCEL_ASSIGN_OR_RETURN(token.content, GetString(j, at, "content"));
  ACCEL_ASSIGN_OR_RETURN(token.special, GetBool(j, at, "special", false));
  ACCEL_ASSIGN_OR_RETURN(token.single_word, GetBool(j, at, "single_word", false));
  ACCEL_ASSIGN_OR_RETURN(token.lstrip, GetBool(j, at, "lstrip", false));
  ACCEL_ASSIGN_OR_RETURN(token.rstrip, GetBool(j, at, "rstrip", false));
  ACCEL_ASSIGN_OR_RETURN(token.normalized, GetBool(j, at, "normalized", normalized_default));
  return token;
}

absl::StatusOr<std::unique_ptr<AddedVocabulary>> AddedVocabulary::Create(
    const std::vector<AddedToken>& tokens, const std::vector<std::optional<int32_t>>& file_ids,
    const BpeModel& model, const Normalizer* normalizer, std::string_view origin) {
  std::unique_ptr<AddedVocabulary> v(new AddedVocabulary());
  ACCEL_ASSIGN_OR_RETURN(v->word_start_, Regex::Compile(kWordChar, "added tokens"));
  ACCEL_ASSIGN_OR_RETURN(v->space_start_, Regex::Compile(kSpaceChar, "added tokens"));
  int32_t next_id = static_cast<int32_t>(model.vocab_size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const AddedToken& token = tokens[i];
    if (token.content.empty()) continue;  // HF ignores empty tokens
    if (token.special) v->special_[token.content] = true;
    std::optional<int32_t> id = v->TokenToId(token.content);
    if (id.has_value() && v->by_id_.contains(*id)) {
      if (v->by_id_[*id].content == token.content) continue;  // a repeat
    }
    if (!id) id = model.TokenToId(token.content);
    if (!id) id = next_id++;
    if (i < file_ids.size() && file_ids[i] && *file_ids[i] != *id) {
      return absl::InvalidArgumentError(absl::StrCat(
          std::string(origin), ": added token \"", token.content, "\" has id ", *file_ids[i],
          " but Hugging Face gives it id ", *id,
          " (the model's id for a token in its vocab, else the next id after the vocab)"));
    }
    v->by_content_[token.content] = *id;
    v->by_id_[*id] = token;
    v->end_id_ = std::max(v->end_id_, *id + 1);
  }
  for (auto& table : v->first_byte_) table.resize(256);
  for (const auto& [id, token] : v->by_id_) {
    std::string text = token.content;
    if (token.normalized && normalizer != nullptr) {
      ACCEL_RETURN_IF_ERROR(normalizer->Normalize(&text));
    }
    if (text.empty()) continue;
    const int pass = token.normalized ? 1 : 0;
    v->first_byte_[pass][static_cast<unsigned char>(text[0])].push_back({std::move(text), id});
    v->empty_[pass] = false;
  }
  for (auto& table : v->first_byte_) {
    for (auto& list : table) {
      std::sort(list.begin(), list.end(), [](const Pattern& a, const Pattern& b) {
        return a.text.size() != b.text.size() ? a.text.size() > b.text.size() : a.id < b.id;
      });
    }
  }
  return v;
}

std::optional<int32_t> AddedVocabulary::TokenToId(std::string_view content) const {
  const auto it = by_content_.find(content);
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

const AddedToken* AddedVocabulary::ById(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second;
}

bool AddedVocabulary::IsSpecial(std::string_view content) const {
  return special_.contains(content);
}

absl::Status AddedVocabulary::Split(std::string_view text, bool normalized,
                                    std::vector<TextPiece>* out) const {
  const int pass = normalized ? 1 : 0;
  auto emit_text = [&](size_t begin, size_t end) {
    if (end > begin) out->push_back({std::nullopt, std::string(text.substr(begin, end - begin))});
  };
  if (empty_[pass]) {
    emit_text(0, text.size());
    return absl::OkStatus();
  }
  const auto& table = first_byte_[pass];
  size_t start_offset = 0;  // end of the last piece emitted
  size_t pos = 0;           // where the next leftmost-longest search starts
  while (pos < text.size()) {
    // Leftmost-longest match at or after pos.
    size_t start = text.size();
    const Pattern* match = nullptr;
    for (size_t i = pos; i < text.size() && match == nullptr; ++i) {
      for (const Pattern& p : table[static_cast<unsigned char>(text[i])]) {
        if (text.compare(i, p.text.size(), p.text) == 0) {
          start = i, match = &p;
          break;
        }
      }
    }
    if (match == nullptr) break;
    size_t stop = start + match->text.size();
    pos = stop;
    const AddedToken& token = by_id_.at(match->id);
    if (token.single_word) {
      const bool word_before =
          start > 0 && CharIn(*word_start_, text.substr(PrevCharStart(text, start),
                                                        start - PrevCharStart(text, start)));
      const bool word_after =
          stop < text.size() &&
          CharIn(*word_start_,
                 text.substr(stop, CharLength(static_cast<unsigned char>(text[stop]))));
      if (word_before || word_after) continue;
    }
    if (token.lstrip) {
      size_t new_start = start;
      while (new_start > 0) {
        const size_t prev = PrevCharStart(text, new_start);
        if (!CharIn(*space_start_, text.substr(prev, new_start - prev))) break;
        new_start = prev;
      }
      start = std::max(new_start, start_offset);
    }
    if (token.rstrip) {
      while (stop < text.size()) {
        const size_t n = CharLength(static_cast<unsigned char>(text[stop]));
        if (!CharIn(*space_start_, text.substr(stop, n))) break;
        stop += n;
      }
    }
    emit_text(start_offset, start);
    out->push_back({match->id, std::string(text.substr(start, stop - start))});
    start_offset = stop;
  }
  emit_text(start_offset, text.size());
  return absl::OkStatus();
}

}  // namespace accel::text
