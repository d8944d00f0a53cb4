// The Llama family's KvDecoder (kv_decoder.h): Llama's forward (llama.cc) over the new positions
// only; keys are cached after RoPE, so a cached key is never rotated again.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/kernels/elementwise.h"
#include "engine/kernels/rmsnorm.h"
#include "engine/kernels/rope.h"
#include "engine/kernels/swiglu.h"
#include "engine/model/decoders.h"
#include "engine/model/llama_specs.h"
#include "engine/model/lm_head.h"

namespace accel::model {
namespace {

namespace k = ::accel::kernels;

class LlamaDecoder final : public KvDecoder {
 public:
  LlamaDecoder(const ModelLayout* layout, const float* params, int64_t capacity, bool bf16)
      : KvDecoder(capacity),
        layout_(layout),
        c_(*layout->config().As<LlamaConfig>()),
        o_(LlamaOffsetsOf(*layout)),
        w_(layout, params, bf16) {
    for (int64_t l = 0; l < c_.num_hidden_layers; ++l) {
      k_.emplace_back(capacity * c_.kv_dim());
      v_.emplace_back(capacity * c_.kv_dim());
    }
    // The rotary tables for every position of the cache, as LlamaActivations makes them
    // (angles in double, rounded once).
    const std::vector<double> inv_freq = c_.InverseFrequencies();
    const int64_t half = c_.head_dim / 2;
    cos_.resize(capacity * half);
    sin_.resize(capacity * half);
    for (int64_t t = 0; t < capacity; ++t) {
      for (int64_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(t) * inv_freq[i];
        cos_[t * half + i] = static_cast<float>(std::cos(angle));
        sin_[t * half + i] = static_cast<float>(std::sin(angle));
      }
    }
  }

  absl::Status Step(const int32_t* tokens, int64_t n, float* logits) override {
    const int64_t C = c_.hidden_size, I = c_.intermediate_size, V = c_.vocab_size;
    const int64_t H = c_.num_attention_heads, KV = c_.num_key_value_heads, D = c_.head_dim;
    const int64_t Q = c_.q_dim(), K = c_.kv_dim(), W = Q + 2 * K, p = position_;
    const float eps = static_cast<float>(c_.rms_norm_eps);
    ACCEL_RETURN_IF_ERROR(CheckStep(tokens, n, V));
    float* x = s_.F32(0, n * C);
    float* norm = s_.F32(1, n * C);
    float* rstd = s_.F32(2, n);
    float* qkv = s_.F32(3, n * W);
    float* atty = s_.F32(4, n * Q);
    float* gate_up = s_.F32(5, n * 2 * I);
    float* swiglu = s_.F32(6, n * I);
    float* branch = s_.F32(7, n * C);
    uint16_t* in16 = s_.Bf16(8, n * std::max({C, Q, I}));
    const int64_t root_at = layout_->unit(0).offset;
    const float* root = w_.f32 + root_at;
    const LlamaRootOffsets& ro = o_.root;
    const LlamaBlockOffsets& bo = o_.block;
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(x + i * C, root + ro.embed + tokens[i] * C, C * sizeof(float));
    }
    const int64_t half = D / 2;
    for (int64_t l = 0; l < c_.num_hidden_layers; ++l) {
      const int64_t at = layout_->unit(static_cast<int>(l) + 1).offset;
      const float* b = w_.f32 + at;
      auto bias = [&](int64_t offset) { return offset >= 0 ? b + offset : nullptr; };
      k::RmsNormForward(norm, rstd, x, b + bo.input_norm, n, C, eps);
      DecoderLinear(qkv, norm, w_, at + bo.qkv_w, bias(bo.qkv_b), n, C, W, false, in16);
      // Row i is position p + i: the tables from row p on.
      k::RopeForward(qkv, cos_.data() + p * half, sin_.data() + p * half, 1, n, H, KV, D);
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(k_[l].data() + (p + i) * K, qkv + i * W + Q, K * sizeof(float));
        std::memcpy(v_[l].data() + (p + i) * K, qkv + i * W + Q + K, K * sizeof(float));
      }
      CachedAttention(atty, qkv, W, k_[l].data(), v_[l].data(), p, n, H, KV, D);
      DecoderLinear(branch, atty, w_, at + bo.o_w, bias(bo.o_b), n, Q, C, false, in16);
      k::ResidualForward(x, x, branch, n * C);
      k::RmsNormForward(norm, rstd, x, b + bo.post_norm, n, C, eps);
      DecoderLinear(gate_up, norm, w_, at + bo.gate_up_w, bias(bo.gate_up_b), n, C, 2 * I, false,
                    in16);
      k::SwiGluForward(swiglu, gate_up, n, I);
      DecoderLinear(branch, swiglu, w_, at + bo.down_w, bias(bo.down_b), n, I, C, false, in16);
      k::ResidualForward(x, x, branch, n * C);
    }
    k::RmsNormForward(norm, rstd, x + (n - 1) * C, root + ro.norm, 1, C, eps);
    const int64_t head = ro.lm_head >= 0 ? ro.lm_head : ro.embed;
    const uint16_t* w16 = w_.bf16();
    LmHeadForward(logits, norm, root + head, w16 == nullptr ? nullptr : w16 + root_at + head,
                  in16, 1, C, V);
    position_ += n;
    return absl::OkStatus();
  }

 private:
  const ModelLayout* layout_;
  const LlamaConfig& c_;
  LlamaOffsets o_;
  DecoderWeights w_;
  std::vector<AlignedArray<float>> k_, v_;  // per layer (capacity, KV · D)
  std::vector<float> cos_, sin_;           // (capacity, D / 2)
  DecoderScratch s_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<KvDecoder>> MakeLlamaDecoder(const ModelLayout* layout,
                                                            const float* params,
                                                            const DecoderOptions& options) {
  ACCEL_ASSIGN_OR_RETURN(const int64_t capacity, DecoderCapacity(layout->config(), options));
  // What this decoder does not compute yet is refused, not approximated: Qwen3's q/k norms, and
  // a sliding window that would bind within the positions generated (docs/generate.md).
  const LlamaConfig& c = *layout->config().As<LlamaConfig>();
  if (c.qk_norm()) {
    return absl::UnimplementedError(absl::StrCat(
        "generation: ", c.model_type, " models (per-head q/k RMSNorm) are not decoded yet"));
  }
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    if (const int64_t w = c.AttentionWindow(l); w > 0 && capacity > w) {
      return absl::UnimplementedError(absl::StrCat(
          "generation: layer ", l, "'s sliding window of ", w, " positions binds within the ",
          capacity, " positions asked for (prompt + --max-new-tokens); the decoder has no window "
          "yet: ask for at most ", w));
    }
  }
  return std::make_unique<LlamaDecoder>(layout, params, capacity, options.bf16);
}

}  // namespace accel::model
