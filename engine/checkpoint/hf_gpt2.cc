#include "engine/checkpoint/hf_gpt2.h"

#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/safetensors.h"

namespace accel::checkpoint {
namespace {

constexpr char kPrefix[] = "transformer.";

// The attention-mask buffers of older HF GPT-2 checkpoints: not parameters.
bool IsMaskBuffer(std::string_view name) {
  return name.starts_with("h.") &&
         (name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias"));
}

}  // namespace

absl::Status LoadHfGpt2Weights(Env* env, const std::string& path, const model::Gpt2Layout& layout,
                               float* params) {
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsReader> reader,
                         SafetensorsReader::Open(env, path));
  // Map our names to the file's (with or without the prefix).
  absl::flat_hash_set<std::string> used;
  for (const LayoutEntry& e : layout.flat().entries()) {
    std::string file_name = e.name;
    if (reader->Find(file_name) == nullptr) file_name = absl::StrCat(kPrefix, e.name);
    if (reader->Find(file_name) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": tensor ", e.name,
                                                     " is missing (model ",
                                                     layout.config().name, ")"));
    }
    ACCEL_RETURN_IF_ERROR(reader->ExpectShape(file_name, e.shape));
    ACCEL_RETURN_IF_ERROR(reader->ReadFloat(file_name, params + e.offset, e.numel));
    used.insert(file_name);
  }
  const LayoutEntry* wte = layout.flat().Find("wte.weight");
  for (const TensorInfo& t : reader->tensors()) {
    if (used.contains(t.name)) continue;
    std::string_view name = t.name;
    if (name.starts_with(kPrefix)) name.remove_prefix(sizeof(kPrefix) - 1);
    if (IsMaskBuffer(name)) continue;
    if (name == "lm_head.weight") {
      ACCEL_RETURN_IF_ERROR(reader->ExpectShape(t.name, wte->shape));
      continue;
    }
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": unexpected tensor ", t.name, " (not a GPT-2 parameter of model ",
                     layout.config().name, ")"));
  }
  return absl::OkStatus();
}

absl::Status SaveHfGpt2Weights(Env* env, const std::string& path, const model::Gpt2Layout& layout,
                               const float* params, DType dtype) {
  SafetensorsWriter writer;
  for (const LayoutEntry& e : layout.flat().entries()) {
    ACCEL_RETURN_IF_ERROR(writer.AddConverted(e.name, e.shape, params + e.offset, dtype));
  }
  writer.SetMetadata("format", "pt");
  writer.SetMetadata("producer", "accel");
  ACCEL_RETURN_IF_ERROR(writer.Write(env, path));
  return WriteFileAtomic(env, JoinPath(DirName(path), "config.json"),
                         model::Gpt2ConfigToJson(layout.config()));
}

}  // namespace accel::checkpoint
