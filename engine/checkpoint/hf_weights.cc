#include "engine/checkpoint/hf_weights.h"

#include <cstdio>
#include <memory>
#include <vector>

#include "engine/base/status_macros.h"
#include "engine/checkpoint/hf_model_file.h"
#include "engine/checkpoint/safetensors.h"
#include "nlohmann/json.hpp"

namespace accel::checkpoint {
namespace {

// Hugging Face's shard names: model-00001-of-00003.safetensors.
std::string ShardFileName(int shard, int shards) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", shard + 1, shards);
  return name;
}

// The layout's entries cut, in order, into groups of at most max_bytes each (a tensor larger
// than that is a group of its own), as save_pretrained's max_shard_size does.
std::vector<std::vector<const LayoutEntry*>> Shards(const model::ModelLayout& layout, DType dtype,
                                                   int64_t max_bytes) {
  std::vector<std::vector<const LayoutEntry*>> shards(1);
  int64_t bytes = 0;
  for (const LayoutEntry& e : layout.flat().entries()) {
    const int64_t n = e.numel * static_cast<int64_t>(DTypeSize(dtype));
    if (max_bytes > 0 && bytes > 0 && bytes + n > max_bytes) {
      shards.emplace_back();
      bytes = 0;
    }
    shards.back().push_back(&e);
    bytes += n;
  }
  return shards;
}

}  // namespace

absl::Status LoadHfWeights(Env* env, const std::string& path, const model::ModelLayout& layout,
                           float* params) {
  // One validation and one name mapping for whole-model and ranged loads (hf_model_file.h).
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<HfModelFile> file, HfModelFile::Open(env, path, &layout));
  return file->ReadFlat(0, layout.num_params(), params);
}

absl::Status SaveHfWeights(Env* env, const std::string& path, const model::ModelLayout& layout,
                           const float* params, DType dtype, int64_t max_shard_bytes) {
  const std::vector<std::vector<const LayoutEntry*>> shards =
      Shards(layout, dtype, max_shard_bytes);
  const std::string dir = DirName(path);
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  int64_t total = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    SafetensorsWriter writer;
    const std::string file =
        shards.size() == 1 ? path : JoinPath(dir, ShardFileName(s, shards.size()));
    for (const LayoutEntry* e : shards[s]) {
      ACCEL_RETURN_IF_ERROR(writer.AddConverted(e->name, e->shape, params + e->offset, dtype));
      weight_map[e->name] = ShardFileName(s, shards.size());
      total += e->numel * static_cast<int64_t>(DTypeSize(dtype));
    }
    writer.SetMetadata("format", "pt");
    writer.SetMetadata("producer", "accel");
    ACCEL_RETURN_IF_ERROR(writer.Write(env, file));
  }
  if (shards.size() > 1) {
    nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}},
                                    {"weight_map", weight_map}};
    ACCEL_RETURN_IF_ERROR(
        WriteFileAtomic(env, JoinPath(dir, "model.safetensors.index.json"), index.dump(2) + "\n"));
  }
  return WriteFileAtomic(env, JoinPath(dir, "config.json"),
                         model::ModelConfigToJson(layout.config()));
}

}  // namespace accel::checkpoint
