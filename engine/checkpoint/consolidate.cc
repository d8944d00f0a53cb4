#include "engine/checkpoint/consolidate.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/step_reader.h"
#include "engine/model/model_config.h"
#include "engine/model/param_specs.h"
#include "nlohmann/json.hpp"

namespace accel::checkpoint {
namespace {

// The header SafetensorsWriter would write for these tensors, so the two paths give identical
// files.
absl::StatusOr<std::string> SafetensorsHeader(const StepMetadata& m, DType dtype) {
  std::vector<HeaderTensor> tensors;
  tensors.reserve(m.tensors.size());
  for (const TensorRecord& t : m.tensors) tensors.push_back({t.name, dtype, t.shape});
  return EncodeSafetensorsHeader(tensors, {{"format", "pt"}, {"producer", "accel"}});
}

// Validates the checkpoint's model config against its layout table.
absl::StatusOr<model::ModelConfig> ModelConfig(const StepReader& reader) {
  const std::string path = JoinPath(reader.step_dir(), kMetadataFileName);
  const std::string& text = reader.metadata().meta.model_config_json;
  if (text.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": has no model_config, so no GPT-2 model file can be written"));
  }
  ACCEL_ASSIGN_OR_RETURN(model::ModelConfig config, model::ModelConfigFromJson(text, path));
  ACCEL_ASSIGN_OR_RETURN(model::ModelLayout layout, model::ModelLayout::Create(config));
  ACCEL_RETURN_IF_ERROR(CheckLayoutMatches(reader.metadata(), layout, path));
  return config;
}

absl::Status StreamTensors(StepReader* reader, DType dtype, int64_t chunk, WritableFile* file,
                           ConsolidateStats* stats) {
  std::vector<float> f32(static_cast<size_t>(chunk));
  std::vector<char> converted(dtype == DType::kF32 ? 0 : chunk * DTypeSize(dtype));
  stats->buffer_bytes = f32.size() * sizeof(float) + converted.size();
  for (const TensorRecord& t : reader->metadata().tensors) {
    for (int64_t done = 0; done < t.numel;) {
      const int64_t n = std::min(chunk, t.numel - done);
      const int64_t begin = t.offset + done;
      ACCEL_RETURN_IF_ERROR(reader->Read(Section::kParams, begin, begin + n, f32.data()));
      if (dtype == DType::kF32) {
        ACCEL_RETURN_IF_ERROR(file->Append(
            std::string_view(reinterpret_cast<const char*>(f32.data()), n * sizeof(float))));
      } else {
        ConvertDType(f32.data(), DType::kF32, converted.data(), dtype, static_cast<size_t>(n));
        ACCEL_RETURN_IF_ERROR(
            file->Append(std::string_view(converted.data(), n * DTypeSize(dtype))));
      }
      stats->bytes_written += n * DTypeSize(dtype);
      done += n;
    }
    stats->largest_tensor_elements = std::max(stats->largest_tensor_elements, t.numel);
    stats->tensors += 1;
    stats->params += t.numel;
  }
  ACCEL_RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

}  // namespace

absl::StatusOr<ConsolidateStats> ConsolidateToSafetensors(Env* env, const std::string& step_dir,
                                                          const std::string& out_path,
                                                          const ConsolidateOptions& options) {
  if (options.chunk_elements < 1) {
    return absl::InvalidArgumentError("consolidate: chunk_elements must be >= 1");
  }
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<StepReader> reader, StepReader::Open(env, step_dir));
  if (!KindHasRankFiles(reader->metadata().meta.kind)) {
    return absl::FailedPreconditionError(
        absl::StrCat(step_dir, " is a \"", reader->metadata().meta.kind,
                     "\" checkpoint: its ", kModelFileName, " is already the consolidated model"));
  }
  ACCEL_ASSIGN_OR_RETURN(model::ModelConfig config, ModelConfig(*reader));
  ConsolidateStats stats;
  stats.step = reader->metadata().meta.step;
  stats.world_size = reader->metadata().meta.world_size;

  ACCEL_ASSIGN_OR_RETURN(const std::string header,
                         SafetensorsHeader(reader->metadata(), options.dtype));
  const std::string tmp = out_path + ".tmp";
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env->NewWritableFile(tmp));
  absl::Status s = file->Append(header);
  if (s.ok())
    s = StreamTensors(reader.get(), options.dtype, options.chunk_elements, file.get(), &stats);
  file.reset();
  if (s.ok()) s = env->RenameFile(tmp, out_path);
  if (!s.ok()) {
    env->DeleteFile(tmp).IgnoreError();  // best effort: the first error is the one to report
    return s;
  }
  stats.bytes_written += header.size();
  ACCEL_RETURN_IF_ERROR(env->SyncDir(DirName(out_path)));
  if (options.write_config) {
    ACCEL_RETURN_IF_ERROR(WriteFileAtomic(env, JoinPath(DirName(out_path), "config.json"),
                                          model::ModelConfigToJson(config)));
  }
  return stats;
}

}  // namespace accel::checkpoint
