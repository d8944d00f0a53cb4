// Test-only: the small Llama-2-shaped tokenizer (engine/text/small_tokenizer_json.h) with
// BOS <s> = 1 and EOS </s> = 2, and a hand-written chat renderer for it:
//   render(messages) = for each message, its role tag + content + "</s>"; then "<mask>" when
//   add_generation_prompt. Role tags: user "<plain>" (264), assistant "<mask>" (263); any other
//   role is an error, as a template's raise_exception is.
// With the normalizer's "▁" prefix: "a" → ▁a (261), "b" → ▁ (259) b (262), "ab" → ▁a b.
#pragma once

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/data/chat_renderer.h"
#include "engine/text/small_tokenizer_json.h"
#include "engine/text/tokenizer.h"

namespace accel::data::testing {

inline text::TokenizerConfig SmallConfig() {
  text::TokenizerConfig config;
  config.bos_token = "<s>";
  config.eos_token = "</s>";
  return config;
}

inline std::string SmallConfigJson() { return R"({"bos_token": "<s>", "eos_token": "</s>"})"; }

inline std::unique_ptr<text::Tokenizer> SmallTokenizer() {
  const text::TokenizerConfig config = SmallConfig();
  return *text::Tokenizer::FromJson(text::small_tokenizer::TokenizerJson().dump(), &config);
}

inline absl::StatusOr<std::string> SmallRender(const nlohmann::json& messages, bool gen) {
  std::string out;
  for (const auto& m : messages) {
    const std::string role = m["role"];
    if (role == "user") {
      out += "<plain>";
    } else if (role == "assistant") {
      out += "<mask>";
    } else {
      return absl::InvalidArgumentError(absl::StrCat("role \"", role, "\" is not supported"));
    }
    out += m["content"].get<std::string>() + "</s>";
  }
  if (gen) out += "<mask>";
  return out;
}

}  // namespace accel::data::testing
