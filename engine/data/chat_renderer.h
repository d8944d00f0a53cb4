// The seam between datasets and chat templates (docs/data.md "Chat templates").
//
// ChatRenderer renders a TRL message list ([{"role", "content", ...}]) to text, as
// transformers' apply_chat_template(messages, tokenize=False, add_generation_prompt) does.
// Errors (a role the template rejects, raise_exception) are one line without a location.
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "nlohmann/json.hpp"

namespace accel::data {

using ChatRenderer = std::function<absl::StatusOr<std::string>(const nlohmann::json& messages,
                                                               bool add_generation_prompt)>;

// The renderer of the chat template in `tokenizer_config_path` (tokenizer_config.json):
// text::ChatTemplate (engine/text/chat_template.h). NotFound without the file; InvalidArgument
// for a file without a template or a template that does not parse (naming the construct).
[[nodiscard]] absl::StatusOr<ChatRenderer> LoadChatRenderer(Env* env,
                                                            const std::string& tokenizer_config_path);

}  // namespace accel::data
