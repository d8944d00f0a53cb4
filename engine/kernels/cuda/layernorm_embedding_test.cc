// LayerNorm and the token + position embedding against kernels::ref. Backward results start
// from nonzero values, so accumulation (+=) is what is checked.
#include <cstdint>
#include <vector>

#include "engine/kernels/cuda/kernels.h"
#include "engine/kernels/cuda/test_util.h"
#include "engine/kernels/embedding.h"
#include "engine/kernels/layernorm.h"
#include "engine/testing/matchers.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::kernels::cuda {
namespace {

using ::accel::cuda::testing::DeviceArray;
using ::accel::cuda::testing::DeviceOk;
using ::accel::testing::AllClose;
using ::accel::testing::AllCloseToScale;
using ::accel::testing::TestRng;

TEST(CudaLayerNormTest, ForwardAndBackwardMatchRef) {
  // C = 7000 needs more than the default 48 KiB of shared memory in the backward.
  const int64_t shapes[][2] = {{1, 1}, {3, 31}, {37, 768}, {1031, 100}, {9, 7000}};
  ACCEL_SKIP_WITHOUT_GPU();
  for (const auto& [N, C] : shapes) {
    SCOPED_TRACE(::testing::Message() << "N=" << N << " C=" << C);
    TestRng rng(N * 13 + C);
    const std::vector<float> x = rng.NormalVector(N * C, 0.5f, 2.0f), w = rng.NormalVector(C),
                             b = rng.NormalVector(C), dout = rng.NormalVector(N * C);
    std::vector<float> out(N * C), mean(N), rstd(N);
    ref::LayerNormForward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    DeviceArray<float> d_x(x), d_w(w), d_b(b), d_out(N * C), d_mean(N), d_rstd(N), d_dout(dout);
    ASSERT_TRUE(LayerNormForward(d_out.get(), d_mean.get(), d_rstd.get(), d_x.get(), d_w.get(),
                                 d_b.get(), N, C, nullptr)
                    .ok());
    ASSERT_TRUE(DeviceOk());
    EXPECT_TRUE(AllClose(d_out.Download(), out, 1e-5, 1e-5));
    EXPECT_TRUE(AllClose(d_mean.Download(), mean, 1e-6, 1e-5));
    EXPECT_TRUE(AllClose(d_rstd.Download(), rstd, 1e-6, 1e-5));

    std::vector<float> dx = rng.NormalVector(N * C), dw = rng.NormalVector(C),
                       db = rng.NormalVector(C);
    DeviceArray<float> d_dx(dx), d_dw(dw), d_db(db);
    ASSERT_TRUE(LayerNormBackward(d_dx.get(), d_dw.get(), d_db.get(), d_dout.get(), d_x.get(),
                                  d_w.get(), d_mean.get(), d_rstd.get(), N, C, nullptr)
                    .ok());
    ref::LayerNormBackward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(),
                           mean.data(), rstd.data(), N, C);
    ASSERT_TRUE(DeviceOk());
    EXPECT_TRUE(AllCloseToScale(d_dx.Download(), dx, 1e-5));
    EXPECT_TRUE(AllCloseToScale(d_dw.Download(), dw, 1e-5));
    EXPECT_TRUE(AllCloseToScale(d_db.Download(), db, 1e-5));
  }
}

TEST(CudaEmbeddingTest, ForwardAndBackwardMatchRef) {
  ACCEL_SKIP_WITHOUT_GPU();
  struct Shape {
    int64_t B, T, C, V, maxT;
  };
  // V = 3 makes tokens repeat a lot: the dwte atomics collide.
  for (const Shape& s : {Shape{1, 1, 1, 1, 1}, Shape{3, 17, 33, 3, 20}, Shape{4, 64, 768, 50, 64}}) {
    SCOPED_TRACE(::testing::Message() << "B=" << s.B << " T=" << s.T << " C=" << s.C);
    TestRng rng(s.B + s.T + s.C);
    const std::vector<int32_t> tokens = rng.IntVector(s.B * s.T, 0, static_cast<int32_t>(s.V));
    const std::vector<float> wte = rng.NormalVector(s.V * s.C), wpe = rng.NormalVector(s.maxT * s.C),
                             dout = rng.NormalVector(s.B * s.T * s.C);
    std::vector<float> out(s.B * s.T * s.C);
    ref::EmbeddingForward(out.data(), tokens.data(), wte.data(), wpe.data(), s.B, s.T, s.C);
    DeviceArray<int32_t> d_tokens(tokens);
    DeviceArray<float> d_wte(wte), d_wpe(wpe), d_out(out.size()), d_dout(dout);
    ASSERT_TRUE(EmbeddingForward(d_out.get(), d_tokens.get(), d_wte.get(), d_wpe.get(), s.B, s.T,
                                 s.C, nullptr)
                    .ok());
    ASSERT_TRUE(DeviceOk());
    EXPECT_EQ(d_out.Download(), out);  // one addition per element: exact

    std::vector<float> dwte = rng.NormalVector(s.V * s.C), dwpe = rng.NormalVector(s.maxT * s.C);
    DeviceArray<float> d_dwte(dwte), d_dwpe(dwpe);
    ASSERT_TRUE(EmbeddingBackward(d_dwte.get(), d_dwpe.get(), d_dout.get(), d_tokens.get(), s.B,
                                  s.T, s.C, nullptr)
                    .ok());
    ref::EmbeddingBackward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), s.B, s.T, s.C);
    ASSERT_TRUE(DeviceOk());
    EXPECT_TRUE(AllClose(d_dwte.Download(), dwte, 1e-5, 1e-5));
    EXPECT_TRUE(AllClose(d_dwpe.Download(), dwpe, 1e-5, 1e-5));
  }
}

}  // namespace
}  // namespace accel::kernels::cuda
