// HfGpt2File: a Hugging Face GPT-2 model.safetensors opened as one flat address space in our
// layout order, so a rank can read any range of the flat layout — one unit, or only the part of a
// unit it holds (zero3_init) — touching only those bytes of the file.
//
// Names and validation are LoadHfGpt2Weights' (hf_gpt2.h): GPT2Model names with or without the
// "transformer." prefix; lm_head.weight must have wte.weight's shape and is not read (tied);
// the attention-mask buffers h.N.attn.bias / masked_bias are ignored; anything else unknown,
// missing or misshapen is InvalidArgument naming tensor and file. HF GPT-2 stores its Conv1D
// weights as [in, out], which is exactly our layout's orientation, so a flat range maps to
// contiguous element ranges of consecutive tensors with no transposes: flat [b, e) is cut at the
// tensor boundaries into (tensor, element offset, count) pieces, each one contiguous byte range
// of the file. F32, BF16 and F16 tensors are converted to f32 while reading.
//
// Reads go through Env's RandomAccessFile (pread): the file is never read whole. Immutable after
// Open; ReadFlat may be called from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/model/param_specs.h"

namespace accel::checkpoint {

class HfGpt2File {
 public:
  // Reads and validates the header against `layout` (which must outlive the object).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HfGpt2File>> Open(
      Env* env, const std::string& path, const model::Gpt2Layout* layout);

  // One contiguous piece of a flat range: elements [elem_begin, elem_begin + count) of the file
  // tensor `file_name`, landing at dst offset `dst_offset`.
  struct Piece {
    std::string file_name;
    int64_t elem_begin = 0;
    int64_t count = 0;
    int64_t dst_offset = 0;
  };
  // The pieces flat [flat_begin, flat_end) maps to, in order. InvalidArgument if the range is
  // outside [0, num_params).
  [[nodiscard]] absl::StatusOr<std::vector<Piece>> Map(int64_t flat_begin,
                                                       int64_t flat_end) const;
  // Copies flat elements [flat_begin, flat_end) into dst (flat_end - flat_begin floats).
  [[nodiscard]] absl::Status ReadFlat(int64_t flat_begin, int64_t flat_end, float* dst) const;

  const SafetensorsReader& reader() const { return *reader_; }

 private:
  HfGpt2File(std::unique_ptr<SafetensorsReader> reader, const model::Gpt2Layout* layout)
      : reader_(std::move(reader)), layout_(layout) {}
  [[nodiscard]] absl::Status Validate();

  std::unique_ptr<SafetensorsReader> reader_;
  const model::Gpt2Layout* layout_;
  std::vector<std::string> file_names_;  // per layout entry: its name in the file
};

}  // namespace accel::checkpoint
