#include "engine/checkpoint/consolidate.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/full_model_writer.h"
#include "engine/checkpoint/step_reader.h"
#include "engine/model/model_config.h"
#include "engine/model/param_specs.h"

namespace accel::checkpoint {
namespace {

// The checkpoint's model, its config validated against the checkpoint's layout table (so the
// writer's tensors, from the layout, are the checkpoint's).
absl::StatusOr<model::ModelLayout> CheckpointLayout(const StepReader& reader) {
  const std::string path = JoinPath(reader.step_dir(), kMetadataFileName);
  const std::string& text = reader.metadata().meta.model_config_json;
  if (text.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": has no model_config, so no GPT-2 model file can be written"));
  }
  ACCEL_ASSIGN_OR_RETURN(model::ModelConfig config, model::ModelConfigFromJson(text, path));
  ACCEL_ASSIGN_OR_RETURN(model::ModelLayout layout, model::ModelLayout::Create(config));
  ACCEL_RETURN_IF_ERROR(CheckLayoutMatches(reader.metadata(), layout, path));
  return layout;
}

absl::Status StreamTensors(StepReader* reader, int64_t chunk, FullModelWriter* writer,
                           ConsolidateStats* stats) {
  std::vector<float> f32(static_cast<size_t>(chunk));
  stats->buffer_bytes = f32.size() * sizeof(float) + writer->buffer_bytes();
  for (const TensorRecord& t : reader->metadata().tensors) {
    for (int64_t done = 0; done < t.numel;) {
      const int64_t n = std::min(chunk, t.numel - done);
      const int64_t begin = t.offset + done;
      ACCEL_RETURN_IF_ERROR(reader->Read(Section::kParams, begin, begin + n, f32.data()));
      ACCEL_RETURN_IF_ERROR(writer->AppendValues(f32.data(), n));
      done += n;
    }
    stats->largest_tensor_elements = std::max(stats->largest_tensor_elements, t.numel);
    stats->tensors += 1;
    stats->params += t.numel;
  }
  return absl::OkStatus();
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
                     "\" checkpoint: its model file(s) are already the consolidated model"));
  }
  ACCEL_ASSIGN_OR_RETURN(const model::ModelLayout layout, CheckpointLayout(*reader));
  ConsolidateStats stats;
  stats.step = reader->metadata().meta.step;
  stats.world_size = reader->metadata().meta.world_size;
  // The writer deletes its .tmp files if anything below fails.
  ACCEL_ASSIGN_OR_RETURN(
      std::unique_ptr<FullModelWriter> writer,
      FullModelWriter::Create(env, out_path, &layout, options.dtype, options.max_shard_bytes));
  ACCEL_RETURN_IF_ERROR(StreamTensors(reader.get(), options.chunk_elements, writer.get(), &stats));
  ACCEL_ASSIGN_OR_RETURN(stats.files, writer->Finish(options.write_config));
  for (const ModelFileInfo& f : stats.files) {
    if (f.file != kHfIndexFileName) stats.bytes_written += f.bytes;
  }
  return stats;
}

}  // namespace accel::checkpoint
