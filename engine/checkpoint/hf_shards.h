// Hugging Face's sharded model form, shared by every writer of model files (SaveHfWeights,
// FullModelWriter, consolidation) so that they cut, name and index the shards identically:
//   model-00001-of-0000N.safetensors ... model-0000N-of-0000N.safetensors
//   model.safetensors.index.json   {"metadata": {"total_size": BYTES},
//                                   "weight_map": {tensor: shard file, ...}}
// The layout's tensors are cut, in layout order, into groups of at most max_shard_bytes of
// tensor data each (a tensor larger than that is a group of its own), as save_pretrained's
// max_shard_size does. max_shard_bytes <= 0, or a model whose data fits, is one group: one file
// under the caller's own name (model.safetensors), no index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/param_specs.h"
#include "engine/tensor/dtype.h"

namespace accel::checkpoint {

// The default shard size of the streamed writers (trainer full / 16-bit / final saves,
// consolidation): save_pretrained's "5GB" (Accelerate's save_model says "10GB"), in SI bytes.
inline constexpr int64_t kDefaultMaxShardBytes = 5'000'000'000;
inline constexpr char kHfIndexFileName[] = "model.safetensors.index.json";

// One shard: consecutive layout entries, flat elements [flat_begin, flat_end).
struct HfShard {
  std::vector<const LayoutEntry*> entries;
  int64_t flat_begin = 0;
  int64_t flat_end = 0;
};

// The layout's entries cut into shards (see above). Always at least one shard.
std::vector<HfShard> HfShards(const model::ModelLayout& layout, DType dtype,
                              int64_t max_shard_bytes);

// Hugging Face's shard names: model-00001-of-00003.safetensors (shard is 0-based).
std::string HfShardFileName(int shard, int shards);

// The safetensors header of one shard file (metadata {"format": "pt", "producer": "accel"}),
// as SafetensorsWriter writes it for the same tensors.
[[nodiscard]] absl::StatusOr<std::string> HfShardHeader(const HfShard& shard, DType dtype);

// model.safetensors.index.json's text for `shards` (more than one).
std::string HfShardIndexJson(const std::vector<HfShard>& shards, DType dtype);

}  // namespace accel::checkpoint
