// TokenizerConfig: what transformers' tokenizer_config.json adds to tokenizer.json: the names
// of the special tokens (bos_token / eos_token / pad_token / unk_token, each a string or an
// object with "content"), add_bos_token / add_eos_token, added_tokens_decoder and the chat
// template (kept as text; rendering it is not this module's job yet).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/text/added_vocabulary.h"

namespace accel::text {

struct TokenizerConfig {
  std::optional<std::string> bos_token, eos_token, pad_token, unk_token;
  std::optional<bool> add_bos_token, add_eos_token;
  // added_tokens_decoder, as (id, token) in id order.
  std::vector<std::pair<int32_t, AddedToken>> added_tokens;
  std::optional<std::string> chat_template;
};

// Parses the text of a tokenizer_config.json; `origin` names it in errors (InvalidArgument with
// the key: `tokenizer_config.json: eos_token must be a string or an object with "content"`).
[[nodiscard]] absl::StatusOr<TokenizerConfig> ParseTokenizerConfig(std::string_view text,
                                                                   std::string_view origin);

}  // namespace accel::text
