// Hugging Face model weights in and out (model.safetensors + config.json), for every
// architecture (engine/model/model_config.h).
//
// Loading reads a model.safetensors, a sharded model.safetensors.index.json or a directory
// holding either, with the names and checks of HfModelFile (hf_model_file.h): the table's Hugging
// Face names (GPT-2 also with the "transformer." prefix), a tied lm_head.weight checked for shape
// and not read, known non-parameter buffers ignored; any other unknown tensor, a missing tensor
// or a shape mismatch is InvalidArgument naming the tensor and the file. F32, BF16 and F16
// tensors are converted to f32.
// Saving writes the table's names and shapes in the given dtype, and config.json beside the
// file (same directory), crash-safely. With max_shard_bytes > 0 and a model larger than that, it
// writes Hugging Face's sharded form instead of `path`: model-0000k-of-0000n.safetensors files
// of at most max_shard_bytes each (a larger tensor alone in its file) and
// model.safetensors.index.json, in path's directory.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "engine/base/env.h"
#include "engine/model/param_specs.h"
#include "engine/tensor/dtype.h"

namespace accel::checkpoint {

// params: layout.num_params() floats, filled in layout order.
[[nodiscard]] absl::Status LoadHfWeights(Env* env, const std::string& path,
                                         const model::ModelLayout& layout, float* params);

[[nodiscard]] absl::Status SaveHfWeights(Env* env, const std::string& path,
                                         const model::ModelLayout& layout, const float* params,
                                         DType dtype = DType::kF32, int64_t max_shard_bytes = 0);

}  // namespace accel::checkpoint
