// Causal attention (cuBLAS batched products + softmax kernels) against kernels::ref.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/kernels/attention.h"
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
  int64_t B, T, C, NH;
};
// T = 70 spans three warps' worth of a row; NH = 5 with HS = 12 is not a power of two.
constexpr Shape kShapes[] = {{1, 1, 4, 1}, {2, 5, 12, 3}, {3, 17, 64, 4}, {1, 70, 60, 5},
                             {2, 64, 96, 2}};

TEST(CudaAttentionTest, ForwardAndBackwardMatchRef) {
  ACCEL_SKIP_WITHOUT_GPU();
  absl::StatusOr<std::unique_ptr<Blas>> blas = Blas::Create();
  ASSERT_TRUE(blas.ok()) << blas.status();
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(::testing::Message() << "B=" << s.B << " T=" << s.T << " C=" << s.C
                                      << " NH=" << s.NH);
    TestRng rng(3000 + s.B * 31 + s.T * 7 + s.C);
    const int64_t n_qkv = s.B * s.T * 3 * s.C, n_out = s.B * s.T * s.C;
    const int64_t n_att = s.B * s.NH * s.T * s.T;
    const std::vector<float> qkv = rng.NormalVector(n_qkv, 0.0f, 2.0f);
    std::vector<float> out(n_out), att(n_att);
    ref::AttentionForward(out.data(), att.data(), qkv.data(), s.B, s.T, s.C, s.NH);
    // att starts as garbage on the device: every entry must be written, zeros above the diagonal.
    DeviceArray<float> d_qkv(qkv), d_out(n_out), d_att(std::vector<float>(n_att, -7.0f));
    ASSERT_TRUE(AttentionForward(**blas, d_out.get(), d_att.get(), d_qkv.get(), s.B, s.T, s.C,
                                 s.NH, nullptr)
                    .ok());
    ASSERT_TRUE(DeviceOk());
    EXPECT_TRUE(AllCloseToScale(d_out.Download(), out, 1e-5));
    EXPECT_TRUE(AllCloseToScale(d_att.Download(), att, 1e-5));

    const std::vector<float> dout = rng.NormalVector(n_out);
    std::vector<float> dqkv = rng.NormalVector(n_qkv);  // += is checked, not just =
    DeviceArray<float> d_dout(dout), d_dqkv(dqkv), d_scratch(s.NH * s.T * s.T);
    ASSERT_TRUE(AttentionBackward(**blas, d_dqkv.get(), d_scratch.get(), d_dout.get(),
                                  d_qkv.get(), d_att.get(), s.B, s.T, s.C, s.NH, nullptr)
                    .ok());
    ref::AttentionBackward(dqkv.data(), dout.data(), qkv.data(), att.data(), s.B, s.T, s.C, s.NH);
    ASSERT_TRUE(DeviceOk());
    EXPECT_TRUE(AllCloseToScale(d_dqkv.Download(), dqkv, 1e-5));
  }
  EXPECT_EQ(AttentionForward(**blas, nullptr, nullptr, nullptr, 1, 4, 10, 3, nullptr).code(),
            absl::StatusCode::kInvalidArgument);  // C not a multiple of NH
}

}  // namespace
}  // namespace accel::kernels::cuda
