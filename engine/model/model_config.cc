#include "engine/model/model_config.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/status_macros.h"
#include "engine/model/config_json.h"
#include "nlohmann/json.hpp"

namespace accel::model {
namespace {

// Dispatches a const member visit: f(gpt2) or f(llama). decltype(auto): a reference f returns
// stays a reference (name() returns one into the variant).
template <typename F>
decltype(auto) Visit(const std::variant<Gpt2Config, LlamaConfig>& v, F&& f) {
  return std::visit(std::forward<F>(f), v);
}

}  // namespace

const std::string& ModelConfig::name() const {
  return Visit(shape_, [](const auto& c) -> const std::string& { return c.name; });
}

void ModelConfig::set_name(std::string name) {
  std::visit([&](auto& c) { c.name = std::move(name); }, shape_);
}

std::string ModelConfig::model_type() const {
  return gpt2() != nullptr ? std::string("gpt2") : llama()->model_type;
}

std::string ModelConfig::block_class() const {
  return gpt2() != nullptr ? std::string("GPT2Block") : llama()->DecoderLayerClass();
}

int64_t ModelConfig::num_layers() const {
  return gpt2() != nullptr ? gpt2()->n_layer : llama()->num_hidden_layers;
}
int64_t ModelConfig::hidden_size() const {
  return gpt2() != nullptr ? gpt2()->n_embd : llama()->hidden_size;
}
int64_t ModelConfig::num_heads() const {
  return gpt2() != nullptr ? gpt2()->n_head : llama()->num_attention_heads;
}
int64_t ModelConfig::num_kv_heads() const {
  return gpt2() != nullptr ? gpt2()->n_head : llama()->num_key_value_heads;
}
int64_t ModelConfig::head_dim() const {
  return gpt2() != nullptr ? gpt2()->head_size() : llama()->head_dim;
}
int64_t ModelConfig::intermediate_size() const {
  return gpt2() != nullptr ? 4 * gpt2()->n_embd : llama()->intermediate_size;
}
int64_t ModelConfig::vocab_size() const {
  return Visit(shape_, [](const auto& c) { return c.vocab_size; });
}
int64_t ModelConfig::max_positions() const {
  return gpt2() != nullptr ? gpt2()->n_positions : llama()->max_position_embeddings;
}
bool ModelConfig::tied_embeddings() const {
  return gpt2() != nullptr || llama()->tie_word_embeddings;
}

absl::Status ModelConfig::Validate() const {
  return Visit(shape_, [](const auto& c) { return c.Validate(); });
}
int64_t ModelConfig::NumParams() const {
  return Visit(shape_, [](const auto& c) { return c.NumParams(); });
}
double ModelConfig::TrainFlopsPerToken(int64_t T) const {
  return Visit(shape_, [T](const auto& c) { return c.TrainFlopsPerToken(T); });
}

std::string ModelConfig::Describe() const {
  std::string heads = absl::StrCat(num_heads(), " heads");
  if (num_kv_heads() != num_heads()) absl::StrAppend(&heads, " (", num_kv_heads(), " kv)");
  return absl::StrCat(model_type(), " ", num_layers(), " layers, hidden ", hidden_size(), ", ",
                      heads, ", mlp ", intermediate_size(), ", vocab ", vocab_size(),
                      tied_embeddings() ? "" : ", untied lm_head");
}

bool IsBlockClass(std::string_view cls) {
  return cls == "GPT2Block" || cls == "Block" || cls == "LlamaDecoderLayer" ||
         cls == "MistralDecoderLayer" || cls == "Qwen2DecoderLayer";
}

std::vector<std::string> ModelPresetNames() {
  std::vector<std::string> names = Gpt2PresetNames();
  for (std::string& n : LlamaPresetNames()) names.push_back(std::move(n));
  return names;
}

absl::StatusOr<ModelConfig> ModelPreset(std::string_view name) {
  if (absl::StatusOr<LlamaConfig> llama = LlamaPreset(name); llama.ok()) return *llama;
  absl::StatusOr<Gpt2Config> gpt2 = Gpt2Preset(name);
  if (gpt2.ok()) return *gpt2;
  return absl::InvalidArgumentError(absl::StrCat("unknown model preset '", std::string(name),
                                                 "' (known: ",
                                                 absl::StrJoin(ModelPresetNames(), ", "), ")"));
}

absl::StatusOr<ModelConfig> ModelConfigFromJson(std::string_view json_text,
                                                std::string_view source) {
  ACCEL_ASSIGN_OR_RETURN(nlohmann::json j, ParseConfigJson(json_text, std::string(source)));
  if (j.contains("model_type") && j["model_type"].is_string() &&
      IsLlamaModelType(j["model_type"].get<std::string>())) {
    ACCEL_ASSIGN_OR_RETURN(LlamaConfig c, LlamaConfigFromJson(json_text, source));
    return ModelConfig(std::move(c));
  }
  // Not quoted (config_json.h): the supported names say what to write.
  if (j.contains("model_type") && j["model_type"] != "gpt2") {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(source),
                     ": model_type: not supported (supported: gpt2, llama, mistral, qwen2)"));
  }
  ACCEL_ASSIGN_OR_RETURN(Gpt2Config c, Gpt2ConfigFromJson(json_text, source));
  return ModelConfig(std::move(c));
}

absl::StatusOr<ModelConfig> LoadModelConfig(Env* env, const std::string& path) {
  ACCEL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(env, path));
  return ModelConfigFromJson(text, path);
}

std::string ModelConfigToJson(const ModelConfig& config) {
  return config.gpt2() != nullptr ? Gpt2ConfigToJson(*config.gpt2())
                                  : LlamaConfigToJson(*config.llama());
}

}  // namespace accel::model
