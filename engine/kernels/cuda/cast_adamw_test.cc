// Casts (bit-exact against accel::ConvertDType), AdamW and the squared norm against kernels::ref.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "engine/kernels/adamw.h"
#include "engine/kernels/cuda/kernels.h"
#include "engine/kernels/cuda/test_util.h"
#include "engine/tensor/dtype.h"
#include "engine/testing/matchers.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::kernels::cuda {
namespace {

using ::accel::cuda::testing::DeviceArray;
using ::accel::cuda::testing::DeviceOk;
using ::accel::testing::AllClose;
using ::accel::testing::TestRng;

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Normal values plus every special case the conversions treat apart: ±0, subnormals of f32 and
// of f16, rounding ties, f16 overflow, ±inf, NaNs with payloads.
std::vector<float> Specials(TestRng& rng, size_t n_random) {
  std::vector<float> v = {0.0f,  -0.0f, 1.0f, -2.5f, 65504.0f, 65520.0f, 65519.0f, 1e10f,
                          -1e-8f, 6e-8f, 3e-5f, 1e-40f, -1e-45f,
                          FromBits(0x3f808000u),  // bf16 tie, even below
                          FromBits(0x3f818000u),  // bf16 tie, odd below
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), FromBits(0x7fc00001u),
                          FromBits(0xff812345u), FromBits(0x7f800001u)};
  for (size_t i = 0; i < n_random; ++i) v.push_back(rng.Normal(0.0f, 100.0f));
  return v;
}

TEST(CudaCastTest, BitExactWithTheCpuConversions) {
  ACCEL_SKIP_WITHOUT_GPU();
  TestRng rng(7);
  const std::vector<float> src = Specials(rng, 1001);
  const int64_t n = static_cast<int64_t>(src.size());
  DeviceArray<float> d_src(src), d_back(src.size());
  DeviceArray<uint16_t> d_half(src.size());
  for (DType half : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(std::string(DTypeName(half)));
    std::vector<uint16_t> expected(src.size());
    ::accel::ConvertDType(src.data(), DType::kF32, expected.data(), half, src.size());
    ASSERT_TRUE(ConvertDType(d_src.get(), DType::kF32, d_half.get(), half, n, nullptr).ok());
    ASSERT_TRUE(DeviceOk());
    const std::vector<uint16_t> got = d_half.Download();
    for (size_t i = 0; i < src.size(); ++i) {
      ASSERT_EQ(got[i], expected[i]) << "element " << i << " = " << src[i];
    }
    // And back: every 16-bit pattern of the result widens exactly like the CPU's.
    std::vector<float> expected_back(src.size());
    ::accel::ConvertDType(expected.data(), half, expected_back.data(), DType::kF32, src.size());
    ASSERT_TRUE(ConvertDType(d_half.get(), half, d_back.get(), DType::kF32, n, nullptr).ok());
    const std::vector<float> back = d_back.Download();
    ASSERT_EQ(std::memcmp(back.data(), expected_back.data(), back.size() * 4), 0);
  }
  // bf16 -> f16 directly goes through f32, like the CPU.
  std::vector<uint16_t> bf(src.size()), f16_expected(src.size());
  ::accel::ConvertDType(src.data(), DType::kF32, bf.data(), DType::kBF16, src.size());
  ::accel::ConvertDType(bf.data(), DType::kBF16, f16_expected.data(), DType::kF16, src.size());
  DeviceArray<uint16_t> d_bf(bf), d_f16(src.size());
  ASSERT_TRUE(ConvertDType(d_bf.get(), DType::kBF16, d_f16.get(), DType::kF16, n, nullptr).ok());
  EXPECT_EQ(d_f16.Download(), f16_expected);
  EXPECT_EQ(ConvertDType(nullptr, DType::kF32, nullptr, DType::kBF16, -1, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CudaAdamWTest, MatchesRefAndWritesTheLowPrecisionCopy) {
  ACCEL_SKIP_WITHOUT_GPU();
  const std::pair<int, bool> kSteps[] = {{1, true}, {10, true}, {10, false}};  // bias correction
  for (int64_t n : {1, 31, 1000, 4099}) {
    for (const auto& [step, bias_correction] : kSteps) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " step=" << step
                                        << " bias_correction=" << bias_correction);
      TestRng rng(100 + n + step);
      std::vector<float> p = rng.NormalVector(n), m = rng.NormalVector(n, 0, 0.1f),
                         v = rng.UniformVector(n, 0.0f, 0.01f), g = rng.NormalVector(n);
      AdamWHyper h;
      h.lr = 3e-3f;
      h.weight_decay = 0.1f;
      h.step = step;
      h.bias_correction = bias_correction;
      h.grad_scale = 0.5f;
      DeviceArray<float> dp(p), dm(m), dv(v), dg(g);
      DeviceArray<uint16_t> dbf(n);
      ASSERT_TRUE(AdamWUpdate(dp.get(), dm.get(), dv.get(), dg.get(), DType::kF32, n, h,
                              dbf.get(), DType::kBF16, nullptr)
                      .ok());
      ref::AdamWUpdate(p.data(), m.data(), v.data(), g.data(), n, h);
      ASSERT_TRUE(DeviceOk());
      const std::vector<float> got_p = dp.Download();
      EXPECT_TRUE(AllClose(got_p, p, 1e-6, 1e-5));
      EXPECT_TRUE(AllClose(dm.Download(), m, 1e-7, 1e-5));
      EXPECT_TRUE(AllClose(dv.Download(), v, 1e-9, 1e-5));
      std::vector<uint16_t> expected_bf(n);
      FloatToBf16(got_p.data(), expected_bf.data(), n);
      EXPECT_EQ(dbf.Download(), expected_bf);
    }
  }
}

TEST(CudaAdamWTest, ReadsBf16Gradients) {
  ACCEL_SKIP_WITHOUT_GPU();
  const int64_t n = 333;
  TestRng rng(5);
  std::vector<float> p = rng.NormalVector(n), m(n, 0.0f), v(n, 0.0f), g = rng.NormalVector(n);
  std::vector<uint16_t> g_bf(n);
  FloatToBf16(g.data(), g_bf.data(), n);
  Bf16ToFloat(g_bf.data(), g.data(), n);  // the reference sees the same rounded gradients
  AdamWHyper h;
  DeviceArray<float> dp(p), dm(m), dv(v);
  DeviceArray<uint16_t> dg(g_bf);
  ASSERT_TRUE(AdamWUpdate(dp.get(), dm.get(), dv.get(), dg.get(), DType::kBF16, n, h, nullptr,
                          DType::kBF16, nullptr)
                  .ok());
  ref::AdamWUpdate(p.data(), m.data(), v.data(), g.data(), n, h);
  EXPECT_TRUE(AllClose(dp.Download(), p, 1e-6, 1e-5));
  // An f32 "low precision" copy is a caller bug.
  EXPECT_EQ(AdamWUpdate(dp.get(), dm.get(), dv.get(), dg.get(), DType::kBF16, n, h, dp.get(),
                        DType::kF32, nullptr)
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CudaAdamWTest, LowPrecisionMatchesRefWithinOneBf16Rounding) {
  ACCEL_SKIP_WITHOUT_GPU();
  const int64_t n = 4099;
  TestRng rng(11);
  std::vector<float> p32 = rng.NormalVector(n), g = rng.NormalVector(n);
  std::vector<uint16_t> p(n), m(n, 0), v(n, 0);
  FloatToBf16(p32.data(), p.data(), n);
  AdamWHyper h;
  h.lr = 1e-2f;
  h.weight_decay = 0.1f;
  DeviceArray<uint16_t> dp(p), dm(m), dv(v);
  DeviceArray<float> dg(g);
  for (int step = 1; step <= 3; ++step) {
    h.step = step;
    ASSERT_TRUE(AdamWUpdateBf16(dp.get(), dm.get(), dv.get(), dg.get(), n, h, nullptr).ok());
    ref::AdamWUpdateBf16(p.data(), m.data(), v.data(), g.data(), n, h);
  }
  // FMA contraction may move a result across a bf16 rounding boundary: one bf16 ulp at most.
  std::vector<float> got(n), want(n);
  const std::vector<uint16_t> dp_host = dp.Download();
  Bf16ToFloat(dp_host.data(), got.data(), n);
  Bf16ToFloat(p.data(), want.data(), n);
  EXPECT_TRUE(AllClose(got, want, 1e-6, 8e-3));
  h.step = 0;
  EXPECT_EQ(AdamWUpdateBf16(dp.get(), dm.get(), dv.get(), dg.get(), n, h, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CudaNormTest, SquaredL2NormMatchesRefAndAccumulates) {
  ACCEL_SKIP_WITHOUT_GPU();
  TestRng rng(9);
  DeviceArray<double> out(1);
  for (int64_t n : {0, 1, 257, 100003}) {
    const std::vector<float> x = rng.NormalVector(n);
    const double expected = ref::SquaredL2Norm(x.data(), n);
    DeviceArray<float> dx(x);
    ASSERT_TRUE(SquaredL2Norm(out.get(), dx.get(), DType::kF32, n, false, nullptr).ok());
    const double got = out.Download()[0];
    EXPECT_NEAR(got, expected, 1e-9 * (expected + 1)) << "n=" << n;
  }
  // Accumulate over several tensors, one of them bf16 (exactly representable values).
  std::vector<float> a = {1.5f, -2.0f, 0.25f};
  std::vector<uint16_t> a_bf(3);
  FloatToBf16(a.data(), a_bf.data(), 3);
  DeviceArray<uint16_t> d_bf(a_bf);
  DeviceArray<float> d_a(a);
  ASSERT_TRUE(SquaredL2Norm(out.get(), d_a.get(), DType::kF32, 3, false, nullptr).ok());
  ASSERT_TRUE(SquaredL2Norm(out.get(), d_bf.get(), DType::kBF16, 3, true, nullptr).ok());
  EXPECT_DOUBLE_EQ(out.Download()[0], 2 * (2.25 + 4.0 + 0.0625));
}

}  // namespace
}  // namespace accel::kernels::cuda
