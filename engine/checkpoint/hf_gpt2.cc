#include "engine/checkpoint/hf_gpt2.h"

#include <memory>

#include "engine/base/status_macros.h"
#include "engine/checkpoint/hf_gpt2_ranges.h"
#include "engine/checkpoint/safetensors.h"

namespace accel::checkpoint {

absl::Status LoadHfGpt2Weights(Env* env, const std::string& path, const model::Gpt2Layout& layout,
                               float* params) {
  // One validation and one name mapping for whole-model and ranged loads (hf_gpt2_ranges.h).
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<HfGpt2File> file, HfGpt2File::Open(env, path, &layout));
  return file->ReadFlat(0, layout.num_params(), params);
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
