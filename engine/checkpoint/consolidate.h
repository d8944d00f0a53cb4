// Offline consolidation of a sharded checkpoint step into one Hugging Face model file: what
// DeepSpeed's zero_to_fp32.py and `accelerate merge-weights` do, without their memory bill.
//
// The output is byte for byte what SaveHfWeights writes for the same parameters (GPT2Model
// names from the layout table, layout order, metadata {"format": "pt", "producer": "accel"}),
// plus config.json in the same directory. It is streamed: the safetensors header is written
// from the layout table, then each tensor is copied in chunks of `chunk_elements` from the rank
// files (only the params sections are read), converted to the output dtype on the way. Peak
// memory is the chunk buffers plus one rank-file block per open file — independent of the model
// and of its largest tensor.
//
// Errors: NotFound for a missing step, DataLoss for a corrupt one (checksums are verified on
// every block read), InvalidArgument for a checkpoint without a usable GPT-2 config or whose
// layout table is not that config's. The output is written crash-safely (OUT.tmp, fsync, rename,
// directory fsync); on error no OUT.tmp is left behind when the Env can delete it.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/tensor/dtype.h"

namespace accel::checkpoint {

struct ConsolidateOptions {
  DType dtype = DType::kF32;  // kBF16 / kF16: rounded to nearest even
  int64_t chunk_elements = int64_t{1} << 20;
  bool write_config = true;  // config.json beside the output
};

struct ConsolidateStats {
  int64_t step = 0;
  int world_size = 0;
  int64_t tensors = 0;
  int64_t params = 0;
  int64_t largest_tensor_elements = 0;
  uint64_t bytes_written = 0;  // the safetensors file
  uint64_t buffer_bytes = 0;   // the chunk buffers this call allocated
};

[[nodiscard]] absl::StatusOr<ConsolidateStats> ConsolidateToSafetensors(
    Env* env, const std::string& step_dir, const std::string& out_path,
    const ConsolidateOptions& options = {});

}  // namespace accel::checkpoint
