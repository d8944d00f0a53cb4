// The GPT-2 parameter table (Hugging Face GPT2Model names, no "transformer." prefix) and where
// Gpt2 finds its tensors in a unit.
//
// Shapes are in HF's Conv1D orientation ([in, out], y = x·W + b):
//   unit 0 (root):  wte.weight (V, C), wpe.weight (P, C), ln_f.weight (C), ln_f.bias (C)
//   unit 1 + l:     h.l.ln_1.{weight,bias} (C), h.l.attn.c_attn.{weight (C, 3C), bias (3C)},
//                   h.l.attn.c_proj.{weight (C, C), bias (C)}, h.l.ln_2.{weight,bias} (C),
//                   h.l.mlp.c_fc.{weight (C, 4C), bias (4C)}, h.l.mlp.c_proj.{weight (4C, C), bias (C)}
// lm_head.weight is tied to wte.weight and not stored. Initialisation: N(0, 0.02) for
// embeddings and linear weights, N(0, 0.02/sqrt(2·n_layer)) for the residual projections
// (attn.c_proj, mlp.c_proj), LayerNorm weights 1, biases 0.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/gpt2_config.h"
#include "engine/model/param_specs.h"

namespace accel::model {

std::vector<ParamSpec> Gpt2ParamSpecs(const Gpt2Config& config);

// Element offsets inside one unit's contiguous range.
struct Gpt2RootOffsets {
  int64_t wte, wpe, lnf_w, lnf_b;
};
struct Gpt2BlockOffsets {
  int64_t ln1_w, ln1_b, qkv_w, qkv_b, attproj_w, attproj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w,
      fcproj_b;
};
struct Gpt2Offsets {
  Gpt2RootOffsets root;
  Gpt2BlockOffsets block;  // identical for every block
};
// For a layout of a GPT-2 config (layout.config().As<Gpt2Config>() not null).
Gpt2Offsets Gpt2OffsetsOf(const ModelLayout& layout);

}  // namespace accel::model
