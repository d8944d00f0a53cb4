#include "engine/data/chat_renderer.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/text/chat_template.h"

namespace accel::data {

absl::StatusOr<ChatRenderer> LoadChatRenderer(Env* env, const std::string& tokenizer_config_path) {
  if (!env->FileExists(tokenizer_config_path)) {
    return absl::NotFoundError(absl::StrCat(
        tokenizer_config_path, ": no tokenizer_config.json, so no chat template to render "
                               "messages with"));
  }
  ACCEL_ASSIGN_OR_RETURN(text::ChatTemplate parsed,
                         text::ChatTemplate::FromTokenizerConfigFile(tokenizer_config_path));
  auto shared = std::make_shared<const text::ChatTemplate>(std::move(parsed));
  return ChatRenderer([shared](const nlohmann::json& messages, bool add_generation_prompt) {
    return shared->Render(messages, add_generation_prompt);
  });
}

}  // namespace accel::data
