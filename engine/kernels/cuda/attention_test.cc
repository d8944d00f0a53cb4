// Causal attention, GPT-2 and grouped-query (cuBLAS batched products + softmax kernels), against
// kernels::ref.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/kernels/gqa_attention.h"
#include "engine/kernels/cuda/kernels.h"
#include "engine/kernels/cuda/test_util.h"
#include "engine/testing/matchers.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::kernels::cuda {
namespace {

using ::accel::cuda::testing::DeviceArray;
using ::accel::cuda::testing::DeviceOk;
using ::accel::testing::AllCloseToScale;
using ::accel::testing::TestRng;

struct Shape {
  int64_t B, T, H, KV, D;
  int64_t window = 0;  // sliding window, 0 for none
};

// The device kernels against kernels::ref::GqaAttention* (GPT-2's oracle is the same with
// KV = H). gpt2: through AttentionForward/Backward (C = H·D, NH = H), for shapes with KV == H.
void ExpectMatchesRef(Blas& blas, const Shape& s, bool gpt2) {
  SCOPED_TRACE(::testing::Message() << (gpt2 ? "GPT-2" : "GQA") << " B=" << s.B << " T=" << s.T
                                    << " H=" << s.H << " KV=" << s.KV << " D=" << s.D
                                    << " window=" << s.window);
  TestRng rng(3500 + s.B * 31 + s.T * 7 + s.H * 5 + s.KV);
  const int64_t n_qkv = s.B * s.T * (s.H + 2 * s.KV) * s.D, n_out = s.B * s.T * s.H * s.D;
  const int64_t n_att = s.B * s.H * s.T * s.T, C = s.H * s.D;
  const std::vector<float> qkv = rng.NormalVector(n_qkv, 0.0f, 2.0f);
  std::vector<float> out(n_out), att(n_att);
  ref::GqaAttentionForward(out.data(), att.data(), qkv.data(), s.B, s.T, s.H, s.KV, s.D,
                           s.window);
  // att starts as garbage on the device: every entry must be written, zeros above the diagonal.
  DeviceArray<float> d_qkv(qkv), d_out(n_out), d_att(std::vector<float>(n_att, -7.0f));
  ASSERT_TRUE((gpt2 ? AttentionForward(blas, d_out.get(), d_att.get(), d_qkv.get(), s.B, s.T, C,
                                       s.H, nullptr)
                    : GqaAttentionForward(blas, d_out.get(), d_att.get(), d_qkv.get(), s.B, s.T,
                                          s.H, s.KV, s.D, nullptr, s.window))
                  .ok());
  ASSERT_TRUE(DeviceOk());
  EXPECT_TRUE(AllCloseToScale(d_out.Download(), out, 1e-5));
  EXPECT_TRUE(AllCloseToScale(d_att.Download(), att, 1e-5));

  const std::vector<float> dout = rng.NormalVector(n_out);
  std::vector<float> dqkv = rng.NormalVector(n_qkv);  // += is checked, not just =
  DeviceArray<float> d_dout(dout), d_dqkv(dqkv), d_scratch(s.H * s.T * s.T);
  ASSERT_TRUE((gpt2 ? AttentionBackward(blas, d_dqkv.get(), d_scratch.get(), d_dout.get(),
                                        d_qkv.get(), d_att.get(), s.B, s.T, C, s.H, nullptr)
                    : GqaAttentionBackward(blas, d_dqkv.get(), d_scratch.get(), d_dout.get(),
                                           d_qkv.get(), d_att.get(), s.B, s.T, s.H, s.KV, s.D,
                                           nullptr))
                  .ok());
  ref::GqaAttentionBackward(dqkv.data(), dout.data(), qkv.data(), att.data(), s.B, s.T, s.H, s.KV,
                            s.D);
  ASSERT_TRUE(DeviceOk());
  EXPECT_TRUE(AllCloseToScale(d_dqkv.Download(), dqkv, 1e-5));
}

TEST(CudaAttentionTest, ForwardAndBackwardMatchRef) {
  ACCEL_SKIP_WITHOUT_GPU();
  absl::StatusOr<std::unique_ptr<Blas>> blas = Blas::Create();
  ASSERT_TRUE(blas.ok()) << blas.status();
  // T = 70 spans three warps' worth of a row; NH = 5 with HS = 12 is not a power of two.
  for (const Shape& s : {Shape{1, 1, 1, 1, 4}, Shape{2, 5, 3, 3, 4}, Shape{3, 17, 4, 4, 16},
                         Shape{1, 70, 5, 5, 12}, Shape{2, 64, 2, 2, 48}}) {
    ExpectMatchesRef(**blas, s, /*gpt2=*/true);
  }
  EXPECT_EQ(AttentionForward(**blas, nullptr, nullptr, nullptr, 1, 4, 10, 3, nullptr).code(),
            absl::StatusCode::kInvalidArgument);  // C not a multiple of NH
}

TEST(CudaAttentionTest, GqaForwardAndBackwardMatchRef) {
  ACCEL_SKIP_WITHOUT_GPU();
  absl::StatusOr<std::unique_ptr<Blas>> blas = Blas::Create();
  ASSERT_TRUE(blas.ok()) << blas.status();
  // KV == H (one product per sequence), KV == 1 (every query head on one kv head), H / KV = 3
  // with D = 20 and T = 70 (three warps' worth of a row), H / KV = 2 with odd D.
  for (const Shape& s : {Shape{1, 1, 1, 1, 4}, Shape{2, 5, 3, 3, 4}, Shape{2, 17, 4, 1, 16},
                         Shape{1, 70, 9, 3, 20}, Shape{3, 33, 6, 3, 8}, Shape{2, 64, 4, 2, 7}}) {
    ExpectMatchesRef(**blas, s, /*gpt2=*/false);
  }
  // Sliding windows: of one key, shorter than T (also across warps at T = 70), and not binding.
  for (const Shape& s : {Shape{2, 17, 4, 2, 8, 1}, Shape{2, 17, 4, 2, 8, 5},
                         Shape{1, 70, 9, 3, 20, 40}, Shape{2, 9, 4, 4, 8, 9}}) {
    ExpectMatchesRef(**blas, s, /*gpt2=*/false);
  }
  EXPECT_EQ(GqaAttentionForward(**blas, nullptr, nullptr, nullptr, 1, 4, 4, 2, 4, nullptr, -1)
                .code(),
            absl::StatusCode::kInvalidArgument);
  // H not a multiple of KV; no kv heads.
  EXPECT_EQ(GqaAttentionForward(**blas, nullptr, nullptr, nullptr, 1, 4, 8, 3, 4, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GqaAttentionBackward(**blas, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 4, 8, 0,
                                 4, nullptr)
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace accel::kernels::cuda
