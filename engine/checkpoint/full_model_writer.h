// FullModelWriter: streams a whole model into Hugging Face model files while the values arrive
// unit by unit (FULL_STATE_DICT and zero3_save_16bit_model saves, SaveWeights) or in any pieces
// in layout order (consolidation), so the writer never holds more than one conversion chunk.
//
// The files are byte for byte what SaveHfWeights (hf_weights.h) writes for the same parameters,
// dtype and max_shard_bytes: the layout table's Hugging Face names and orientations, layout
// order, metadata {"format": "pt", "producer": "accel"}. With max_shard_bytes <= 0 (the default)
// or a model whose data fits, that is one file at `path`; otherwise the sharded form of
// hf_shards.h in path's directory (model-0000k-of-0000n.safetensors and
// model.safetensors.index.json; nothing is written at `path` itself). Every shard's header is
// computed up front from the layout, so the data is appended as it comes and cut into the shard
// files at tensor boundaries — a unit may straddle two files.
//
// Crash safety: each file goes to NAME.tmp; Finish() fsyncs and renames every one to NAME,
// fsyncs the directory, then writes the index (sharded form) and config.json beside them
// (WriteFileAtomic). A writer destroyed before Finish() succeeded deletes its .tmp files (best
// effort), so a final name only ever holds a complete file.
// Errors: InvalidArgument for units out of order, values past the end or a bad dtype; the Env's
// error otherwise, annotated with the path. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/checkpoint/hf_shards.h"
#include "engine/model/param_specs.h"
#include "engine/tensor/dtype.h"

namespace accel::checkpoint {

// What a finished model file is: recorded in a checkpoint's metadata.json (model_files).
struct ModelFileInfo {
  std::string file;  // name inside its directory ("model.safetensors")
  DType dtype = DType::kF32;  // the weights' dtype (for the index: of the weights it maps)
  uint64_t bytes = 0;   // the whole file
  uint32_t crc32c = 0;  // over the whole file
};

// The bytes of the safetensors file(s) FullModelWriter writes for `layout` in `dtype` (headers +
// data, not the index), known before anything is gathered: every rank can compute what rank 0
// will write.
[[nodiscard]] absl::StatusOr<uint64_t> FullModelFileBytes(const model::ModelLayout& layout,
                                                          DType dtype,
                                                          int64_t max_shard_bytes = 0);

class FullModelWriter {
 public:
  // Opens the first file's .tmp and writes its header. `layout` must outlive the writer.
  // max_shard_bytes: see above (0 = one file).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<FullModelWriter>> Create(
      Env* env, const std::string& path, const model::ModelLayout* layout, DType dtype,
      int64_t max_shard_bytes = 0);
  ~FullModelWriter();
  FullModelWriter(const FullModelWriter&) = delete;
  FullModelWriter& operator=(const FullModelWriter&) = delete;

  // Appends unit u's fp32 values (layout.unit(u).numel floats), converted to the file dtype
  // (round to nearest even). Units must come in order 0, 1, ...; InvalidArgument otherwise.
  [[nodiscard]] absl::Status AppendUnit(int u, const float* values);
  // Appends the next n fp32 values in layout order (any piece size). InvalidArgument past the
  // end of the model.
  [[nodiscard]] absl::Status AppendValues(const float* values, int64_t n);
  // After the last value: fsync and rename every file, fsync the directory, write the index
  // (sharded form) and, when write_config, config.json. FailedPrecondition if values are
  // missing. Returns the files written in order: the safetensors file(s), then the index.
  [[nodiscard]] absl::StatusOr<std::vector<ModelFileInfo>> Finish(bool write_config = true);

  const std::string& path() const { return path_; }
  size_t buffer_bytes() const { return converted_.size(); }

 private:
  FullModelWriter(Env* env, std::string path, const model::ModelLayout* layout, DType dtype)
      : env_(env), path_(std::move(path)), layout_(layout), dtype_(dtype) {}
  // The final path of shard s.
  std::string ShardPath(int s) const;
  // Opens shard s's .tmp and writes its header.
  [[nodiscard]] absl::Status OpenShard(int s);
  // Completes the current shard (fsync, close) and opens the next while the current is full.
  [[nodiscard]] absl::Status AdvanceFullShards();
  [[nodiscard]] absl::Status Append(const void* data, size_t n);
  void DeleteTmpFiles();

  Env* env_;
  std::string path_;
  const model::ModelLayout* layout_;
  DType dtype_;
  std::vector<HfShard> shards_;
  std::vector<ModelFileInfo> infos_;  // per shard opened so far: name, bytes, crc
  int current_ = -1;                  // the shard being written
  std::unique_ptr<WritableFile> file_;
  std::vector<char> converted_;  // one chunk in the file dtype
  int64_t pos_ = 0;              // flat elements appended
  int next_unit_ = 0;            // the unit starting at or containing pos_
  bool finished_ = false;
};

}  // namespace accel::checkpoint
