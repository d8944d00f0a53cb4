// ChatTemplate: renders a model's chat template (the Jinja text in tokenizer_config.json) over
// a conversation, byte for byte as Hugging Face's own renderer does (@huggingface/jinja, the
// renderer of transformers.js and huggingface.js, with transformers' trim_blocks and
// lstrip_blocks). engine/text/chat_template_oracle_test.cc checks that on real templates.
//
// The template sees: messages, bos_token, eos_token, add_generation_prompt, and the globals
// (raise_exception, namespace, range, strftime_now, true/false/none). A construct outside the
// supported subset (docs/data.md "Chat templates") is refused when the template is parsed, or
// when it runs for what only shows then (a filter on a type it does not take), with
// InvalidArgument "chat template line N: ..." naming it; raise_exception(msg) in the template
// becomes InvalidArgument "chat template line N: raise_exception: msg".
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace accel::text {

namespace jinja { struct Node; }

class ChatTemplate {
 public:
  // From a tokenizer_config.json: its chat_template (a string, or the "default" entry of a list
  // of {name, template}), bos_token / eos_token (a string or {content: ...}). NotFound when the
  // file is missing; InvalidArgument naming the file when it holds no chat_template.
  static absl::StatusOr<ChatTemplate> FromTokenizerConfigFile(const std::string& path);
  static absl::StatusOr<ChatTemplate> Parse(std::string_view source, std::string bos_token,
                                             std::string eos_token);

  // messages: a JSON array of {"role", "content", ...} as in TRL's "messages" format.
  absl::StatusOr<std::string> Render(const nlohmann::json& messages,
                                     bool add_generation_prompt) const;

  // Copies share the parsed template, which nothing changes after Parse: copying is cheap
  // (a std::function may hold one), and Render may run on several threads at once.
  ChatTemplate(const ChatTemplate&) = default;
  ChatTemplate& operator=(const ChatTemplate&) = default;
  ChatTemplate(ChatTemplate&&) noexcept = default;
  ChatTemplate& operator=(ChatTemplate&&) noexcept = default;
  ~ChatTemplate();

 private:
  ChatTemplate();
  std::shared_ptr<const std::vector<std::unique_ptr<jinja::Node>>> program_;
  std::string bos_token_, eos_token_;
};

}  // namespace accel::text
