// Reading and writing the safetensors format (Hugging Face's tensor file format).
//
// Layout (https://github.com/huggingface/safetensors):
//   [0, 8)        N: little-endian uint64, the length of the header
//   [8, 8+N)      UTF-8 JSON object: {"name": {"dtype": "F32", "shape": [2, 3],
//                 "data_offsets": [begin, end]}, ..., "__metadata__": {"k": "v", ...}}
//                 (may be padded with trailing spaces)
//   [8+N, EOF)    the data block; offsets are relative to its start; tensors are raw
//                 little-endian, C order.
//
// Error codes: NotFound for a missing file or tensor; DataLoss for a file that is truncated or
// inconsistent (bad header length, invalid JSON, offsets out of range, size mismatch, overlap);
// InvalidArgument for a dtype this reader does not know, for reading a non-float tensor as
// float, and for a caller's bad request (wrong buffer size, element range out of range, shape
// mismatch). Every message names the file, and the tensor and byte offset where relevant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/tensor/dtype.h"
#include "engine/tensor/flat_layout.h"

namespace accel::checkpoint {

struct TensorInfo {
  std::string name;
  // safetensors' spelling: "F32", "BF16", "F16", "F64", "I64", "BOOL", ...
  std::string dtype_name;
  // Set for the dtypes the engine computes in (F32, BF16, F16); empty for the "other" dtypes,
  // which can be listed and read raw but not read as float.
  std::optional<DType> dtype;
  size_t item_size = 0;
  std::vector<int64_t> shape;
  int64_t numel = 0;
  uint64_t offset = 0;  // absolute byte offset of the first element in the file
  uint64_t nbytes = 0;
};


// An open safetensors file. Open reads and validates only the header; tensor data is read on
// demand. Immutable after Open, so every method is safe to call from several threads at once.
class SafetensorsReader {
 public:
  // NotFound if the file is missing, DataLoss / InvalidArgument (see above) if the header is bad.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SafetensorsReader>> Open(
      Env* env, const std::string& path);

  const std::string& path() const { return file_->Path(); }
  // Tensors in file order (by begin offset, then name).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  std::vector<std::string> names() const;
  // nullptr if there is no such tensor.
  const TensorInfo* Find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Offset of the data block (8 + header length).
  uint64_t data_begin() const { return data_begin_; }

  // Copies the tensor's bytes as stored (any dtype). dst_bytes must equal its nbytes.
  [[nodiscard]] absl::Status ReadRaw(std::string_view name, void* dst, size_t dst_bytes) const;
  // Reads a F32/BF16/F16 tensor as f32. numel must equal the tensor's element count.
  [[nodiscard]] absl::Status ReadFloat(std::string_view name, float* dst, int64_t numel) const;
  // Reads elements [elem_begin, elem_begin + elem_count) of the flattened tensor as f32,
  // touching only that byte range of the file (sharded loading reads one slice per rank).
  [[nodiscard]] absl::Status ReadRange(std::string_view name, int64_t elem_begin,
                                       int64_t elem_count, float* dst) const;
  // InvalidArgument "tensor X has shape [a, b] in FILE, expected [c, d]"; NotFound if missing.
  [[nodiscard]] absl::Status ExpectShape(std::string_view name,
                                         std::span<const int64_t> shape) const;

 private:
  explicit SafetensorsReader(std::unique_ptr<RandomAccessFile> file) : file_(std::move(file)) {}
  [[nodiscard]] absl::Status ParseHeader(std::string_view json);
  [[nodiscard]] absl::StatusOr<const TensorInfo*> Get(std::string_view name) const;

  std::unique_ptr<RandomAccessFile> file_;
  uint64_t data_begin_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
};

// Collects tensors and metadata, then writes one safetensors file. Tensors are written in
// insertion order; the header is space-padded so the data block starts 8-byte aligned.
// The writer borrows tensor data: each pointer must stay valid until Write returns.
// Not thread-safe.
// The header of a safetensors file holding `tensors` back to back in that order: the 8-byte
// length, the JSON (metadata first, when any), space-padded so the data block starts 8-byte
// aligned. InvalidArgument when a name is not UTF-8. Writers that stream their own data
// (consolidation) use it to produce the same bytes SafetensorsWriter does.
struct HeaderTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
};
[[nodiscard]] absl::StatusOr<std::string> EncodeSafetensorsHeader(
    const std::vector<HeaderTensor>& tensors, const std::map<std::string, std::string>& metadata);

class SafetensorsWriter {
 public:
  // Adds a tensor whose data is already in `dtype` (numel * DTypeSize(dtype) bytes at data;
  // data may be null for a 0-element tensor). InvalidArgument for a duplicate or empty name, the
  // reserved name "__metadata__", or a negative dimension.
  [[nodiscard]] absl::Status Add(std::string name, DType dtype, std::vector<int64_t> shape,
                                 const void* data);
  // Adds f32 data to be stored as `file_dtype` (rounded to nearest even while writing).
  [[nodiscard]] absl::Status AddConverted(std::string name, std::vector<int64_t> shape,
                                          const float* data, DType file_dtype);
  // Sets (or replaces) one "__metadata__" entry.
  void SetMetadata(std::string key, std::string value);

  // Writes crash-safely: path + ".tmp", fsync, rename, fsync of the directory. Streams the
  // tensors (memory bounded by a small conversion buffer). Leaves no .tmp file behind on error
  // when the Env can delete it.
  [[nodiscard]] absl::Status Write(Env* env, const std::string& path) const;

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string name;
    std::vector<int64_t> shape;
    int64_t numel;
    const void* data;
    DType src_dtype;
    DType file_dtype;
  };
  [[nodiscard]] absl::Status AddEntry(std::string name, std::vector<int64_t> shape,
                                      const void* data, DType src_dtype, DType file_dtype);
  [[nodiscard]] absl::StatusOr<std::string> BuildHeader() const;
  [[nodiscard]] absl::Status WriteTo(WritableFile* file, const std::string& header) const;

  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace accel::checkpoint
