#include "engine/generate/load_model.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/checkpoint_metadata.h"
#include "engine/checkpoint/hf_weights.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/checkpoint/step_reader.h"
#include "engine/model/registry.h"

namespace accel::generate {
namespace {

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

absl::StatusOr<model::ModelConfig> ConfigFile(Env* env, const std::string& path) {
  if (!env->FileExists(path)) {
    return absl::NotFoundError(absl::StrCat("--model-config ", path, ": no such file"));
  }
  return model::LoadModelConfig(env, path);
}

absl::StatusOr<LoadedModel> FromCheckpoint(Env* env, const ModelSource& s) {
  std::string step_dir = s.checkpoint;
  if (!env->FileExists(Join(step_dir, checkpoint::kMetadataFileName))) {
    if (!env->FileExists(Join(step_dir, checkpoint::kLatestFileName))) {
      return absl::NotFoundError(absl::StrCat("--checkpoint ", s.checkpoint,
                                              ": neither a step directory (no metadata.json) nor "
                                              "a checkpoint directory (no latest)"));
    }
    ACCEL_ASSIGN_OR_RETURN(step_dir, checkpoint::LatestStepDir(env, s.checkpoint));
  }
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<checkpoint::StepReader> reader,
                         checkpoint::StepReader::Open(env, step_dir));
  const std::string& json = reader->metadata().meta.model_config_json;
  if (json.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--checkpoint ", step_dir, ": has no model config to generate with"));
  }
  ACCEL_ASSIGN_OR_RETURN(model::ModelConfig config, model::ModelConfigFromJson(json, step_dir));
  LoadedModel m;
  ACCEL_ASSIGN_OR_RETURN(model::ModelLayout layout, model::ModelLayout::Create(config));
  m.layout = std::make_unique<model::ModelLayout>(std::move(layout));
  ACCEL_RETURN_IF_ERROR(checkpoint::CheckLayoutMatches(reader->metadata(), *m.layout, step_dir));
  std::string given = s.model_config;
  if (given.empty() && !s.model_dir.empty()) given = Join(s.model_dir, "config.json");
  if (!given.empty()) {
    ACCEL_ASSIGN_OR_RETURN(model::ModelConfig want, ConfigFile(env, given));
    ACCEL_ASSIGN_OR_RETURN(model::ModelLayout want_layout, model::ModelLayout::Create(want));
    absl::Status same = checkpoint::CheckLayoutMatches(reader->metadata(), want_layout, step_dir);
    if (!same.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--checkpoint ", step_dir, " holds another model (", config.Describe(), ") than ",
          given, " (", want.Describe(), ")"));
    }
  }
  m.params.resize(m.layout->num_params());
  ACCEL_RETURN_IF_ERROR(reader->Read(checkpoint::Section::kParams, 0, m.layout->num_params(),
                                     m.params.data()));
  m.origin = absl::StrCat("checkpoint ", step_dir);
  return m;
}

absl::StatusOr<LoadedModel> FromHfFiles(Env* env, const ModelSource& s) {
  std::string weights = s.weights, config_path = s.model_config;
  if (!s.model_dir.empty()) {
    if (weights.empty()) weights = s.model_dir;  // the directory's index or model.safetensors
    if (config_path.empty()) config_path = Join(s.model_dir, "config.json");
  }
  if (config_path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--weights ", weights, ": needs --model-config config.json (or --model DIR)"));
  }
  ACCEL_ASSIGN_OR_RETURN(model::ModelConfig config, ConfigFile(env, config_path));
  LoadedModel m;
  ACCEL_ASSIGN_OR_RETURN(model::ModelLayout layout, model::ModelLayout::Create(config));
  m.layout = std::make_unique<model::ModelLayout>(std::move(layout));
  m.params.resize(m.layout->num_params());
  absl::Status loaded = checkpoint::LoadHfWeights(env, weights, *m.layout, m.params.data());
  if (!loaded.ok()) {
    // Weights of another model than the config: the loader names the tensor; say which files.
    return absl::Status(loaded.code(), absl::StrCat("--weights ", weights, " with ", config_path,
                                                    ": ", loaded.message()));
  }
  m.origin = absl::StrCat("weights ", weights);
  return m;
}

}  // namespace

absl::StatusOr<LoadedModel> LoadModel(Env* env, const ModelSource& s) {
  const int sources =
      !s.checkpoint.empty() + (!s.weights.empty() || !s.model_dir.empty() ? 1 : 0);
  if (sources == 0) {
    return absl::InvalidArgumentError(
        "no model: give --checkpoint DIR, --model DIR, or --weights FILE --model-config FILE");
  }
  if (!s.checkpoint.empty() && !s.weights.empty()) {
    return absl::InvalidArgumentError("--checkpoint and --weights both name the weights: give one");
  }
  ACCEL_ASSIGN_OR_RETURN(LoadedModel m,
                         s.checkpoint.empty() ? FromHfFiles(env, s) : FromCheckpoint(env, s));
  if (!m.layout->config().architecture().decoder) {
    return absl::InvalidArgumentError(absl::StrCat(m.origin, ": the ",
                                                   m.layout->config().architecture().name,
                                                   " family has no decoder to generate with"));
  }
  return m;
}

absl::StatusOr<TextCodec> TextCodec::Open(Env* env, const std::string& path, int64_t vocab) {
  TextCodec codec;
  if (path.empty()) {
    if (vocab != 256) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the model's vocabulary is ", vocab,
          " tokens, not 256 bytes: give its tokenizer with --tokenizer tokenizer.json"));
    }
    return codec;
  }
  if (!env->FileExists(path)) {
    return absl::NotFoundError(absl::StrCat("--tokenizer ", path, ": no such file"));
  }
  // A tokenizer.json's directory holds tokenizer_config.json too; Load reads both.
  const bool is_json = std::string_view(path).ends_with(".json");
  const std::string dir = is_json ? Dirname(path) : path;
  absl::StatusOr<std::unique_ptr<text::Tokenizer>> tokenizer;
  if (is_json && !std::string_view(path).ends_with("/tokenizer.json") &&
      path != "tokenizer.json") {
    ACCEL_ASSIGN_OR_RETURN(const std::string json, ReadFileToString(env, path));
    tokenizer = text::Tokenizer::FromJson(json, nullptr, path);
  } else {
    tokenizer = text::Tokenizer::Load(env, dir);
  }
  if (!tokenizer.ok()) {
    return absl::Status(tokenizer.status().code(),
                        absl::StrCat("--tokenizer ", path, ": ", tokenizer.status().message()));
  }
  if ((*tokenizer)->vocab_size() > vocab) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tokenizer ", path, " has ", (*tokenizer)->vocab_size(),
        " tokens, more than the model's vocabulary of ", vocab, ": it is another model's"));
  }
  codec.tokenizer_ = std::move(*tokenizer);
  const std::string config = Join(dir, "tokenizer_config.json");
  if (env->FileExists(config)) codec.config_path_ = config;
  return codec;
}

absl::StatusOr<std::vector<int32_t>> TextCodec::Encode(std::string_view text,
                                                       bool add_special_tokens) const {
  if (tokenizer_ == nullptr) {
    std::vector<int32_t> ids(text.size());
    for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
    return ids;
  }
  return tokenizer_->Encode(text, add_special_tokens);
}

std::string TextCodec::Decode(absl::Span<const int32_t> ids) const {
  if (tokenizer_ == nullptr) {
    std::string bytes(ids.size(), '\0');
    for (size_t i = 0; i < ids.size(); ++i) bytes[i] = static_cast<char>(ids[i]);
    return bytes;
  }
  return tokenizer_->Decode(ids, /*skip_special_tokens=*/true);
}

std::vector<int32_t> TextCodec::end_ids() const {
  if (tokenizer_ == nullptr || !tokenizer_->eos_id().has_value()) return {};
  return {*tokenizer_->eos_id()};
}

std::optional<int32_t> TextCodec::start_id() const {
  if (tokenizer_ == nullptr) return std::nullopt;
  return tokenizer_->bos_id().has_value() ? tokenizer_->bos_id() : tokenizer_->eos_id();
}

}  // namespace accel::generate
