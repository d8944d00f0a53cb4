#include "engine/data/chat_renderer.h"

#include "absl/strings/str_cat.h"

namespace accel::data {

absl::StatusOr<ChatRenderer> LoadChatRenderer(Env* env, const std::string& tokenizer_config_path) {
  if (!env->FileExists(tokenizer_config_path)) {
    return absl::NotFoundError(absl::StrCat(
        tokenizer_config_path, ": no tokenizer_config.json, so no chat template to render "
                               "messages with"));
  }
  return absl::UnimplementedError(absl::StrCat(
      tokenizer_config_path, ": chat templates are not rendered by this build (engine/text "
                             "chat_template.h is not linked in)"));
}

}  // namespace accel::data
