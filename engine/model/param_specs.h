// The GPT-2 parameter table and its flat layout.
//
// One ParamSpec per tensor, with Hugging Face GPT2Model names (no "transformer." prefix) and
// shapes in HF's Conv1D orientation ([in, out], y = x·W + b). The flat buffer is laid out unit by
// unit so that one FSDP unit is one contiguous range:
//   unit 0 (root):  wte.weight (V, C), wpe.weight (P, C), ln_f.weight (C), ln_f.bias (C)
//   unit 1 + l:     h.l.ln_1.{weight,bias} (C), h.l.attn.c_attn.{weight (C, 3C), bias (3C)},
//                   h.l.attn.c_proj.{weight (C, C), bias (C)}, h.l.ln_2.{weight,bias} (C),
//                   h.l.mlp.c_fc.{weight (C, 4C), bias (4C)}, h.l.mlp.c_proj.{weight (4C, C), bias (C)}
// The same table goes into checkpoints. lm_head.weight is tied to wte.weight and not stored.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/gpt2_config.h"
#include "engine/tensor/flat_layout.h"

namespace accel::model {

enum class ParamInit { kNormal, kResidualProjection, kOnes, kZeros };

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  int unit = 0;               // 0 = root, 1 + l = transformer block l
  bool weight_decay = false;  // rank >= 2 (nanoGPT / llm.c rule)
  ParamInit init = ParamInit::kZeros;
};

std::vector<ParamSpec> Gpt2ParamSpecs(const Gpt2Config& config);

// Element offsets inside one unit's contiguous range.
struct RootOffsets {
  int64_t wte, wpe, lnf_w, lnf_b;
};
struct BlockOffsets {
  int64_t ln1_w, ln1_b, qkv_w, qkv_b, attproj_w, attproj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w,
      fcproj_b;
};

struct UnitRange {
  int64_t offset = 0;  // first element in the flat buffer
  int64_t numel = 0;
};

// The table, its flat layout and the unit ranges. Immutable; share freely.
class Gpt2Layout {
 public:
  [[nodiscard]] static absl::StatusOr<Gpt2Layout> Create(const Gpt2Config& config);

  const Gpt2Config& config() const { return config_; }
  const std::vector<ParamSpec>& specs() const { return specs_; }
  const FlatLayout& flat() const { return flat_; }
  int64_t num_params() const { return flat_.total_elements(); }
  int num_units() const { return static_cast<int>(units_.size()); }
  const UnitRange& unit(int u) const { return units_[u]; }
  const RootOffsets& root() const { return root_; }
  // Identical for every block (offsets are relative to the block's unit).
  const BlockOffsets& block() const { return block_; }

 private:
  Gpt2Config config_;
  std::vector<ParamSpec> specs_;
  FlatLayout flat_;
  std::vector<UnitRange> units_;
  RootOffsets root_{};
  BlockOffsets block_{};
};

// GPT-2's initialisation, deterministic for a seed: N(0, 0.02) for embeddings and linear
// weights, N(0, 0.02/sqrt(2·n_layer)) for the residual projections (attn.c_proj, mlp.c_proj),
// LayerNorm weights 1, biases 0. params has layout.num_params() elements. Each tensor draws from
// its own stream (seed, tensor index), so the result does not depend on the layout order.
void InitGpt2Params(const Gpt2Layout& layout, uint64_t seed, float* params);
// The same values for unit u alone (layout.unit(u).numel floats; every tensor lies inside one
// unit): a model initialised unit by unit never needs its whole parameter vector in memory.
void InitGpt2Unit(const Gpt2Layout& layout, uint64_t seed, int unit, float* unit_params);

}  // namespace accel::model
