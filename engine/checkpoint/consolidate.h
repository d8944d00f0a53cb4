// Offline consolidation of a sharded checkpoint step into Hugging Face model files: what
// DeepSpeed's zero_to_fp32.py and `accelerate merge-weights` do, without their memory bill.
//
// The output is byte for byte what SaveHfWeights writes for the same parameters, dtype and
// max_shard_bytes (names from the layout table, layout order, metadata {"format": "pt",
// "producer": "accel"}): one file at out_path while the model's data fits in max_shard_bytes,
// else Hugging Face's sharded form in out_path's directory (hf_shards.h), plus config.json. It
// is streamed through FullModelWriter: each tensor is copied in chunks of `chunk_elements` from
// the rank files (only the params sections are read), converted to the output dtype on the way.
// Peak memory is the chunk buffers plus one rank-file block per open file — independent of the
// model and of its largest tensor.
//
// Errors: NotFound for a missing step, DataLoss for a corrupt one (checksums are verified on
// every block read), InvalidArgument for a checkpoint without a usable model config or whose
// layout table is not that config's. The output is written crash-safely (NAME.tmp, fsync, rename,
// directory fsync); on error no .tmp file is left behind when the Env can delete it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/checkpoint/full_model_writer.h"
#include "engine/checkpoint/hf_shards.h"
#include "engine/tensor/dtype.h"

namespace accel::checkpoint {

struct ConsolidateOptions {
  DType dtype = DType::kF32;  // kBF16 / kF16: rounded to nearest even
  int64_t chunk_elements = int64_t{1} << 20;
  bool write_config = true;  // config.json beside the output
  // Above this many bytes of tensor data, the sharded form (hf_shards.h); <= 0: one file.
  int64_t max_shard_bytes = kDefaultMaxShardBytes;
};

struct ConsolidateStats {
  int64_t step = 0;
  int world_size = 0;
  int64_t tensors = 0;
  int64_t params = 0;
  int64_t largest_tensor_elements = 0;
  uint64_t bytes_written = 0;  // the safetensors file(s), not the index
  uint64_t buffer_bytes = 0;   // the chunk and conversion buffers
  std::vector<ModelFileInfo> files;  // written, in order: the safetensors file(s), the index
};

[[nodiscard]] absl::StatusOr<ConsolidateStats> ConsolidateToSafetensors(
    Env* env, const std::string& step_dir, const std::string& out_path,
    const ConsolidateOptions& options = {});

}  // namespace accel::checkpoint
