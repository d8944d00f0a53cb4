// HfModelFile: a Hugging Face checkpoint (model.safetensors, or model.safetensors.index.json
// with the shard files it names) opened as one flat address space in our layout order, so a
// rank can read any range of the flat layout — one unit, or only the part of a unit it holds
// (zero3_init) — touching only those bytes of the files.
//
// Our parameter tables use Hugging Face's names and orientations (gpt2_specs.h, llama_specs.h),
// so a flat range maps to contiguous element ranges of consecutive tensors with no transposes:
// flat [b, e) is cut at tensor boundaries into (file, tensor, element offset, count) pieces.
// Names the file may use besides the table's, per architecture (its registry entry's
// HfTensorNames, engine/model/registry.h):
//   gpt2:  the GPT2LMHeadModel prefix "transformer."; lm_head.weight (tied, must have
//          wte.weight's shape, not read); the attention-mask buffers h.N.attn.bias/masked_bias
//          (ignored).
//   llama: lm_head.weight when tie_word_embeddings (must have embed_tokens' shape, not read);
//          the rotary buffers model.layers.N.self_attn.rotary_emb.inv_freq old files carry
//          (ignored).
// Anything else unknown, a missing tensor, a tensor in two shards, a misshapen one or a dtype
// other than F32/BF16/F16 is InvalidArgument naming tensor and file; so is an index whose
// weight_map names a tensor in a shard that does not hold it. A missing tensor is named in the
// index when there is one (no single shard is to blame). F32, BF16 and F16 are
// converted to f32 while reading.
//
// Reads go through Env's RandomAccessFile (pread): no file is read whole. Immutable after Open;
// ReadFlat may be called from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/model/param_specs.h"

namespace accel::checkpoint {

// The file the weights at `path` are in: `path` itself when it is a file, else the directory's
// model.safetensors.index.json if present, else its model.safetensors.
[[nodiscard]] absl::StatusOr<std::string> ResolveHfWeightsPath(Env* env, const std::string& path);

// A safetensors index (model.safetensors.index.json) as the loader reads it: each shard file (a
// path beside the index) once, in the order the index first names it, and the shard the index
// says holds each tensor. InvalidArgument when it is no index; messages name the index and
// never quote a value of it (acceld reads indexes for clients; docs/rpc.md).
struct HfIndex {
  std::vector<std::string> shards;
  std::vector<std::pair<std::string, int>> weight_map;  // tensor -> position in `shards`
};
[[nodiscard]] absl::StatusOr<HfIndex> ReadHfIndex(Env* env, const std::string& index_path);

// Every file the loader opens for the weights at `path` (ResolveHfWeightsPath): that file, or
// the index followed by each shard it names. For the checks at submit.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> HfWeightsFiles(Env* env,
                                                                      const std::string& path);

class HfModelFile {
 public:
  // Reads and validates the header(s) against `layout` (which must outlive the object). `path`:
  // a .safetensors file, an .index.json, or a directory holding either.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HfModelFile>> Open(
      Env* env, const std::string& path, const model::ModelLayout* layout);

  // One contiguous piece of a flat range: elements [elem_begin, elem_begin + count) of tensor
  // `file_name` in shard `shard`, landing at dst offset `dst_offset`.
  struct Piece {
    int shard = 0;
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

  int num_shards() const { return static_cast<int>(shards_.size()); }
  const SafetensorsReader& shard(int i) const { return *shards_[i]; }

 private:
  explicit HfModelFile(const model::ModelLayout* layout) : layout_(layout) {}
  [[nodiscard]] absl::Status OpenIndex(Env* env, const std::string& index_path);
  [[nodiscard]] absl::Status Validate();

  const model::ModelLayout* layout_;
  std::string index_path_;  // "" for a single file
  std::vector<std::unique_ptr<SafetensorsReader>> shards_;
  struct Source {
    int shard = 0;
    std::string name;
  };
  std::vector<Source> sources_;  // per layout entry: where it is in the files
};

}  // namespace accel::checkpoint
