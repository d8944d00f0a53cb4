#include "engine/checkpoint/hf_shards.h"

#include <cstdio>

#include "engine/checkpoint/safetensors.h"
#include "nlohmann/json.hpp"

namespace accel::checkpoint {

std::vector<HfShard> HfShards(const model::ModelLayout& layout, DType dtype,
                              int64_t max_shard_bytes) {
  std::vector<HfShard> shards(1);
  int64_t bytes = 0;
  for (const LayoutEntry& e : layout.flat().entries()) {
    const int64_t n = e.numel * static_cast<int64_t>(DTypeSize(dtype));
    if (max_shard_bytes > 0 && bytes > 0 && bytes + n > max_shard_bytes) {
      shards.emplace_back();
      bytes = 0;
    }
    HfShard& s = shards.back();
    if (s.entries.empty()) s.flat_begin = s.flat_end = e.offset;
    s.entries.push_back(&e);
    s.flat_end = e.offset + e.numel;
    bytes += n;
  }
  return shards;
}

std::string HfShardFileName(int shard, int shards) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", shard + 1, shards);
  return name;
}

absl::StatusOr<std::string> HfShardHeader(const HfShard& shard, DType dtype) {
  std::vector<HeaderTensor> tensors;
  tensors.reserve(shard.entries.size());
  for (const LayoutEntry* e : shard.entries) tensors.push_back({e->name, dtype, e->shape});
  return EncodeSafetensorsHeader(tensors, {{"format", "pt"}, {"producer", "accel"}});
}

std::string HfShardIndexJson(const std::vector<HfShard>& shards, DType dtype) {
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  int64_t total = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string file = HfShardFileName(static_cast<int>(s), static_cast<int>(shards.size()));
    for (const LayoutEntry* e : shards[s].entries) {
      weight_map[e->name] = file;
      total += e->numel * static_cast<int64_t>(DTypeSize(dtype));
    }
  }
  nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}},
                                  {"weight_map", weight_map}};
  return index.dump(2) + "\n";
}

}  // namespace accel::checkpoint
