// `accelctl generate` and `accel-worker --generate`: text from a trained model, in this
// process, with no acceld (docs/generate.md lists every flag). Both front ends call
// RunGenerateCommand with the arguments after their own command word; it links
// engine/generate (model, checkpoint, text) and never engine/train.
//
//   generate (--checkpoint DIR[/step_N] | --model DIR | --weights FILE --model-config FILE)
//            [--tokenizer tokenizer.json] (--prompt TEXT | --messages FILE)
//            [--max-new-tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S]
//            [--stop TEXT]... [--dtype fp32|bf16] [--output text|json]
//
// Text output streams the continuation to `out` as tokens come, then a newline; json prints one
// object {"ids": [...], "text": "...", "stop_reason": "..."} at the end. Exit codes: 0 success,
// 2 invalid input (flags, a missing file, a checkpoint of another model, a tokenizer that does
// not fit, an empty prompt or one longer than the context), 1 anything else (a corrupt file).
// Every error is one line on `err`: "error: ...".
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "nlohmann/json.hpp"

namespace accel::client {

// Renders a conversation (a JSON array of {"role", "content"} messages) with a chat template,
// ending with the generation prompt when asked.
using MessagesRenderer = std::function<absl::StatusOr<std::string>(
    const nlohmann::json& messages, bool add_generation_prompt)>;
// The renderer of the chat template in a tokenizer_config.json. The hook of the chat-template
// contract (text::ChatTemplate::FromTokenizerConfigFile + Render); a null loader refuses
// --messages with a message saying so (tests).
using ChatTemplateLoader =
    std::function<absl::StatusOr<MessagesRenderer>(const std::string& tokenizer_config_path)>;

struct GenerateDeps {
  Env* env = Env::Default();
  ChatTemplateLoader chat_template;
};

// The chat-template loader the front ends use: text::ChatTemplate (engine/text/chat_template.h).
ChatTemplateLoader DefaultChatTemplateLoader();

// `args`: the flags, without the command word. `program` prefixes usage text.
int RunGenerateCommand(const std::vector<std::string>& args, const std::string& program,
                       std::ostream& out, std::ostream& err, const GenerateDeps& deps);

}  // namespace accel::client
