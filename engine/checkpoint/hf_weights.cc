#include "engine/checkpoint/hf_weights.h"

#include <memory>
#include <vector>

#include "engine/base/status_macros.h"
#include "engine/checkpoint/hf_model_file.h"
#include "engine/checkpoint/hf_shards.h"
#include "engine/checkpoint/safetensors.h"

namespace accel::checkpoint {

absl::Status LoadHfWeights(Env* env, const std::string& path, const model::ModelLayout& layout,
                           float* params) {
  // One validation and one name mapping for whole-model and ranged loads (hf_model_file.h).
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<HfModelFile> file, HfModelFile::Open(env, path, &layout));
  return file->ReadFlat(0, layout.num_params(), params);
}

absl::Status SaveHfWeights(Env* env, const std::string& path, const model::ModelLayout& layout,
                           const float* params, DType dtype, int64_t max_shard_bytes) {
  const std::vector<HfShard> shards = HfShards(layout, dtype, max_shard_bytes);
  const std::string dir = DirName(path);
  const int n = static_cast<int>(shards.size());
  for (int s = 0; s < n; ++s) {
    SafetensorsWriter writer;
    for (const LayoutEntry* e : shards[s].entries) {
      ACCEL_RETURN_IF_ERROR(writer.AddConverted(e->name, e->shape, params + e->offset, dtype));
    }
    writer.SetMetadata("format", "pt");
    writer.SetMetadata("producer", "accel");
    ACCEL_RETURN_IF_ERROR(writer.Write(env, n == 1 ? path : JoinPath(dir, HfShardFileName(s, n))));
  }
  if (n > 1) {
    ACCEL_RETURN_IF_ERROR(WriteFileAtomic(env, JoinPath(dir, kHfIndexFileName),
                                          HfShardIndexJson(shards, dtype)));
  }
  return WriteFileAtomic(env, JoinPath(dir, "config.json"),
                         model::ModelConfigToJson(layout.config()));
}

}  // namespace accel::checkpoint
