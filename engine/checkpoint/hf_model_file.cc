#include "engine/checkpoint/hf_model_file.h"

#include <algorithm>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/hf_shards.h"
#include "engine/model/registry.h"
#include "nlohmann/json.hpp"

namespace accel::checkpoint {
namespace {

constexpr char kSingleName[] = "model.safetensors";

// The name without the family's optional prefix ("transformer." for GPT-2).
std::string_view Bare(const model::HfTensorNames& hf, std::string_view name) {
  if (!hf.prefix.empty() && name.starts_with(hf.prefix)) name.remove_prefix(hf.prefix.size());
  return name;
}

// The names a file may give the table's tensor `name`.
std::vector<std::string> Candidates(const model::HfTensorNames& hf, const std::string& name) {
  if (hf.prefix.empty()) return {name};
  return {name, absl::StrCat(hf.prefix, name)};
}

// The table tensor a tied lm_head.weight in the file must match, or empty when untied.
std::string TiedHeadOf(const model::ModelConfig& config) {
  if (!config.tied_embeddings()) return "";
  return config.architecture().hf.embedding;
}

}  // namespace

absl::StatusOr<std::string> ResolveHfWeightsPath(Env* env, const std::string& path) {
  if (absl::EndsWith(path, ".safetensors") || absl::EndsWith(path, ".json")) return path;
  for (const char* name : {kHfIndexFileName, kSingleName}) {
    if (env->FileExists(JoinPath(path, name))) return JoinPath(path, name);
  }
  if (env->FileExists(path)) return path;  // a safetensors file by another name
  return absl::NotFoundError(absl::StrCat(path, ": neither a weights file nor a directory with ",
                                          kHfIndexFileName, " or ", kSingleName));
}

absl::StatusOr<std::unique_ptr<HfModelFile>> HfModelFile::Open(Env* env, const std::string& path,
                                                               const model::ModelLayout* layout) {
  ACCEL_ASSIGN_OR_RETURN(const std::string resolved, ResolveHfWeightsPath(env, path));
  std::unique_ptr<HfModelFile> f(new HfModelFile(layout));
  if (absl::EndsWith(resolved, ".json")) {
    ACCEL_RETURN_IF_ERROR(f->OpenIndex(env, resolved));
  } else {
    ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsReader> reader,
                           SafetensorsReader::Open(env, resolved));
    f->shards_.push_back(std::move(reader));
  }
  ACCEL_RETURN_IF_ERROR(f->Validate());
  return f;
}

absl::StatusOr<HfIndex> ReadHfIndex(Env* env, const std::string& index_path) {
  ACCEL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(env, index_path));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") ||
      !j["weight_map"].is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(index_path, ": not a safetensors index (a JSON object with weight_map)"));
  }
  HfIndex index;
  absl::flat_hash_map<std::string, int> shard_of_file;
  for (const auto& [tensor, file] : j["weight_map"].items()) {
    if (!file.is_string() || file.get<std::string>().empty() ||
        absl::StrContains(file.get<std::string>(), "/")) {
      return absl::InvalidArgumentError(
          absl::StrCat(index_path, ": weight_map[", tensor, "] must name a file beside the index"));
    }
    const std::string path = JoinPath(DirName(index_path), file.get<std::string>());
    auto [it, inserted] = shard_of_file.emplace(path, static_cast<int>(index.shards.size()));
    if (inserted) index.shards.push_back(path);
    index.weight_map.emplace_back(tensor, it->second);
  }
  if (index.shards.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(index_path, ": weight_map is empty"));
  }
  return index;
}

absl::StatusOr<std::vector<std::string>> HfWeightsFiles(Env* env, const std::string& path) {
  ACCEL_ASSIGN_OR_RETURN(const std::string resolved, ResolveHfWeightsPath(env, path));
  if (!absl::EndsWith(resolved, ".json")) return std::vector<std::string>{resolved};
  ACCEL_ASSIGN_OR_RETURN(HfIndex index, ReadHfIndex(env, resolved));
  std::vector<std::string> files = {resolved};
  files.insert(files.end(), index.shards.begin(), index.shards.end());
  return files;
}

absl::Status HfModelFile::OpenIndex(Env* env, const std::string& index_path) {
  ACCEL_ASSIGN_OR_RETURN(const HfIndex index, ReadHfIndex(env, index_path));
  index_path_ = index_path;
  // Each shard file opens once, in the order the index first names it.
  for (const std::string& shard : index.shards) {
    ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsReader> reader,
                           SafetensorsReader::Open(env, shard));
    shards_.push_back(std::move(reader));
  }
  // The index is the loader's map: an entry whose shard lacks the tensor would otherwise pass
  // unnoticed when the tensor is not a parameter, or blame the wrong file when it is.
  for (const auto& [tensor, s] : index.weight_map) {
    if (shards_[s]->Find(tensor) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(index_path, ": weight_map names tensor ",
                                                     tensor, " in ", shards_[s]->path(),
                                                     ", which does not hold it"));
    }
  }
  return absl::OkStatus();
}

absl::Status HfModelFile::Validate() {
  const model::ModelConfig& config = layout_->config();
  // How the model's family names its tensors in Hugging Face files (its registry entry).
  const model::HfTensorNames& hf = config.architecture().hf;
  // Every tensor of every shard, by name; a name in two shards is ambiguous.
  absl::flat_hash_map<std::string, int> shard_of;
  for (int s = 0; s < num_shards(); ++s) {
    for (const TensorInfo& t : shards_[s]->tensors()) {
      auto [it, inserted] = shard_of.emplace(t.name, s);
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat(
            shards_[s]->path(), ": tensor ", t.name, " is also in ", shards_[it->second]->path()));
      }
    }
  }
  absl::flat_hash_set<std::string> used;
  for (const LayoutEntry& e : layout_->flat().entries()) {
    Source source{-1, ""};
    for (std::string& name : Candidates(hf, e.name)) {
      if (auto it = shard_of.find(name); it != shard_of.end()) {
        source = {it->second, std::move(name)};
        break;
      }
    }
    if (source.shard < 0) {
      // With an index no shard is to blame: the index lists none for it.
      const std::string& where = index_path_.empty() ? shards_[0]->path() : index_path_;
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": tensor ", e.name, " is missing",
                       index_path_.empty() ? "" : " (no shard the index names holds it)",
                       " (model ", config.name(), ")"));
    }
    const SafetensorsReader& reader = *shards_[source.shard];
    ACCEL_RETURN_IF_ERROR(reader.ExpectShape(source.name, e.shape));
    const TensorInfo* info = reader.Find(source.name);
    if (!info->dtype.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(reader.path(), ": tensor ", source.name,
                                                     " has dtype ", info->dtype_name,
                                                     "; only F32, BF16 and F16 can be loaded"));
    }
    used.insert(source.name);
    sources_.push_back(std::move(source));
  }
  const std::string tied = TiedHeadOf(config);
  for (const auto& [name, s] : shard_of) {
    const std::string_view bare = Bare(hf, name);
    if (used.contains(name) || hf.is_buffer(bare)) continue;
    if (bare == "lm_head.weight" && !tied.empty()) {
      ACCEL_RETURN_IF_ERROR(shards_[s]->ExpectShape(name, layout_->flat().Find(tied)->shape));
      continue;
    }
    return absl::InvalidArgumentError(absl::StrCat(shards_[s]->path(), ": unexpected tensor ",
                                                   name, " (not a ", config.model_type(),
                                                   " parameter of model ", config.name(), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<HfModelFile::Piece>> HfModelFile::Map(int64_t flat_begin,
                                                                 int64_t flat_end) const {
  if (flat_begin < 0 || flat_end < flat_begin || flat_end > layout_->num_params()) {
    return absl::InvalidArgumentError(
        absl::StrCat(shards_[0]->path(), ": flat range [", flat_begin, ", ", flat_end,
                     ") is outside the model's ", layout_->num_params(), " parameters"));
  }
  const std::vector<LayoutEntry>& entries = layout_->flat().entries();
  // The first tensor that ends after flat_begin; entries are back to back in offset order.
  auto it = std::upper_bound(entries.begin(), entries.end(), flat_begin,
                             [](int64_t v, const LayoutEntry& e) { return v < e.offset + e.numel; });
  std::vector<Piece> pieces;
  for (int64_t at = flat_begin; at < flat_end; ++it) {
    const int64_t end = std::min(flat_end, it->offset + it->numel);
    if (end <= at) continue;  // a 0-element tensor
    const Source& source = sources_[it - entries.begin()];
    pieces.push_back({source.shard, source.name, at - it->offset, end - at, at - flat_begin});
    at = end;
  }
  return pieces;
}

absl::Status HfModelFile::ReadFlat(int64_t flat_begin, int64_t flat_end, float* dst) const {
  ACCEL_ASSIGN_OR_RETURN(std::vector<Piece> pieces, Map(flat_begin, flat_end));
  for (const Piece& p : pieces) {
    ACCEL_RETURN_IF_ERROR(
        shards_[p.shard]->ReadRange(p.file_name, p.elem_begin, p.count, dst + p.dst_offset));
  }
  return absl::OkStatus();
}

}  // namespace accel::checkpoint
