// ModelConfig: the shape of the model a job trains, of any registered architecture family.
//
// The engine's strategies (sharding, offload, checkpoints, loading) see a model only as its
// parameter table (ModelLayout) and a ModelRunner. What differs between architectures is one
// entry of the architecture registry (registry.h): the family's config type, its config.json
// reader, parameter table, activations and runners. A ModelConfig holds one family's config
// (a FamilyConfig, below) and its entry; code outside engine/model asks the entry, never which
// family it has.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/model/model_shape.h"
// The built-in families' configs, which many files name through this header.
#include "engine/model/gpt2_config.h"
#include "engine/model/llama_config.h"

namespace accel::model {

struct Architecture;  // registry.h

// A family's config type: a value with a name, its own validation and counts, the shape in
// common terms and the registry entry it belongs to.
template <typename C>
concept FamilyConfig = std::copyable<C> && requires(const C& c, C& m, int64_t T) {
  { C::Family() } -> std::same_as<const Architecture&>;
  { m.name } -> std::convertible_to<std::string&>;
  { c.Validate() } -> std::same_as<absl::Status>;
  { c.NumParams() } -> std::convertible_to<int64_t>;
  { c.TrainFlopsPerToken(T) } -> std::convertible_to<double>;
  { c.Shape() } -> std::same_as<ModelShape>;
};

class ModelConfig {
 public:
  // GPT-2's default (zero-sized, invalid) config, as before the registry.
  ModelConfig();
  template <FamilyConfig C>
  ModelConfig(C c)  // NOLINT: implicit by design, from any family's config
      : arch_(&C::Family()), impl_(std::make_shared<const Holder<C>>(std::move(c))) {}

  // The registry entry of this config's family.
  const Architecture& architecture() const { return *arch_; }
  // The family's own config, or null when it is another family's: for the family's own code in
  // engine/model (and its tests). Everything else asks architecture().
  template <typename C>
  const C* As() const {
    return typeid(C) == impl_->type() ? &static_cast<const Holder<C>&>(*impl_).config : nullptr;
  }

  const std::string& name() const { return impl_->name(); }
  void set_name(std::string name) { impl_ = impl_->WithName(std::move(name)); }
  // Hugging Face model_type: "gpt2", "llama", "mistral", "qwen2".
  const std::string& model_type() const { return shape().model_type; }
  // The Hugging Face class of one transformer block: GPT2Block, LlamaDecoderLayer, ...
  const std::string& block_class() const { return shape().block_class; }
  int64_t num_layers() const { return shape().num_layers; }
  int64_t hidden_size() const { return shape().hidden_size; }
  int64_t num_heads() const { return shape().num_heads; }
  int64_t num_kv_heads() const { return shape().num_kv_heads; }  // GPT-2: num_heads
  int64_t head_dim() const { return shape().head_dim; }
  int64_t intermediate_size() const { return shape().intermediate_size; }  // GPT-2: 4 · hidden
  int64_t vocab_size() const { return shape().vocab_size; }
  int64_t max_positions() const { return shape().max_positions; }
  bool tied_embeddings() const { return shape().tied_embeddings; }
  const ModelShape& shape() const { return impl_->shape; }

  [[nodiscard]] absl::Status Validate() const { return impl_->Validate(); }
  int64_t NumParams() const { return impl_->NumParams(); }
  double TrainFlopsPerToken(int64_t T) const { return impl_->TrainFlopsPerToken(T); }
  // One line for people: "llama 4 layers, hidden 128, 4 heads (2 kv), mlp 352, vocab 256".
  std::string Describe() const;

 private:
  // The family's config behind one interface; immutable once made (set_name makes a new one),
  // so copies of a ModelConfig share it.
  struct HolderBase {
    explicit HolderBase(ModelShape s) : shape(std::move(s)) {}
    virtual ~HolderBase() = default;
    virtual const std::type_info& type() const = 0;
    virtual const std::string& name() const = 0;
    virtual std::shared_ptr<const HolderBase> WithName(std::string name) const = 0;
    virtual absl::Status Validate() const = 0;
    virtual int64_t NumParams() const = 0;
    virtual double TrainFlopsPerToken(int64_t T) const = 0;
    const ModelShape shape;
  };
  template <typename C>
  struct Holder final : HolderBase {
    explicit Holder(C c) : HolderBase(c.Shape()), config(std::move(c)) {}
    const std::type_info& type() const override { return typeid(C); }
    const std::string& name() const override { return config.name; }
    std::shared_ptr<const HolderBase> WithName(std::string name) const override {
      C renamed = config;
      renamed.name = std::move(name);
      return std::make_shared<const Holder<C>>(std::move(renamed));
    }
    absl::Status Validate() const override { return config.Validate(); }
    int64_t NumParams() const override { return config.NumParams(); }
    double TrainFlopsPerToken(int64_t T) const override { return config.TrainFlopsPerToken(T); }
    const C config;
  };

  const Architecture* arch_;
  std::shared_ptr<const HolderBase> impl_;
};

// Whether cls names one transformer block of a registered architecture (GPT2Block,
// LlamaDecoderLayer, MistralDecoderLayer, Qwen2DecoderLayer, ...) or nanoGPT's "Block".
bool IsBlockClass(std::string_view cls);

// Every preset name, family by family in registry order (GPT-2's, then Llama's).
std::vector<std::string> ModelPresetNames();
// InvalidArgument listing the known presets when the name is unknown.
[[nodiscard]] absl::StatusOr<ModelConfig> ModelPreset(std::string_view name);

// A Hugging Face config.json of any registered model_type, read by that family's reader (absent:
// the family that reads files without one, GPT-2, whose own files predate the key). An unknown
// model_type is InvalidArgument naming the key and the supported names (not the value: the file
// may be a client's, config_json.h). `source` names the file in errors.
[[nodiscard]] absl::StatusOr<ModelConfig> ModelConfigFromJson(std::string_view json_text,
                                                              std::string_view source);
[[nodiscard]] absl::StatusOr<ModelConfig> LoadModelConfig(Env* env, const std::string& path);
// The config.json Hugging Face's from_pretrained accepts for the same model.
std::string ModelConfigToJson(const ModelConfig& config);

}  // namespace accel::model
