#include "engine/text/chat_template.h"

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/text/jinja_ast.h"
#include "engine/text/jinja_builtins.h"
#include "engine/text/jinja_interpreter.h"
#include "engine/text/jinja_lexer.h"
#include "engine/text/jinja_parser.h"
#include "engine/text/tokenizer_config.h"

namespace accel::text {

ChatTemplate::ChatTemplate() = default;
ChatTemplate::~ChatTemplate() = default;

absl::StatusOr<ChatTemplate> ChatTemplate::FromTokenizerConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the tokenizer config"));
  std::stringstream text;
  text << in.rdbuf();
  ACCEL_ASSIGN_OR_RETURN(TokenizerConfig config, ParseTokenizerConfig(text.str(), path));
  if (!config.chat_template.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": chat_template: absent; this tokenizer has no chat template"));
  }
  auto t = Parse(*config.chat_template, config.bos_token.value_or(""), config.eos_token.value_or(""));
  if (!t.ok()) return Annotate(t.status(), path);
  return t;
}

absl::StatusOr<ChatTemplate> ChatTemplate::Parse(std::string_view source, std::string bos_token,
                                                 std::string eos_token) {
  ACCEL_ASSIGN_OR_RETURN(std::vector<jinja::Token> tokens, jinja::Tokenize(source));
  ACCEL_ASSIGN_OR_RETURN(std::vector<jinja::NodePtr> program, jinja::Parse(tokens));
  ChatTemplate t;
  t.program_ = std::make_shared<const std::vector<jinja::NodePtr>>(std::move(program));
  t.bos_token_ = std::move(bos_token);
  t.eos_token_ = std::move(eos_token);
  return t;
}

absl::StatusOr<std::string> ChatTemplate::Render(const nlohmann::json& messages,
                                                 bool add_generation_prompt) const {
  if (!messages.is_array()) {
    return absl::InvalidArgumentError("chat template: messages must be a JSON array");
  }
  jinja::Env env;
  jinja::InstallGlobals(env);
  env.Set("messages", jinja::FromJson(messages));
  env.Set("bos_token", jinja::Value::String(bos_token_));
  env.Set("eos_token", jinja::Value::String(eos_token_));
  env.Set("add_generation_prompt", jinja::Value::Bool(add_generation_prompt));
  return jinja::Render(*program_, env);
}

}  // namespace accel::text
