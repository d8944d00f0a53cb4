// FullModelWriter: streams a whole GPT-2 model into one Hugging Face model.safetensors while the
// values arrive unit by unit (FULL_STATE_DICT and zero3_save_16bit_model saves, SaveWeights), so
// the writer never holds more than one unit's conversion buffer.
//
// The file is byte for byte what SaveHfWeights (hf_weights.h) and ConsolidateToSafetensors
// (consolidate.h) write for the same parameters and dtype: GPT2Model names from the layout
// table, Conv1D orientation as the layout stores it (no transposes), lm_head.weight omitted (it is
// tied to wte.weight), metadata {"format": "pt", "producer": "accel"}. The header is computed up
// front from the layout, so the data block is appended as it comes: the flat layout is unit by
// unit and tensor by tensor in file order, so units 0, 1, ..., n-1 concatenated are the data
// block.
//
// Crash safety: the data goes to PATH.tmp; Finish() fsyncs it, renames it to PATH, fsyncs the
// directory and then writes config.json beside it (WriteFileAtomic). A writer destroyed before
// Finish() succeeded deletes PATH.tmp (best effort), so PATH is only ever a complete file.
// Errors: InvalidArgument for units out of order or a bad dtype; the Env's error otherwise,
// annotated with the path. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/model/param_specs.h"
#include "engine/tensor/dtype.h"

namespace accel::checkpoint {

// What a finished model file is: recorded in a checkpoint's metadata.json (model_files).
struct ModelFileInfo {
  std::string file;  // name inside its directory ("model.safetensors")
  DType dtype = DType::kF32;
  uint64_t bytes = 0;   // the whole safetensors file
  uint32_t crc32c = 0;  // over the whole file
};

// The size of the file FullModelWriter writes for `layout` in `dtype` (header + data), known
// before anything is gathered: every rank can compute what rank 0 will write.
[[nodiscard]] absl::StatusOr<uint64_t> FullModelFileBytes(const model::ModelLayout& layout,
                                                          DType dtype);

class FullModelWriter {
 public:
  // Opens PATH.tmp and writes the header. `layout` must outlive the writer.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<FullModelWriter>> Create(
      Env* env, const std::string& path, const model::ModelLayout* layout, DType dtype);
  ~FullModelWriter();
  FullModelWriter(const FullModelWriter&) = delete;
  FullModelWriter& operator=(const FullModelWriter&) = delete;

  // Appends unit u's fp32 values (layout.unit(u).numel floats), converted to the file dtype
  // (round to nearest even). Units must come in order 0, 1, ...; InvalidArgument otherwise.
  [[nodiscard]] absl::Status AppendUnit(int u, const float* values);
  // After the last unit: fsync, rename PATH.tmp -> PATH, fsync the directory, and (when
  // write_config) config.json beside PATH. FailedPrecondition if units are missing.
  [[nodiscard]] absl::StatusOr<ModelFileInfo> Finish(bool write_config = true);

  const std::string& path() const { return path_; }

 private:
  FullModelWriter(Env* env, std::string path, const model::ModelLayout* layout, DType dtype)
      : env_(env), path_(std::move(path)), layout_(layout), dtype_(dtype) {}
  [[nodiscard]] absl::Status Append(const void* data, size_t n);

  Env* env_;
  std::string path_;
  const model::ModelLayout* layout_;
  DType dtype_;
  std::unique_ptr<WritableFile> file_;
  std::vector<char> converted_;  // one chunk in the file dtype
  int next_unit_ = 0;
  uint64_t bytes_ = 0;
  uint32_t crc_ = 0;
  bool finished_ = false;
};

}  // namespace accel::checkpoint
