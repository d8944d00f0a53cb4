// cuBLASLt Gemm and the linear layer against kernels::ref, in fp32 and with bf16 inputs. bf16
// cases feed the reference the same bf16-rounded inputs, so only accumulation order and the
// output rounding differ.
#include <cmath>
#include <iostream>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "engine/kernels/cuda/kernels.h"
#include "engine/kernels/cuda/test_util.h"
#include "engine/kernels/matmul.h"
#include "engine/tensor/dtype.h"
#include "engine/testing/matchers.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::kernels::cuda {
namespace {

using ::accel::cuda::testing::DeviceArray;
using ::accel::cuda::testing::DeviceOk;
using ::accel::testing::AllCloseToScale;
using ::accel::testing::TestRng;

std::vector<uint16_t> ToBf16(const std::vector<float>& x) {
  std::vector<uint16_t> r(x.size());
  FloatToBf16(x.data(), r.data(), x.size());
  return r;
}
std::vector<float> FromBf16(const std::vector<uint16_t>& x) {
  std::vector<float> r(x.size());
  Bf16ToFloat(x.data(), r.data(), x.size());
  return r;
}
std::vector<float> RoundBf16(const std::vector<float>& x) { return FromBf16(ToBf16(x)); }

std::unique_ptr<Blas> MakeBlas() {
  absl::StatusOr<std::unique_ptr<Blas>> blas = Blas::Create();
  EXPECT_TRUE(blas.ok()) << blas.status();
  return blas.ok() ? std::move(*blas) : nullptr;
}

struct GemmCase {
  bool ta, tb;
  int64_t M, N, K, pad;
  float alpha, beta;
};

TEST(CudaGemmTest, Fp32MatchesRefWithTransposesStridesAndBeta) {
  ACCEL_SKIP_WITHOUT_GPU();
  std::unique_ptr<Blas> blas = MakeBlas();
  ASSERT_NE(blas, nullptr);
  const GemmCase cases[] = {{false, false, 7, 5, 13, 0, 1.0f, 0.0f},
                            {true, false, 33, 17, 65, 3, 0.5f, 1.0f},
                            {false, true, 1, 129, 31, 1, 1.0f, 0.25f},
                            {true, true, 64, 48, 96, 0, -2.0f, 0.0f}};
  for (const GemmCase& c : cases) {
    SCOPED_TRACE(::testing::Message() << "ta=" << c.ta << " tb=" << c.tb << " M=" << c.M
                                      << " N=" << c.N << " K=" << c.K << " pad=" << c.pad);
    TestRng rng(c.M * 1000 + c.N * 10 + c.K);
    const int64_t a_rows = c.ta ? c.K : c.M, a_cols = c.ta ? c.M : c.K;
    const int64_t b_rows = c.tb ? c.N : c.K, b_cols = c.tb ? c.K : c.N;
    const int64_t lda = a_cols + c.pad, ldb = b_cols + c.pad, ldc = c.N + c.pad;
    const std::vector<float> A = rng.UniformVector(a_rows * lda), B = rng.UniformVector(b_rows * ldb);
    std::vector<float> C = rng.UniformVector(c.M * ldc);
    std::vector<float> bias = rng.UniformVector(c.N);
    DeviceArray<float> dA(A), dB(B), dC(C), dbias(bias);
    ASSERT_TRUE(blas->Gemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, dA.get(), lda, dB.get(), ldb,
                           c.beta, dC.get(), ldc, dbias.get(), GemmTypes{}, nullptr)
                    .ok());
    ref::Gemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta, C.data(),
              ldc);
    for (int64_t i = 0; i < c.M; ++i) {
      for (int64_t j = 0; j < c.N; ++j) C[i * ldc + j] += bias[j];
    }
    ASSERT_TRUE(DeviceOk());
    std::vector<float> got = dC.Download();
    // Padding columns of C are never written.
    EXPECT_TRUE(AllCloseToScale(got, C, 2e-6 * std::sqrt(static_cast<double>(c.K))));
  }
}

TEST(CudaGemmTest, RejectsUnsupportedTypesAndBadStrides) {
  ACCEL_SKIP_WITHOUT_GPU();
  std::unique_ptr<Blas> blas = MakeBlas();
  ASSERT_NE(blas, nullptr);
  DeviceArray<float> d(64);
  EXPECT_EQ(blas->Gemm(false, false, 2, 2, 2, 1, d.get(), 2, d.get(), 2, 0, d.get(), 2, nullptr,
                       GemmTypes{DType::kF32, DType::kBF16}, nullptr)
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(blas->Gemm(false, false, 2, 4, 3, 1, d.get(), 2, d.get(), 4, 0, d.get(), 4, nullptr,
                       GemmTypes{}, nullptr)
                .code(),
            absl::StatusCode::kInvalidArgument);  // lda 2 < K 3
}

struct LinearCase {
  int64_t N, IC, OC;
};
constexpr LinearCase kLinear[] = {{1, 1, 1}, {7, 13, 5}, {65, 129, 33}, {128, 96, 288}};

TEST(CudaMatmulTest, Fp32ForwardAndBackwardMatchRef) {
  ACCEL_SKIP_WITHOUT_GPU();
  std::unique_ptr<Blas> blas = MakeBlas();
  ASSERT_NE(blas, nullptr);
  for (const LinearCase& c : kLinear) {
    SCOPED_TRACE(::testing::Message() << "N=" << c.N << " IC=" << c.IC << " OC=" << c.OC);
    TestRng rng(c.N + 31 * c.IC + 977 * c.OC);
    const std::vector<float> inp = rng.NormalVector(c.N * c.IC), w = rng.NormalVector(c.IC * c.OC),
                             bias = rng.NormalVector(c.OC), dout = rng.NormalVector(c.N * c.OC);
    std::vector<float> out(c.N * c.OC);
    ref::MatmulForward(out.data(), inp.data(), w.data(), bias.data(), c.N, c.IC, c.OC);
    DeviceArray<float> d_inp(inp), d_w(w), d_bias(bias), d_out(out.size()), d_dout(dout);
    ASSERT_TRUE(MatmulForward(*blas, d_out.get(), d_inp.get(), d_w.get(), d_bias.get(), c.N,
                              c.IC, c.OC, GemmTypes{}, nullptr)
                    .ok());
    ASSERT_TRUE(DeviceOk());
    EXPECT_TRUE(AllCloseToScale(d_out.Download(), out, 1e-5));

    // Backward accumulates into nonzero gradients.
    std::vector<float> dinp = rng.NormalVector(c.N * c.IC), dw = rng.NormalVector(c.IC * c.OC),
                       db = rng.NormalVector(c.OC);
    DeviceArray<float> d_dinp(dinp), d_dw(dw), d_db(db);
    ASSERT_TRUE(MatmulBackward(*blas, d_dinp.get(), d_dw.get(), d_db.get(), d_dout.get(),
                               d_inp.get(), d_w.get(), c.N, c.IC, c.OC, GemmTypes{}, nullptr)
                    .ok());
    ref::MatmulBackward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), c.N,
                        c.IC, c.OC);
    ASSERT_TRUE(DeviceOk());
    EXPECT_TRUE(AllCloseToScale(d_dinp.Download(), dinp, 1e-5));
    EXPECT_TRUE(AllCloseToScale(d_dw.Download(), dw, 1e-5));
    EXPECT_TRUE(AllCloseToScale(d_db.Download(), db, 1e-5));
  }
}

TEST(CudaMatmulTest, Bf16InputsWithFp32AndBf16Outputs) {
  ACCEL_SKIP_WITHOUT_GPU();
  std::unique_ptr<Blas> blas = MakeBlas();
  ASSERT_NE(blas, nullptr);
  for (const LinearCase& c : kLinear) {
    SCOPED_TRACE(::testing::Message() << "N=" << c.N << " IC=" << c.IC << " OC=" << c.OC);
    TestRng rng(7 * c.N + c.IC + c.OC);
    const std::vector<float> inp = RoundBf16(rng.NormalVector(c.N * c.IC)),
                             w = RoundBf16(rng.NormalVector(c.IC * c.OC)),
                             dout = RoundBf16(rng.NormalVector(c.N * c.OC));
    const std::vector<float> bias = rng.NormalVector(c.OC);
    DeviceArray<uint16_t> d_inp(ToBf16(inp)), d_w(ToBf16(w)), d_dout(ToBf16(dout));

    std::vector<float> out(c.N * c.OC);
    ref::MatmulForward(out.data(), inp.data(), w.data(), bias.data(), c.N, c.IC, c.OC);
    // bf16 in, fp32 out (bias fp32): only the accumulation order differs.
    DeviceArray<float> d_bias(bias), d_out(out.size());
    ASSERT_TRUE(MatmulForward(*blas, d_out.get(), d_inp.get(), d_w.get(), d_bias.get(), c.N, c.IC,
                              c.OC, GemmTypes{DType::kBF16, DType::kF32}, nullptr)
                    .ok());
    ASSERT_TRUE(DeviceOk());
    EXPECT_TRUE(AllCloseToScale(d_out.Download(), out, 1e-5));
    // bf16 in, bf16 out (bias bf16): the result is rounded once more, 2^-8 relative.
    const std::vector<float> bias_r = RoundBf16(bias);
    ref::MatmulForward(out.data(), inp.data(), w.data(), bias_r.data(), c.N, c.IC, c.OC);
    DeviceArray<uint16_t> d_bias_bf(ToBf16(bias_r)), d_out_bf(out.size());
    ASSERT_TRUE(MatmulForward(*blas, d_out_bf.get(), d_inp.get(), d_w.get(), d_bias_bf.get(), c.N,
                              c.IC, c.OC, GemmTypes{DType::kBF16, DType::kBF16}, nullptr)
                    .ok());
    ASSERT_TRUE(DeviceOk());
    EXPECT_TRUE(AllCloseToScale(FromBf16(d_out_bf.Download()), out, 1e-2));

    // Backward: bf16 activations and weights, fp32 gradients.
    std::vector<float> dinp(c.N * c.IC, 0.0f), dw(c.IC * c.OC, 0.0f), db(c.OC, 0.0f);
    DeviceArray<float> d_dinp(dinp), d_dw(dw), d_db(db);
    ASSERT_TRUE(MatmulBackward(*blas, d_dinp.get(), d_dw.get(), d_db.get(), d_dout.get(),
                               d_inp.get(), d_w.get(), c.N, c.IC, c.OC,
                               GemmTypes{DType::kBF16, DType::kF32}, nullptr)
                    .ok());
    ref::MatmulBackward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), c.N,
                        c.IC, c.OC);
    ASSERT_TRUE(DeviceOk());
    EXPECT_TRUE(AllCloseToScale(d_dinp.Download(), dinp, 1e-5));
    EXPECT_TRUE(AllCloseToScale(d_dw.Download(), dw, 1e-5));
    EXPECT_TRUE(AllCloseToScale(d_db.Download(), db, 1e-5));
  }
  // Not an assertion: which path the odd shapes took, for the record of a device run.
  std::cout << "cuBLASLt -> cuBLAS fallbacks in the bf16 cases: " << blas->fallbacks() << "\n";
}

}  // namespace
}  // namespace accel::kernels::cuda
