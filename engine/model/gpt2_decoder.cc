// GPT-2's KvDecoder (kv_decoder.h): Gpt2's forward (gpt2.cc) over the new positions only, the
// keys and values of earlier ones read from the cache.
#include "engine/model/decoders.h"

#include <cstring>
#include <utility>
#include <vector>

#include "engine/base/status_macros.h"
#include "engine/kernels/elementwise.h"
#include "engine/kernels/embedding.h"
#include "engine/kernels/layernorm.h"
#include "engine/model/gpt2_specs.h"
#include "engine/model/lm_head.h"

namespace accel::model {
namespace {

namespace k = ::accel::kernels;

class Gpt2Decoder final : public KvDecoder {
 public:
  Gpt2Decoder(const ModelLayout* layout, const float* params, int64_t capacity, bool bf16)
      : KvDecoder(capacity),
        layout_(layout),
        c_(*layout->config().As<Gpt2Config>()),
        o_(Gpt2OffsetsOf(*layout)),
        w_(layout, params, bf16) {
    for (int64_t l = 0; l < c_.n_layer; ++l) {
      k_.emplace_back(capacity * c_.n_embd);
      v_.emplace_back(capacity * c_.n_embd);
    }
  }

  absl::Status Step(const int32_t* tokens, int64_t n, float* logits) override {
    const int64_t C = c_.n_embd, NH = c_.n_head, V = c_.vocab_size, p = position_;
    ACCEL_RETURN_IF_ERROR(CheckStep(tokens, n, V));
    float* x = s_.F32(0, n * C);
    float* ln = s_.F32(1, n * C);
    float* mean = s_.F32(2, n);
    float* rstd = s_.F32(3, n);
    float* qkv = s_.F32(4, n * 3 * C);
    float* atty = s_.F32(5, n * C);
    float* fch = s_.F32(6, n * 4 * C);
    float* gelu = s_.F32(7, n * 4 * C);
    float* branch = s_.F32(8, n * C);
    uint16_t* in16 = s_.Bf16(9, n * 4 * C);
    const int64_t root_at = layout_->unit(0).offset;
    const float* root = w_.f32 + root_at;
    const Gpt2RootOffsets& ro = o_.root;
    const Gpt2BlockOffsets& bo = o_.block;
    k::EmbeddingForward(x, tokens, root + ro.wte, root + ro.wpe + p * C, 1, n, C);
    for (int64_t l = 0; l < c_.n_layer; ++l) {
      const int64_t at = layout_->unit(static_cast<int>(l) + 1).offset;
      const float* b = w_.f32 + at;
      k::LayerNormForward(ln, mean, rstd, x, b + bo.ln1_w, b + bo.ln1_b, n, C);
      DecoderLinear(qkv, ln, w_, at + bo.qkv_w, b + bo.qkv_b, n, C, 3 * C, true, in16);
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(k_[l].data() + (p + i) * C, qkv + i * 3 * C + C, C * sizeof(float));
        std::memcpy(v_[l].data() + (p + i) * C, qkv + i * 3 * C + 2 * C, C * sizeof(float));
      }
      CachedAttention(atty, qkv, 3 * C, k_[l].data(), v_[l].data(), p, n, NH, NH, C / NH);
      DecoderLinear(branch, atty, w_, at + bo.attproj_w, b + bo.attproj_b, n, C, C, true, in16);
      k::ResidualForward(x, x, branch, n * C);
      k::LayerNormForward(ln, mean, rstd, x, b + bo.ln2_w, b + bo.ln2_b, n, C);
      DecoderLinear(fch, ln, w_, at + bo.fc_w, b + bo.fc_b, n, C, 4 * C, true, in16);
      k::GeluForward(gelu, fch, n * 4 * C);
      DecoderLinear(branch, gelu, w_, at + bo.fcproj_w, b + bo.fcproj_b, n, 4 * C, C, true, in16);
      k::ResidualForward(x, x, branch, n * C);
    }
    // Only the last position's logits are asked for.
    k::LayerNormForward(ln, mean, rstd, x + (n - 1) * C, root + ro.lnf_w, root + ro.lnf_b, 1, C);
    const uint16_t* w16 = w_.bf16();
    LmHeadForward(logits, ln, root + ro.wte, w16 == nullptr ? nullptr : w16 + root_at + ro.wte,
                  in16, 1, C, V);
    position_ += n;
    return absl::OkStatus();
  }

 private:
  const ModelLayout* layout_;
  const Gpt2Config& c_;
  Gpt2Offsets o_;
  DecoderWeights w_;
  std::vector<AlignedArray<float>> k_, v_;  // per layer (capacity, C)
  DecoderScratch s_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<KvDecoder>> MakeGpt2Decoder(const ModelLayout* layout,
                                                           const float* params,
                                                           const DecoderOptions& options) {
  ACCEL_ASSIGN_OR_RETURN(const int64_t capacity, DecoderCapacity(layout->config(), options));
  return std::make_unique<Gpt2Decoder>(layout, params, capacity, options.bf16);
}

}  // namespace accel::model
