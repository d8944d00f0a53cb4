// Hugging Face GPT-2 weights in and out (model.safetensors + config.json).
//
// Loading accepts the names of GPT2Model ("wte.weight", "h.0.attn.c_attn.weight", ...) and of
// GPT2LMHeadModel ("transformer." prefix). lm_head.weight, when present, must equal wte.weight's
// shape (it is tied, so its values are not read); the attention-mask buffers old checkpoints carry
// (h.N.attn.bias, h.N.attn.masked_bias) are ignored. Any other unknown tensor, a missing tensor
// or a shape mismatch is InvalidArgument naming the tensor and the file. F32, BF16 and F16
// tensors are converted to f32.
// Saving writes GPT2Model names, Conv1D orientation, in the given dtype, and config.json beside
// the file (same directory), crash-safely.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "engine/base/env.h"
#include "engine/model/param_specs.h"
#include "engine/tensor/dtype.h"

namespace accel::checkpoint {

// params: layout.num_params() floats, filled in layout order.
[[nodiscard]] absl::Status LoadHfGpt2Weights(Env* env, const std::string& path,
                                             const model::Gpt2Layout& layout, float* params);

[[nodiscard]] absl::Status SaveHfGpt2Weights(Env* env, const std::string& path,
                                             const model::Gpt2Layout& layout, const float* params,
                                             DType dtype = DType::kF32);

}  // namespace accel::checkpoint
