#include "client/generate_command.h"

#include <algorithm>
#include <memory>
#include <ostream>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/generate/generator.h"
#include "engine/generate/load_model.h"
#include "engine/model/registry.h"
#include "engine/text/chat_template.h"

namespace accel::client {
namespace {

struct Flags {
  generate::ModelSource source;
  std::string tokenizer, prompt, messages, dtype = "fp32", output = "text";
  bool has_prompt = false;
  generate::GenerateOptions options;
};

// The prompt's token ids: the text as given, or the conversation rendered with the chat template
// and the generation prompt (its special tokens are the template's, so none are added).
absl::StatusOr<std::vector<int32_t>> PromptIds(const Flags& f, const generate::TextCodec& codec,
                                               const GenerateDeps& deps) {
  if (f.has_prompt == !f.messages.empty()) {
    return absl::InvalidArgumentError("give one of --prompt TEXT and --messages FILE");
  }
  if (f.has_prompt) {
    if (f.prompt.empty()) return absl::InvalidArgumentError("--prompt: the prompt is empty");
    return codec.Encode(f.prompt, /*add_special_tokens=*/true);
  }
  ACCEL_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(deps.env, f.messages));
  nlohmann::json messages = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (messages.is_object() && messages.contains("messages")) messages = messages["messages"];
  if (!messages.is_array() || messages.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--messages ", f.messages, ": not a non-empty JSON array of {\"role\", \"content\"}"));
  }
  if (codec.tokenizer_config_path().empty()) {
    return absl::InvalidArgumentError(
        "--messages needs a chat template: tokenizer_config.json beside --tokenizer");
  }
  if (!deps.chat_template) {
    return absl::FailedPreconditionError("--messages: chat templates are not in this build");
  }
  ACCEL_ASSIGN_OR_RETURN(const MessagesRenderer render,
                         deps.chat_template(codec.tokenizer_config_path()));
  ACCEL_ASSIGN_OR_RETURN(const std::string rendered,
                         render(messages, /*add_generation_prompt=*/true));
  if (rendered.empty()) return absl::InvalidArgumentError("--messages: the prompt is empty");
  return codec.Encode(rendered, /*add_special_tokens=*/false);
}

absl::Status Run(const Flags& f, std::ostream& out, const GenerateDeps& deps) {
  if (f.output != "text" && f.output != "json") {
    return absl::InvalidArgumentError(absl::StrCat("--output ", f.output, ": text or json"));
  }
  if (f.dtype != "fp32" && f.dtype != "bf16") {
    return absl::InvalidArgumentError(absl::StrCat("--dtype ", f.dtype, ": fp32 or bf16"));
  }
  ACCEL_ASSIGN_OR_RETURN(generate::LoadedModel m, generate::LoadModel(deps.env, f.source));
  const model::ModelConfig& config = m.layout->config();
  ACCEL_ASSIGN_OR_RETURN(generate::TextCodec codec,
                         generate::TextCodec::Open(deps.env, f.tokenizer, config.vocab_size()));
  ACCEL_ASSIGN_OR_RETURN(const std::vector<int32_t> prompt, PromptIds(f, codec, deps));
  generate::GenerateOptions options = f.options;
  options.end_ids = codec.end_ids();
  // The cache holds what this call can use, not the model's whole context; Generate refuses a
  // prompt that leaves no room in it (naming the model's context when that is the limit).
  const int64_t max_pos = config.max_positions();
  const int64_t capacity = std::min<int64_t>(
      max_pos, static_cast<int64_t>(prompt.size()) +
                   std::clamp<int64_t>(options.max_new_tokens, 1, max_pos));
  ACCEL_ASSIGN_OR_RETURN(
      std::unique_ptr<model::KvDecoder> decoder,
      config.architecture().decoder(m.layout.get(), m.params.data(),
                                    {.capacity = capacity, .bf16 = f.dtype == "bf16"}));
  const bool stream = f.output == "text";
  ACCEL_ASSIGN_OR_RETURN(
      generate::GenerateResult r,
      generate::Generate(
          *decoder, config.vocab_size(), prompt, options,
          [&codec](absl::Span<const int32_t> ids) { return codec.Decode(ids); },
          [&](std::string_view piece) {
            if (stream) out << piece << std::flush;
          }));
  if (stream) {
    out << "\n";
    return absl::OkStatus();
  }
  nlohmann::json j = {{"ids", r.ids}, {"text", r.text}, {"stop_reason", r.stop_reason}};
  // A byte-level model may write bytes that are no UTF-8: replaced, so the JSON stays valid.
  out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return absl::OkStatus();
}

}  // namespace

ChatTemplateLoader DefaultChatTemplateLoader() {
  return [](const std::string& path) -> absl::StatusOr<MessagesRenderer> {
    absl::StatusOr<text::ChatTemplate> parsed = text::ChatTemplate::FromTokenizerConfigFile(path);
    if (!parsed.ok()) return parsed.status();
    auto shared = std::make_shared<const text::ChatTemplate>(*std::move(parsed));
    return MessagesRenderer([shared](const nlohmann::json& messages, bool generation_prompt) {
      return shared->Render(messages, generation_prompt);
    });
  };
}

int RunGenerateCommand(const std::vector<std::string>& args, const std::string& program,
                       std::ostream& out, std::ostream& err, const GenerateDeps& deps) {
  CLI::App app{"Generate text from a checkpoint or Hugging Face model files (docs/generate.md)",
               program};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  Flags f;
  app.add_option("--checkpoint", f.source.checkpoint, "a checkpoint: DIR/step_N, or DIR (latest)");
  app.add_option("--weights", f.source.weights,
                 "Hugging Face weights: model.safetensors or model.safetensors.index.json");
  app.add_option("--model-config", f.source.model_config, "the model's config.json");
  app.add_option("--model", f.source.model_dir, "a directory with config.json and the weights");
  app.add_option("--tokenizer", f.tokenizer,
                 "tokenizer.json (or its directory); none for a byte-level model (vocab 256)");
  app.add_option("--prompt", f.prompt, "the text to continue");
  app.add_option("--messages", f.messages,
                 "a JSON conversation, rendered with the tokenizer's chat template");
  app.add_option("--max-new-tokens", f.options.max_new_tokens, "at most this many new tokens")
      ->capture_default_str();
  app.add_option("--temperature", f.options.sampling.temperature, "0 = greedy")
      ->capture_default_str();
  app.add_option("--top-k", f.options.sampling.top_k, "keep the k most likely tokens (0 = all)")
      ->capture_default_str();
  app.add_option("--top-p", f.options.sampling.top_p, "nucleus: keep the most likely mass p")
      ->capture_default_str();
  app.add_option("--seed", f.options.sampling.seed, "the sampling seed")->capture_default_str();
  app.add_option("--stop", f.options.stop_strings, "stop at this text (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--dtype", f.dtype, "fp32 | bf16 (matmuls in bf16)")->capture_default_str();
  app.add_option("--output", f.output, "text (streamed) | json")->capture_default_str();
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  }
  f.has_prompt = app.count("--prompt") > 0;
  const absl::Status s = Run(f, out, deps);
  if (s.ok()) return 0;
  err << "error: " << s.message() << "\n";
  const absl::StatusCode code = s.code();
  return code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kNotFound ||
                 code == absl::StatusCode::kFailedPrecondition
             ? 2
             : 1;
}

}  // namespace accel::client
