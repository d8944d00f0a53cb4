#include "engine/model/gpt2_config.h"

#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/status_macros.h"
#include "engine/model/config_json.h"
#include "nlohmann/json.hpp"

namespace accel::model {
namespace {

struct Preset {
  const char* name;
  int64_t n_layer, n_head, n_embd, vocab_size, n_positions;
};

constexpr Preset kPresets[] = {
    {"gpt2-tiny", 2, 4, 64, 256, 256},     {"gpt2-mini", 4, 4, 128, 256, 256},
    {"gpt2", 12, 12, 768, 50257, 1024},    {"gpt2-medium", 24, 16, 1024, 50257, 1024},
    {"gpt2-large", 36, 20, 1280, 50257, 1024}, {"gpt2-xl", 48, 25, 1600, 50257, 1024},
};

// Keys of Hugging Face's GPT2Config that change the model. The engine implements GPT-2 as
// published: a key with another value than that is an error naming it, never silently ignored.
// (Dropout probabilities are accepted at any value: the engine trains without dropout, which
// docs/job.md states.)
absl::Status CheckImplemented(const nlohmann::json& j, const Gpt2Config& c,
                              const std::string& src) {
  auto refuse = [&](const char* key, const std::string& why) {
    // The value is not quoted (config_json.h): the key and what is implemented say enough.
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": ", key, ": this value is not implemented by this engine (", why, ")"));
  };
  if (j.contains("activation_function") && j["activation_function"] != "gelu_new" &&
      j["activation_function"] != "gelu_pytorch_tanh") {
    return refuse("activation_function", "GPT-2's tanh GELU, gelu_new, only");
  }
  if (j.contains("layer_norm_epsilon") &&
      !(j["layer_norm_epsilon"].is_number() && j["layer_norm_epsilon"].get<double>() == 1e-5)) {
    return refuse("layer_norm_epsilon", "1e-05 only");
  }
  if (j.contains("n_inner") && !j["n_inner"].is_null() &&
      !(j["n_inner"].is_number_integer() && j["n_inner"].get<int64_t>() == 4 * c.n_embd)) {
    return refuse("n_inner", absl::StrCat("null or 4 * n_embd = ", 4 * c.n_embd, " only"));
  }
  for (const auto& [key, expected] : {std::pair<const char*, bool>{"tie_word_embeddings", true},
                                      {"scale_attn_weights", true},
                                      {"scale_attn_by_inverse_layer_idx", false},
                                      {"add_cross_attention", false}}) {
    if (j.contains(key) && j[key] != expected) {
      return refuse(key, absl::StrCat(expected ? "true" : "false", " only"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Gpt2Config::Validate() const {
  const std::pair<const char*, int64_t> fields[] = {{"n_layer", n_layer},
                                                    {"n_head", n_head},
                                                    {"n_embd", n_embd},
                                                    {"vocab_size", vocab_size},
                                                    {"n_positions", n_positions}};
  for (const auto& [field, value] : fields) {
    if (value <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("model config ", name, ": ", field, " must be positive, got ", value));
    }
  }
  // Bounds far above any GPT-2 (gpt2-xl: 48 layers, width 1600), so that a typo or a hostile
  // file is a one-line error here rather than an allocation that cannot succeed later.
  const std::pair<const char*, int64_t> limits[] = {{"n_layer", 4096},
                                                    {"n_head", 4096},
                                                    {"n_embd", 1 << 17},
                                                    {"vocab_size", 1 << 24},
                                                    {"n_positions", 1 << 20}};
  for (size_t i = 0; i < std::size(limits); ++i) {
    if (fields[i].second > limits[i].second) {
      return absl::InvalidArgumentError(absl::StrCat("model config ", name, ": ", fields[i].first,
                                                     " must be at most ", limits[i].second,
                                                     ", got ", fields[i].second));
    }
  }
  if (n_embd % n_head != 0) {
    return absl::InvalidArgumentError(absl::StrCat("model config ", name, ": n_embd (", n_embd,
                                                   ") is not divisible by n_head (", n_head, ")"));
  }
  return absl::OkStatus();
}

int64_t Gpt2Config::NumParams() const {
  const int64_t C = n_embd;
  return vocab_size * C + n_positions * C + n_layer * (12 * C * C + 13 * C) + 2 * C;
}

double Gpt2Config::TrainFlopsPerToken(int64_t T) const {
  return 6.0 * static_cast<double>(NumParams()) +
         6.0 * static_cast<double>(n_layer * n_embd * T);
}

ModelShape Gpt2Config::Shape() const {
  return {.model_type = "gpt2",
          .block_class = "GPT2Block",
          .num_layers = n_layer,
          .hidden_size = n_embd,
          .num_heads = n_head,
          .num_kv_heads = n_head,
          .head_dim = n_head > 0 ? head_size() : 0,
          .intermediate_size = 4 * n_embd,
          .vocab_size = vocab_size,
          .max_positions = n_positions,
          .tied_embeddings = true};
}

std::vector<std::string> Gpt2PresetNames() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.push_back(p.name);
  return names;
}

absl::StatusOr<Gpt2Config> Gpt2Preset(std::string_view name) {
  for (const Preset& p : kPresets) {
    if (name == p.name) {
      Gpt2Config c{p.name, p.n_layer, p.n_head, p.n_embd, p.vocab_size, p.n_positions};
      ACCEL_RETURN_IF_ERROR(c.Validate());
      return c;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown model preset '", std::string(name),
                                                 "' (known: ",
                                                 absl::StrJoin(Gpt2PresetNames(), ", "), ")"));
}

absl::StatusOr<Gpt2Config> Gpt2ConfigFromJson(std::string_view json_text, std::string_view source) {
  const std::string src(source);
  ACCEL_ASSIGN_OR_RETURN(nlohmann::json j, ParseConfigJson(json_text, src));
  if (j.contains("model_type") && j["model_type"] != "gpt2") {
    return absl::InvalidArgumentError(absl::StrCat(
        src,
        ": model_type: only gpt2 is read here (llama, mistral, qwen2 and qwen3 files are read "
        "by ModelConfigFromJson)"));
  }
  Gpt2Config c;
  c.name = src;
  auto read = [&](const char* key, const char* fallback, int64_t* out) -> absl::Status {
    const char* k = key;
    if (!j.contains(k) && fallback != nullptr && j.contains(fallback)) k = fallback;
    if (!j.contains(k)) return absl::InvalidArgumentError(absl::StrCat(src, ": missing key ", key));
    if (!j[k].is_number_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat(src, ": key ", k, " must be an integer, got ", JsonKind(j[k])));
    }
    *out = j[k].get<int64_t>();
    return absl::OkStatus();
  };
  ACCEL_RETURN_IF_ERROR(read("n_layer", nullptr, &c.n_layer));
  ACCEL_RETURN_IF_ERROR(read("n_head", nullptr, &c.n_head));
  ACCEL_RETURN_IF_ERROR(read("n_embd", nullptr, &c.n_embd));
  ACCEL_RETURN_IF_ERROR(read("vocab_size", nullptr, &c.vocab_size));
  ACCEL_RETURN_IF_ERROR(read("n_positions", "n_ctx", &c.n_positions));
  ACCEL_RETURN_IF_ERROR(c.Validate());
  ACCEL_RETURN_IF_ERROR(CheckImplemented(j, c, src));
  return c;
}

absl::StatusOr<Gpt2Config> LoadGpt2Config(Env* env, const std::string& path) {
  ACCEL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(env, path));
  return Gpt2ConfigFromJson(text, path);
}

std::string Gpt2ConfigToJson(const Gpt2Config& c) {
  nlohmann::ordered_json j;
  j["architectures"] = {"GPT2LMHeadModel"};
  j["model_type"] = "gpt2";
  j["n_layer"] = c.n_layer;
  j["n_head"] = c.n_head;
  j["n_embd"] = c.n_embd;
  j["vocab_size"] = c.vocab_size;
  j["n_positions"] = c.n_positions;
  j["n_ctx"] = c.n_positions;
  j["activation_function"] = "gelu_new";
  j["layer_norm_epsilon"] = 1e-5;
  j["tie_word_embeddings"] = true;
  j["torch_dtype"] = "float32";
  return j.dump(2) + "\n";
}

}  // namespace accel::model
