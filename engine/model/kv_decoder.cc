#include "engine/model/kv_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/strings/str_cat.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/matmul_bf16.h"
#include "engine/model/model_config.h"
#include "engine/tensor/dtype.h"

namespace accel::model {

absl::Status KvDecoder::CheckStep(const int32_t* tokens, int64_t n, int64_t vocab) const {
  if (n < 1 || tokens == nullptr) {
    return absl::InvalidArgumentError("decoder: a step needs at least one token");
  }
  if (position_ + n > capacity_) {
    return absl::InvalidArgumentError(
        absl::StrCat("decoder: position ", position_ + n - 1, " is past the context of ",
                     capacity_, " positions"));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      return absl::InvalidArgumentError(absl::StrCat("decoder: token ", tokens[i], " at position ",
                                                     position_ + i,
                                                     " is outside the vocabulary [0, ", vocab,
                                                     ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> DecoderCapacity(const ModelConfig& config, const DecoderOptions& o) {
  const int64_t max = config.max_positions();
  if (o.capacity < 0 || o.capacity > max) {
    return absl::InvalidArgumentError(absl::StrCat("decoder: capacity ", o.capacity,
                                                   " is outside [1, max_positions ", max, "]"));
  }
  return o.capacity == 0 ? max : o.capacity;
}

void CachedAttention(float* out, const float* q, int64_t ldq, const float* k_cache,
                     const float* v_cache, int64_t pos, int64_t n, int64_t H, int64_t KV,
                     int64_t D) {
  const int64_t group = H / KV, ldkv = KV * D;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
#pragma omp parallel
  {
    std::vector<float> scores(pos + n);
#pragma omp for collapse(2) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t h = 0; h < H; ++h) {
        const float* qh = q + i * ldq + h * D;
        const float* k = k_cache + (h / group) * D;
        const float* v = v_cache + (h / group) * D;
        const int64_t len = pos + i + 1;  // causal: keys 0 .. pos + i
        float max = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < len; ++j) {
          const float* kj = k + j * ldkv;
          float dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += qh[d] * kj[d];
          scores[j] = dot * scale;
          max = std::max(max, scores[j]);
        }
        float sum = 0;
        for (int64_t j = 0; j < len; ++j) {
          scores[j] = std::exp(scores[j] - max);
          sum += scores[j];
        }
        const float inv = 1.0f / sum;
        float* o = out + i * H * D + h * D;
        std::fill(o, o + D, 0.0f);
        for (int64_t j = 0; j < len; ++j) {
          const float a = scores[j] * inv;
          const float* vj = v + j * ldkv;
          for (int64_t d = 0; d < D; ++d) o[d] += a * vj[d];
        }
      }
    }
  }
}

namespace {
void* AllocAligned(int64_t bytes) {
  const size_t rounded = (static_cast<size_t>(std::max<int64_t>(bytes, 1)) + 63) / 64 * 64;
  return std::aligned_alloc(64, rounded);
}
}  // namespace

void DecoderScratch::Free::operator()(void* p) const { std::free(p); }

void* DecoderScratch::Get(int slot, int64_t bytes) {
  if (static_cast<int>(slots_.size()) <= slot) slots_.resize(slot + 1);
  auto& [p, size] = slots_[slot];
  if (p == nullptr || size < bytes) {
    p.reset(AllocAligned(bytes));
    size = bytes;
  }
  return p.get();
}

template <typename T>
void AlignedArray<T>::Free::operator()(void* p) const {
  std::free(p);
}

template <typename T>
AlignedArray<T>::AlignedArray(int64_t n) : p_(AllocAligned(n * static_cast<int64_t>(sizeof(T)))) {}

template struct AlignedArray<float>;
template struct AlignedArray<uint16_t>;

}  // namespace accel::model

namespace accel::model {

namespace k = ::accel::kernels;

DecoderWeights::DecoderWeights(const ModelLayout* layout, const float* params, bool bf16)
    : f32(params), bf16_(bf16), bf16_copy_(bf16 ? layout->num_params() : 0) {
  if (bf16) FloatToBf16(params, bf16_copy_.data(), layout->num_params());
}

void DecoderLinear(float* out, const float* inp, const DecoderWeights& weights, int64_t w,
                   const float* b, int64_t n, int64_t IC, int64_t OC, bool conv1d,
                   uint16_t* inp16) {
  const uint16_t* w16 = weights.bf16();
  if (w16 == nullptr) {
    if (conv1d) {
      k::MatmulForward(out, inp, weights.f32 + w, b, n, IC, OC);
    } else {
      k::LinearForward(out, inp, weights.f32 + w, b, n, IC, OC);
    }
    return;
  }
  FloatToBf16(inp, inp16, n * IC);
  if (conv1d) {
    k::MatmulForwardBf16(out, inp16, w16 + w, b, n, IC, OC);
  } else {
    k::LinearForwardBf16(out, inp16, w16 + w, b, n, IC, OC);
  }
}

}  // namespace accel::model
