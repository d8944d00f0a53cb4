#include "engine/model/model_config.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/status_macros.h"
#include "engine/model/checkpoint_kind.h"
#include "engine/model/config_json.h"
#include "engine/model/registry.h"
#include "nlohmann/json.hpp"

namespace accel::model {

ModelConfig::ModelConfig() : ModelConfig(Gpt2Config{}) {}

std::string ModelConfig::Describe() const {
  std::string heads = absl::StrCat(num_heads(), " heads");
  if (num_kv_heads() != num_heads()) absl::StrAppend(&heads, " (", num_kv_heads(), " kv)");
  return absl::StrCat(model_type(), " ", num_layers(), " layers, hidden ", hidden_size(), ", ",
                      heads, ", mlp ", intermediate_size(), ", vocab ", vocab_size(),
                      tied_embeddings() ? "" : ", untied lm_head");
}

std::vector<std::string> ModelPresetNames() {
  std::vector<std::string> names;
  for (const Architecture* a : Architectures()) {
    if (!a->preset_names) continue;
    for (std::string& n : a->preset_names()) names.push_back(std::move(n));
  }
  return names;
}

absl::StatusOr<ModelConfig> ModelPreset(std::string_view name) {
  for (const Architecture* a : Architectures()) {
    if (!a->preset_names) continue;
    for (const std::string& n : a->preset_names()) {
      if (n == name) return a->preset(name);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown model preset '", std::string(name),
                                                 "' (known: ",
                                                 absl::StrJoin(ModelPresetNames(), ", "), ")"));
}

absl::StatusOr<ModelConfig> ModelConfigFromJson(std::string_view json_text,
                                                std::string_view source) {
  ACCEL_ASSIGN_OR_RETURN(nlohmann::json j, ParseConfigJson(json_text, std::string(source)));
  const Architecture* family = nullptr;
  if (!j.contains("model_type")) {
    for (const Architecture* a : Architectures()) {
      if (a->reads_untyped_files) family = a;
    }
  } else if (j["model_type"].is_string()) {
    family = FindArchitecture(j["model_type"].get<std::string>());
  }
  if (family == nullptr) {
    // Not quoted (config_json.h): the supported names say what to write.
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(source), ": model_type: not supported (supported: ",
                     absl::StrJoin(SupportedModelTypes(), ", "), ")"));
  }
  // What the file says the checkpoint is (checkpoint_kind.h): refusals here, notes by Lower.
  std::vector<std::string> notes;
  ACCEL_RETURN_IF_ERROR(CheckCheckpointKind(j, source, &notes));
  return family->from_json(json_text, source);
}

absl::StatusOr<ModelConfig> LoadModelConfig(Env* env, const std::string& path) {
  ACCEL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(env, path));
  return ModelConfigFromJson(text, path);
}

std::string ModelConfigToJson(const ModelConfig& config) {
  return config.architecture().to_json(config);
}

}  // namespace accel::model
