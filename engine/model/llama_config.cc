#include "engine/model/llama_config.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/model/config_json.h"
#include "nlohmann/json.hpp"

namespace accel::model {
namespace {

using Json = nlohmann::json;

LlamaConfig Shape(const char* name, int64_t hidden, int64_t intermediate, int64_t heads,
                  int64_t kv_heads, int64_t layers, int64_t vocab, int64_t positions, bool tied) {
  LlamaConfig c;
  c.name = name;
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = hidden / heads;
  c.num_hidden_layers = layers;
  c.vocab_size = vocab;
  c.max_position_embeddings = positions;
  c.rms_norm_eps = 1e-5;
  c.tie_word_embeddings = tied;
  return c;
}

std::vector<LlamaConfig> Presets() {
  std::vector<LlamaConfig> p;
  // Byte-level shapes for tests and the bundled text (vocab 256), GQA with 2 query heads per kv
  // head and an untied lm_head.
  p.push_back(Shape("llama-tiny", 64, 176, 4, 2, 2, 256, 256, false));
  p.push_back(Shape("llama-mini", 128, 352, 4, 2, 4, 256, 256, false));
  // SmolLM-135M's shape (HuggingFaceTB/SmolLM-135M config.json).
  p.push_back(Shape("smollm-135m", 576, 1536, 9, 3, 30, 49152, 2048, true));
  // TinyLlama-1.1B's shape (TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T config.json).
  p.push_back(Shape("tinyllama-1.1b", 2048, 5632, 32, 4, 22, 32000, 2048, false));
  // Llama 3.2 1B's shape, with its rope_scaling.
  LlamaConfig l3 = Shape("llama3.2-1b", 2048, 8192, 32, 8, 16, 128256, 131072, true);
  l3.rope_theta = 500000.0;
  l3.rope_scaling = {RopeScaling::Type::kLlama3, 32.0, 1.0, 4.0, 8192};
  p.push_back(l3);
  // Qwen3: a byte-level test shape (head_dim 32 != 64 / 4, tied) and Qwen3-0.6B's
  // (Qwen/Qwen3-0.6B config.json: head_dim 128 with hidden 1024 and 16 heads).
  LlamaConfig q3_tiny = Shape("qwen3-tiny", 64, 176, 4, 2, 2, 256, 256, true);
  q3_tiny.model_type = "qwen3";
  q3_tiny.head_dim = 32;
  q3_tiny.rms_norm_eps = 1e-6;
  q3_tiny.max_window_layers = 2;
  p.push_back(q3_tiny);
  LlamaConfig q3 = Shape("qwen3-0.6b", 1024, 3072, 16, 8, 28, 151936, 40960, true);
  q3.model_type = "qwen3";
  q3.head_dim = 128;
  q3.rms_norm_eps = 1e-6;
  q3.rope_theta = 1000000.0;
  q3.max_window_layers = 28;
  p.push_back(q3);
  return p;
}

// The value is not quoted (config_json.h): the key and what is implemented say enough.
absl::Status Refuse(const std::string& src, const char* key, const Json& /*value*/,
                    const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat(src, ": ", key, ": this value is not implemented by this engine (", why, ")"));
}

// Reads the optional integer `key` into *out (left as is when absent or null).
absl::Status ReadInt(const Json& j, const std::string& src, const char* key, int64_t* out) {
  if (!j.contains(key) || j[key].is_null()) return absl::OkStatus();
  if (!j[key].is_number_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": key ", key, " must be an integer, got ", JsonKind(j[key])));
  }
  *out = j[key].get<int64_t>();
  return absl::OkStatus();
}

absl::Status ReadDouble(const Json& j, const std::string& src, const char* key, double* out) {
  if (!j.contains(key) || j[key].is_null()) return absl::OkStatus();
  if (!j[key].is_number()) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": key ", key, " must be a number, got ", JsonKind(j[key])));
  }
  if (!std::isfinite(j[key].get<double>())) {
    return absl::InvalidArgumentError(absl::StrCat(src, ": key ", key, " must be finite"));
  }
  *out = j[key].get<double>();
  return absl::OkStatus();
}

absl::Status ReadBool(const Json& j, const std::string& src, const char* key, bool* out) {
  if (!j.contains(key) || j[key].is_null()) return absl::OkStatus();
  if (!j[key].is_boolean()) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": key ", key, " must be true or false, got ", JsonKind(j[key])));
  }
  *out = j[key].get<bool>();
  return absl::OkStatus();
}

absl::StatusOr<RopeScaling> ReadRopeScaling(const Json& j, const std::string& src) {
  RopeScaling s;
  if (!j.contains("rope_scaling") || j["rope_scaling"].is_null()) return s;
  const Json& r = j["rope_scaling"];
  if (!r.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": key rope_scaling must be an object or null, got ", JsonKind(r)));
  }
  // Hugging Face renamed "type" to "rope_type" and reads either.
  const char* type_key = r.contains("rope_type") ? "rope_type" : "type";
  const std::string type = r.contains(type_key) && r[type_key].is_string()
                               ? r[type_key].get<std::string>()
                               : std::string();
  if (type == "default") return s;
  if (type == "linear") {
    s.type = RopeScaling::Type::kLinear;
  } else if (type == "llama3") {
    s.type = RopeScaling::Type::kLlama3;
  } else {
    return Refuse(src, "rope_scaling", r, "rope_type linear or llama3 only");
  }
  const std::string key = absl::StrCat(src, ": rope_scaling");
  ACCEL_RETURN_IF_ERROR(ReadDouble(r, key, "factor", &s.factor));
  if (s.type == RopeScaling::Type::kLlama3) {
    ACCEL_RETURN_IF_ERROR(ReadDouble(r, key, "low_freq_factor", &s.low_freq_factor));
    ACCEL_RETURN_IF_ERROR(ReadDouble(r, key, "high_freq_factor", &s.high_freq_factor));
    ACCEL_RETURN_IF_ERROR(ReadInt(r, key, "original_max_position_embeddings",
                                  &s.original_max_position_embeddings));
    if (!r.contains("original_max_position_embeddings")) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, ": missing key original_max_position_embeddings"));
    }
  }
  return s;
}

// Keys Hugging Face's Llama, Mistral, Qwen2 and Qwen3 configs have that change the math, at any
// value but the one this engine implements.
absl::Status CheckImplemented(const Json& j, const LlamaConfig& /*c*/, const std::string& src) {
  if (j.contains("hidden_act") && j["hidden_act"] != "silu") {
    return Refuse(src, "hidden_act", j["hidden_act"], "silu only");
  }
  if (j.contains("partial_rotary_factor") && j["partial_rotary_factor"] != 1.0) {
    return Refuse(src, "partial_rotary_factor", j["partial_rotary_factor"], "1.0 only");
  }
  if (j.contains("use_qk_norm") && j["use_qk_norm"] != false) {
    return Refuse(src, "use_qk_norm", j["use_qk_norm"], "false only");
  }
  return absl::OkStatus();
}

// Which layers attend through a sliding window, as Hugging Face decides it: Mistral's every layer
// (MistralConfig's default window 4096 when the key is absent; a Llama file's only when it names
// one); Qwen2's and Qwen3's only with use_sliding_window, on layers from max_window_layers
// (default 28) on. layer_types, where a newer file lists it, says the same per layer; full layers
// must come first (the only pattern these families have).
absl::Status ReadAttentionWindow(const Json& j, const std::string& src, LlamaConfig* c) {
  const bool qwen = c->model_type == "qwen2" || c->model_type == "qwen3";
  bool use = !qwen;
  if (qwen) ACCEL_RETURN_IF_ERROR(ReadBool(j, src, "use_sliding_window", &use));
  int64_t window = c->model_type == "llama" ? 0 : 4096;
  if (j.contains("sliding_window") && j["sliding_window"].is_null()) window = 0;
  ACCEL_RETURN_IF_ERROR(ReadInt(j, src, "sliding_window", &window));
  const bool named = j.contains("sliding_window") && !j["sliding_window"].is_null();
  if (window < 0 || (window == 0 && named)) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": key sliding_window must be a positive integer or null, got ", window));
  }
  int64_t first_windowed = qwen ? 28 : 0;
  if (qwen) ACCEL_RETURN_IF_ERROR(ReadInt(j, src, "max_window_layers", &first_windowed));
  if (first_windowed < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": key max_window_layers must be >= 0, got ", first_windowed));
  }
  if (j.contains("layer_types") && !j["layer_types"].is_null()) {
    const Json& types = j["layer_types"];
    if (!types.is_array() || static_cast<int64_t>(types.size()) != c->num_hidden_layers) {
      return absl::InvalidArgumentError(absl::StrCat(
          src, ": key layer_types must list num_hidden_layers = ", c->num_hidden_layers,
          " entries"));
    }
    int64_t first_sliding = c->num_hidden_layers;
    for (int64_t l = 0; l < c->num_hidden_layers; ++l) {
      const Json& t = types[l];
      if (t == "sliding_attention") {
        first_sliding = std::min(first_sliding, l);
      } else if (t != "full_attention") {
        return Refuse(src, "layer_types", t, "full_attention and sliding_attention only");
      } else if (first_sliding < l) {
        return Refuse(src, "layer_types", t,
                      "sliding_attention layers after every full_attention one only");
      }
    }
    first_windowed = qwen ? first_sliding : 0;
    if (!qwen && first_sliding != 0 && first_sliding != c->num_hidden_layers) {
      return Refuse(src, "layer_types", types,
                    "one kind for every layer only: this model_type has no max_window_layers");
    }
    if (first_sliding == c->num_hidden_layers) use = false;
  }
  c->sliding_window = use ? window : 0;
  c->max_window_layers = qwen ? first_windowed : 0;
  return absl::OkStatus();
}

}  // namespace

absl::Status LlamaConfig::Validate() const {
  const std::pair<const char*, int64_t> fields[] = {
      {"hidden_size", hidden_size},         {"intermediate_size", intermediate_size},
      {"num_attention_heads", num_attention_heads},
      {"num_key_value_heads", num_key_value_heads},
      {"head_dim", head_dim},               {"num_hidden_layers", num_hidden_layers},
      {"vocab_size", vocab_size},           {"max_position_embeddings", max_position_embeddings}};
  // Bounds far above any released model, so that a typo or a hostile file is a one-line error
  // here rather than an allocation that cannot succeed later.
  const int64_t limits[] = {1 << 17, 1 << 19, 4096, 4096, 1 << 12, 4096, 1 << 24, 1 << 24};
  for (size_t i = 0; i < std::size(fields); ++i) {
    const auto& [field, value] = fields[i];
    if (value <= 0 || value > limits[i]) {
      return absl::InvalidArgumentError(absl::StrCat("model config ", name, ": ", field,
                                                     " must be in [1, ", limits[i], "], got ",
                                                     value));
    }
  }
  if (sliding_window < 0 || sliding_window > (int64_t{1} << 24) || max_window_layers < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model config ", name, ": sliding_window must be in [0, ", int64_t{1} << 24,
        "] (0: none) and max_window_layers >= 0, got ", sliding_window, " and ",
        max_window_layers));
  }
  if (num_attention_heads % num_key_value_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model config ", name, ": num_attention_heads (", num_attention_heads,
        ") is not divisible by num_key_value_heads (", num_key_value_heads, ")"));
  }
  if (head_dim % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("model config ", name, ": head_dim (",
                                                   head_dim, ") must be even for RoPE"));
  }
  const std::pair<const char*, double> positive[] = {
      {"rms_norm_eps", rms_norm_eps}, {"rope_theta", rope_theta},
      {"rope_scaling.factor", rope_scaling.factor}, {"initializer_range", initializer_range}};
  for (const auto& [field, value] : positive) {
    if (!(std::isfinite(value) && value > 0)) {
      return absl::InvalidArgumentError(absl::StrCat("model config ", name, ": ", field,
                                                     " must be finite and positive, got ",
                                                     value));
    }
  }
  if (rope_scaling.type == RopeScaling::Type::kLlama3 &&
      !(rope_scaling.original_max_position_embeddings > 0 &&
        rope_scaling.high_freq_factor > rope_scaling.low_freq_factor &&
        rope_scaling.low_freq_factor > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model config ", name,
        ": rope_scaling llama3 needs original_max_position_embeddings > 0 and "
        "high_freq_factor > low_freq_factor > 0"));
  }
  return absl::OkStatus();
}

int64_t LlamaConfig::NumParams() const {
  const int64_t C = hidden_size, I = intermediate_size;
  const int64_t attention = C * q_dim() + 2 * C * kv_dim() + q_dim() * C +
                            (attention_bias ? q_dim() + 2 * kv_dim() : 0) +
                            (o_proj_bias() ? C : 0);
  const int64_t mlp = 3 * C * I + (mlp_bias ? 2 * I + C : 0);
  const int64_t layer = attention + mlp + 2 * C + (qk_norm() ? 2 * head_dim : 0);
  return vocab_size * C * (tie_word_embeddings ? 1 : 2) + C + num_hidden_layers * layer;
}

double LlamaConfig::TrainFlopsPerToken(int64_t T) const {
  const int64_t lookup_only = tie_word_embeddings ? 0 : vocab_size * hidden_size;
  return 6.0 * static_cast<double>(NumParams() - lookup_only) +
         6.0 * static_cast<double>(num_hidden_layers * q_dim() * T);
}

ModelShape LlamaConfig::Shape() const {
  return {.model_type = model_type,
          .block_class = DecoderLayerClass(),
          .num_layers = num_hidden_layers,
          .hidden_size = hidden_size,
          .num_heads = num_attention_heads,
          .num_kv_heads = num_key_value_heads,
          .head_dim = head_dim,
          .intermediate_size = intermediate_size,
          .vocab_size = vocab_size,
          .max_positions = max_position_embeddings,
          .tied_embeddings = tie_word_embeddings};
}

std::string LlamaConfig::DecoderLayerClass() const {
  if (model_type == "mistral") return "MistralDecoderLayer";
  if (model_type == "qwen2") return "Qwen2DecoderLayer";
  if (model_type == "qwen3") return "Qwen3DecoderLayer";
  return "LlamaDecoderLayer";
}

std::vector<double> LlamaConfig::InverseFrequencies() const {
  std::vector<double> inv(static_cast<size_t>(head_dim / 2));
  for (size_t i = 0; i < inv.size(); ++i) {
    // Hugging Face: 1 / theta^(arange(0, D, 2) / D) (in float32 there; double here, so the
    // angles are exact to what float32 activations can resolve).
    inv[i] = 1.0 / std::pow(rope_theta, static_cast<double>(2 * i) / static_cast<double>(head_dim));
  }
  const RopeScaling& s = rope_scaling;
  if (s.type == RopeScaling::Type::kLinear) {
    for (double& f : inv) f /= s.factor;
  } else if (s.type == RopeScaling::Type::kLlama3) {
    // Wavelengths longer than the original context divide by factor, shorter than its
    // high-frequency bound stay, those between blend linearly in old_context / wavelength.
    const double old_context = static_cast<double>(s.original_max_position_embeddings);
    const double low_wavelen = old_context / s.low_freq_factor;
    const double high_wavelen = old_context / s.high_freq_factor;
    for (double& f : inv) {
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen > low_wavelen) {
        f /= s.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth =
            (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1 - smooth) * f / s.factor + smooth * f;
      }
    }
  }
  return inv;
}

std::vector<std::string> LlamaPresetNames() {
  std::vector<std::string> names;
  for (const LlamaConfig& c : Presets()) names.push_back(c.name);
  return names;
}

absl::StatusOr<LlamaConfig> LlamaPreset(std::string_view name) {
  for (LlamaConfig& c : Presets()) {
    if (c.name == name) return std::move(c);
  }
  return absl::NotFoundError(absl::StrCat("no Llama preset ", std::string(name)));
}

bool IsLlamaModelType(std::string_view model_type) {
  return model_type == "llama" || model_type == "mistral" || model_type == "qwen2" ||
         model_type == "qwen3";
}

absl::StatusOr<LlamaConfig> LlamaConfigFromJson(std::string_view json_text,
                                                std::string_view source) {
  const std::string src(source);
  ACCEL_ASSIGN_OR_RETURN(Json j, ParseConfigJson(json_text, src));
  if (!j.contains("model_type") || !j["model_type"].is_string() ||
      !IsLlamaModelType(j["model_type"].get<std::string>())) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": model_type must be llama, mistral, qwen2 or qwen3"));
  }
  LlamaConfig c;
  c.name = src;
  c.model_type = j["model_type"].get<std::string>();
  // Hugging Face's defaults where a key is absent (LlamaConfig's; Mistral and Qwen2 differ only
  // in keys every real file carries).
  c.vocab_size = 32000;
  c.max_position_embeddings = 2048;
  for (const char* key : {"hidden_size", "intermediate_size", "num_attention_heads",
                          "num_hidden_layers"}) {
    if (!j.contains(key)) return absl::InvalidArgumentError(absl::StrCat(src, ": missing key ", key));
  }
  ACCEL_RETURN_IF_ERROR(ReadInt(j, src, "hidden_size", &c.hidden_size));
  ACCEL_RETURN_IF_ERROR(ReadInt(j, src, "intermediate_size", &c.intermediate_size));
  ACCEL_RETURN_IF_ERROR(ReadInt(j, src, "num_attention_heads", &c.num_attention_heads));
  c.num_key_value_heads = c.num_attention_heads;
  ACCEL_RETURN_IF_ERROR(ReadInt(j, src, "num_key_value_heads", &c.num_key_value_heads));
  if (c.num_attention_heads > 0) c.head_dim = c.hidden_size / c.num_attention_heads;
  if (c.model_type == "qwen3") c.head_dim = 128;  // Qwen3Config's default, not hidden / heads
  ACCEL_RETURN_IF_ERROR(ReadInt(j, src, "head_dim", &c.head_dim));
  ACCEL_RETURN_IF_ERROR(ReadInt(j, src, "num_hidden_layers", &c.num_hidden_layers));
  ACCEL_RETURN_IF_ERROR(ReadInt(j, src, "vocab_size", &c.vocab_size));
  ACCEL_RETURN_IF_ERROR(ReadInt(j, src, "max_position_embeddings", &c.max_position_embeddings));
  ACCEL_RETURN_IF_ERROR(ReadDouble(j, src, "rms_norm_eps", &c.rms_norm_eps));
  ACCEL_RETURN_IF_ERROR(ReadDouble(j, src, "rope_theta", &c.rope_theta));
  ACCEL_RETURN_IF_ERROR(ReadDouble(j, src, "initializer_range", &c.initializer_range));
  ACCEL_RETURN_IF_ERROR(ReadBool(j, src, "tie_word_embeddings", &c.tie_word_embeddings));
  c.attention_bias = c.model_type == "qwen2";  // Qwen2's q/k/v projections always have biases
  ACCEL_RETURN_IF_ERROR(ReadBool(j, src, "attention_bias", &c.attention_bias));
  ACCEL_RETURN_IF_ERROR(ReadBool(j, src, "mlp_bias", &c.mlp_bias));
  ACCEL_ASSIGN_OR_RETURN(c.rope_scaling, ReadRopeScaling(j, src));
  if (c.model_type == "qwen2" && j.contains("attention_bias") && !c.attention_bias) {
    return Refuse(src, "attention_bias", j["attention_bias"], "Qwen2 has q/k/v biases");
  }
  ACCEL_RETURN_IF_ERROR(ReadAttentionWindow(j, src, &c));
  ACCEL_RETURN_IF_ERROR(c.Validate());
  ACCEL_RETURN_IF_ERROR(CheckImplemented(j, c, src));
  return c;
}

std::string LlamaConfigToJson(const LlamaConfig& c) {
  nlohmann::ordered_json j;
  const std::string cls = c.DecoderLayerClass();
  j["architectures"] = {cls.substr(0, cls.size() - std::string("DecoderLayer").size()) +
                        "ForCausalLM"};
  j["model_type"] = c.model_type;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["vocab_size"] = c.vocab_size;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  if (c.rope_scaling.type == RopeScaling::Type::kNone) {
    j["rope_scaling"] = nullptr;
  } else if (c.rope_scaling.type == RopeScaling::Type::kLinear) {
    j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", c.rope_scaling.factor}};
  } else {
    j["rope_scaling"] = {
        {"rope_type", "llama3"},
        {"factor", c.rope_scaling.factor},
        {"low_freq_factor", c.rope_scaling.low_freq_factor},
        {"high_freq_factor", c.rope_scaling.high_freq_factor},
        {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings}};
  }
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  if (c.model_type != "qwen2") j["attention_bias"] = c.attention_bias;
  const nlohmann::ordered_json window = c.sliding_window > 0
                                            ? nlohmann::ordered_json(c.sliding_window)
                                            : nlohmann::ordered_json(nullptr);
  if (c.model_type == "qwen2" || c.model_type == "qwen3") {
    j["use_sliding_window"] = c.sliding_window > 0;
    j["sliding_window"] = window;
    j["max_window_layers"] = c.max_window_layers;
  } else if (c.model_type == "mistral" || c.sliding_window > 0) {
    j["sliding_window"] = window;
  }
  j["mlp_bias"] = c.mlp_bias;
  j["hidden_act"] = "silu";
  j["initializer_range"] = c.initializer_range;
  j["torch_dtype"] = "float32";
  return j.dump(2) + "\n";
}

}  // namespace accel::model
