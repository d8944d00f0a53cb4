// The parameter table of a model and its flat layout, for any architecture.
//
// One ParamSpec per tensor, named and shaped as in the architecture's Hugging Face checkpoints
// (each family's registry entry makes it: gpt2_specs.h, llama_specs.h). The flat buffer is laid out
// unit by unit so that one FSDP unit is one contiguous range: unit 0 is the root (embeddings, final
// norm, an untied lm_head), unit 1 + l is transformer block l. The same table goes into
// checkpoints. Nothing outside engine/model (the strategies, checkpoints, loaders) looks further
// into a model than this table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/model_config.h"
#include "engine/tensor/flat_layout.h"

namespace accel::model {

enum class ParamInit { kNormal, kOnes, kZeros };

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  int unit = 0;               // 0 = root, 1 + l = transformer block l
  bool weight_decay = false;  // rank >= 2 (nanoGPT / llm.c rule)
  ParamInit init = ParamInit::kZeros;
  double init_std = 0;  // kNormal: N(0, init_std)
};

struct UnitRange {
  int64_t offset = 0;  // first element in the flat buffer
  int64_t numel = 0;
};

// The table, its flat layout and the unit ranges. Immutable; share freely.
class ModelLayout {
 public:
  [[nodiscard]] static absl::StatusOr<ModelLayout> Create(const ModelConfig& config);

  const ModelConfig& config() const { return config_; }
  const std::vector<ParamSpec>& specs() const { return specs_; }
  const FlatLayout& flat() const { return flat_; }
  int64_t num_params() const { return flat_.total_elements(); }
  int num_units() const { return static_cast<int>(units_.size()); }
  const UnitRange& unit(int u) const { return units_[u]; }
  // Element offset of tensor `name` inside its unit's range; -1 when there is no such tensor.
  int64_t OffsetInUnit(std::string_view name) const;

 private:
  ModelConfig config_;
  std::vector<ParamSpec> specs_;
  FlatLayout flat_;
  std::vector<UnitRange> units_;
};

// The architecture's initialisation, deterministic for a seed (ParamSpec's init). params has
// layout.num_params() elements. Each tensor draws from its own stream (seed, tensor index), so
// the result does not depend on the layout order.
void InitParams(const ModelLayout& layout, uint64_t seed, float* params);
// The same values for unit u alone (layout.unit(u).numel floats; every tensor lies inside one
// unit): a model initialised unit by unit never needs its whole parameter vector in memory.
void InitUnit(const ModelLayout& layout, uint64_t seed, int unit, float* unit_params);

}  // namespace accel::model
