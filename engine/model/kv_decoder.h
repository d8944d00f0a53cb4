// KvDecoder: inference of one sequence (batch 1) with a key/value cache, for generation
// (engine/generate). Each architecture's registry entry makes one (Architecture::decoder).
//
// Step(tokens, n) runs positions [position(), position() + n) in one forward — the prompt is one
// call over all its positions — appending every layer's keys and values for them to the cache,
// and writes the logits of the last of them. A later Step then costs only its own positions:
// attention reads the cached keys and values instead of recomputing the prefix. The logits equal
// those of the training model's full forward over the same prefix (kv_decoder_test.cc) up to the
// summation order of the kernels.
//
// Precision: fp32, or bf16 (DecoderOptions::bf16): the matmul weights are rounded to bf16 once
// at construction and every matmul runs bf16 × bf16 with fp32 accumulation (kernels/matmul_bf16.h),
// as the training forward does under bf16 mixed precision; norms, attention, softmax and the
// residual stream stay fp32.
//
// Memory: the cache holds 2 · layers · capacity · kv_heads · head_dim floats; activations are
// sized for the longest Step so far. The parameters are the caller's and must outlive the decoder.
// Thread safety: one caller at a time; kernels use the OpenMP pool.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/model/param_specs.h"

namespace accel::model {

struct DecoderOptions {
  // The cache's capacity in positions: at most the model's max_positions (0: max_positions).
  int64_t capacity = 0;
  bool bf16 = false;
};

class KvDecoder {
 public:
  virtual ~KvDecoder() = default;
  // Appends tokens[0, n) at the next n positions and writes the last one's logits (vocab_size
  // floats). InvalidArgument when n < 1, a token is outside [0, vocab), or the cache would pass
  // its capacity (naming the position and the capacity); the cache is unchanged then.
  [[nodiscard]] virtual absl::Status Step(const int32_t* tokens, int64_t n, float* logits) = 0;
  // Forgets every cached position.
  void Reset() { position_ = 0; }
  int64_t position() const { return position_; }
  int64_t capacity() const { return capacity_; }

 protected:
  KvDecoder(int64_t capacity) : capacity_(capacity) {}
  // The shared door of Step: n, the tokens and the capacity.
  [[nodiscard]] absl::Status CheckStep(const int32_t* tokens, int64_t n, int64_t vocab) const;
  int64_t position_ = 0;
  int64_t capacity_ = 0;
};

// The capacity `options` asks for, checked against the model's positions.
[[nodiscard]] absl::StatusOr<int64_t> DecoderCapacity(const ModelConfig& config,
                                                       const DecoderOptions& options);

// Causal attention of n new queries at positions [pos, pos + n) over a cache holding positions
// [0, pos + n): q (n, ldq) with H heads of D at the start of each row; k_cache, v_cache
// (>= pos + n, KV · D); query head h reads kv head h / (H / KV). out (n, H · D). Scale 1/sqrt(D).
// OpenMP over (query, head); softmax in fp32 with the row maximum subtracted.
void CachedAttention(float* out, const float* q, int64_t ldq, const float* k_cache,
                     const float* v_cache, int64_t pos, int64_t n, int64_t H, int64_t KV,
                     int64_t D);

// A 64-byte aligned array of n elements (the decoders' caches and bf16 weights).
template <typename T>
struct AlignedArray {
  explicit AlignedArray(int64_t n = 0);
  T* data() { return static_cast<T*>(p_.get()); }
  const T* data() const { return static_cast<const T*>(p_.get()); }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> p_;
};
extern template struct AlignedArray<float>;
extern template struct AlignedArray<uint16_t>;

// The weights a decoder reads: the caller's fp32 parameters and, for bf16, their bf16 copy
// (made once, same offsets).
struct DecoderWeights {
  DecoderWeights(const ModelLayout* layout, const float* params, bool bf16);
  const float* f32;
  const uint16_t* bf16() const { return bf16_ ? bf16_copy_.data() : nullptr; }

 private:
  bool bf16_;
  AlignedArray<uint16_t> bf16_copy_;
};

// out (n, OC) = inp (n, IC) · op(W) + b (b may be null), W at offset w of the weights: stored
// (IC, OC) when `conv1d` (GPT-2), else (OC, IC) (nn.Linear). In bf16 when the weights have a bf16
// copy, rounding inp into inp16 (n · IC elements) first.
void DecoderLinear(float* out, const float* inp, const DecoderWeights& weights, int64_t w,
                   const float* b, int64_t n, int64_t IC, int64_t OC, bool conv1d,
                   uint16_t* inp16);

// Growable fp32 scratch of the decoders: rows of a fixed width, 64-byte aligned.
class DecoderScratch {
 public:
  // A buffer of at least `bytes` bytes for slot `slot` (grown, never shrunk; contents are not
  // kept when it grows).
  void* Get(int slot, int64_t bytes);
  float* F32(int slot, int64_t n) { return static_cast<float*>(Get(slot, n * 4)); }
  uint16_t* Bf16(int slot, int64_t n) { return static_cast<uint16_t*>(Get(slot, n * 2)); }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::vector<std::pair<std::unique_ptr<void, Free>, int64_t>> slots_;
};


}  // namespace accel::model
