// RMSNorm, RoPE and SwiGLU on the device against double-precision references written here from
// the contracts in kernels.h: an oracle independent of the CPU kernels (engine/kernels/rmsnorm.h,
// rope.h, swiglu.h), whose own tests compare their fast paths with kernels::ref.
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/kernels/cuda/kernels.h"
#include "engine/kernels/cuda/test_util.h"
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

// ---- references ---------------------------------------------------------------------------------

void RmsNormRef(std::vector<float>& out, std::vector<float>& rstd, const std::vector<float>& x,
                const std::vector<float>& w, int64_t N, int64_t C, double eps) {
  for (int64_t r = 0; r < N; ++r) {
    double ms = 0;
    for (int64_t c = 0; c < C; ++c) ms += static_cast<double>(x[r * C + c]) * x[r * C + c];
    const double s = 1.0 / std::sqrt(ms / C + eps);
    for (int64_t c = 0; c < C; ++c) out[r * C + c] = static_cast<float>(x[r * C + c] * s * w[c]);
    rstd[r] = static_cast<float>(s);
  }
}

// dinp += rstd (g − x rstd² mean(g x)), g = w dout; dweight += Σ_rows dout x rstd.
void RmsNormBackwardRef(std::vector<float>& dx, std::vector<float>& dw,
                        const std::vector<float>& dout, const std::vector<float>& x,
                        const std::vector<float>& w, const std::vector<float>& rstd, int64_t N,
                        int64_t C) {
  std::vector<double> dw_acc(dw.begin(), dw.end());
  for (int64_t r = 0; r < N; ++r) {
    const double s = rstd[r];
    double gx = 0;
    for (int64_t c = 0; c < C; ++c) gx += static_cast<double>(w[c]) * dout[r * C + c] * x[r * C + c];
    gx /= C;
    for (int64_t c = 0; c < C; ++c) {
      const int64_t i = r * C + c;
      dx[i] += static_cast<float>(s * (static_cast<double>(w[c]) * dout[i] - x[i] * s * s * gx));
      dw_acc[c] += static_cast<double>(dout[i]) * x[i] * s;
    }
  }
  for (int64_t c = 0; c < C; ++c) dw[c] = static_cast<float>(dw_acc[c]);
}

// Rotates the q and k heads of qkv (B, T, (H + 2KV)·D) by angle sign·θ[t, i].
void RopeRef(std::vector<float>& qkv, const std::vector<float>& cos, const std::vector<float>& sin,
             int64_t B, int64_t T, int64_t H, int64_t KV, int64_t D, double sign) {
  const int64_t half = D / 2, W = (H + 2 * KV) * D;
  for (int64_t bt = 0; bt < B * T; ++bt) {
    const int64_t t = bt % T;
    for (int64_t head = 0; head < H + KV; ++head) {
      float* x = qkv.data() + bt * W + head * D;
      for (int64_t i = 0; i < half; ++i) {
        const double c = cos[t * half + i], s = sign * sin[t * half + i];
        const double x0 = x[i], x1 = x[i + half];
        x[i] = static_cast<float>(x0 * c - x1 * s);
        x[i + half] = static_cast<float>(x1 * c + x0 * s);
      }
    }
  }
}

double Sigmoid(double g) { return 1.0 / (1.0 + std::exp(-g)); }

// ---- tests --------------------------------------------------------------------------------------

TEST(CudaRmsNormTest, ForwardAndBackwardMatchRef) {
  // C = 13000 needs more than the default 48 KiB of shared memory in the backward.
  const int64_t shapes[][2] = {{1, 1}, {3, 31}, {37, 4096}, {1031, 100}, {5, 13000}};
  ACCEL_SKIP_WITHOUT_GPU();
  for (const auto& [N, C] : shapes) {
    for (float eps : {1e-6f, 1e-5f}) {
      SCOPED_TRACE(::testing::Message() << "N=" << N << " C=" << C << " eps=" << eps);
      TestRng rng(N * 13 + C);
      const std::vector<float> x = rng.NormalVector(N * C, 0.5f, 2.0f), w = rng.NormalVector(C),
                               dout = rng.NormalVector(N * C);
      std::vector<float> out(N * C), rstd(N);
      RmsNormRef(out, rstd, x, w, N, C, eps);
      DeviceArray<float> d_x(x), d_w(w), d_out(N * C), d_rstd(N), d_dout(dout);
      ASSERT_TRUE(
          RmsNormForward(d_out.get(), d_rstd.get(), d_x.get(), d_w.get(), N, C, eps, nullptr).ok());
      ASSERT_TRUE(DeviceOk());
      EXPECT_TRUE(AllClose(d_out.Download(), out, 1e-5, 1e-5));
      EXPECT_TRUE(AllClose(d_rstd.Download(), rstd, 1e-6, 1e-5));

      std::vector<float> dx = rng.NormalVector(N * C), dw = rng.NormalVector(C);  // += checked
      DeviceArray<float> d_dx(dx), d_dw(dw);
      ASSERT_TRUE(RmsNormBackward(d_dx.get(), d_dw.get(), d_dout.get(), d_x.get(), d_w.get(),
                                  d_rstd.get(), N, C, nullptr)
                      .ok());
      RmsNormBackwardRef(dx, dw, dout, x, w, rstd, N, C);
      ASSERT_TRUE(DeviceOk());
      EXPECT_TRUE(AllCloseToScale(d_dx.Download(), dx, 1e-5));
      EXPECT_TRUE(AllCloseToScale(d_dw.Download(), dw, 1e-5));
    }
  }
  EXPECT_EQ(RmsNormForward(nullptr, nullptr, nullptr, nullptr, 2, 0, 1e-6f, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RmsNormForward(nullptr, nullptr, nullptr, nullptr, 2, 4, -1.0f, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CudaRopeTest, ForwardAndBackwardMatchRef) {
  ACCEL_SKIP_WITHOUT_GPU();
  struct Shape {
    int64_t B, T, H, KV, D;
  };
  for (const Shape& s : {Shape{1, 1, 1, 1, 2}, Shape{2, 7, 3, 1, 8}, Shape{3, 33, 6, 2, 64},
                         Shape{1, 130, 4, 4, 18}}) {
    SCOPED_TRACE(::testing::Message() << "B=" << s.B << " T=" << s.T << " H=" << s.H
                                      << " KV=" << s.KV << " D=" << s.D);
    const int64_t half = s.D / 2, n = s.B * s.T * (s.H + 2 * s.KV) * s.D;
    // Llama's tables: θ[t, i] = t · 10000^(−2i / D).
    std::vector<float> cos(s.T * half), sin(s.T * half);
    for (int64_t t = 0; t < s.T; ++t) {
      for (int64_t i = 0; i < half; ++i) {
        const double angle = t * std::pow(10000.0, -2.0 * i / s.D);
        cos[t * half + i] = static_cast<float>(std::cos(angle));
        sin[t * half + i] = static_cast<float>(std::sin(angle));
      }
    }
    TestRng rng(s.T * 7 + s.D);
    const std::vector<float> qkv = rng.NormalVector(n);
    std::vector<float> rotated = qkv;
    RopeRef(rotated, cos, sin, s.B, s.T, s.H, s.KV, s.D, 1.0);
    DeviceArray<float> d_qkv(qkv), d_cos(cos), d_sin(sin);
    ASSERT_TRUE(RopeForward(d_qkv.get(), d_cos.get(), d_sin.get(), s.B, s.T, s.H, s.KV, s.D,
                            nullptr)
                    .ok());
    ASSERT_TRUE(DeviceOk());
    const std::vector<float> got = d_qkv.Download();
    EXPECT_TRUE(AllClose(got, rotated, 1e-5, 1e-5));
    // v is untouched, bit for bit; so is position 0 (angle 0).
    const int64_t W = (s.H + 2 * s.KV) * s.D;
    for (int64_t bt = 0; bt < s.B * s.T; ++bt) {
      for (int64_t c = (s.H + s.KV) * s.D; c < W; ++c) ASSERT_EQ(got[bt * W + c], qkv[bt * W + c]);
    }
    for (int64_t c = 0; c < W; ++c) EXPECT_EQ(got[c], qkv[c]);

    // Backward: the transpose, on a gradient; a rotation's transpose is its inverse, so the
    // backward of the forward's output gives back the input.
    const std::vector<float> dqkv = rng.NormalVector(n);
    std::vector<float> dback = dqkv;
    RopeRef(dback, cos, sin, s.B, s.T, s.H, s.KV, s.D, -1.0);
    DeviceArray<float> d_dqkv(dqkv);
    ASSERT_TRUE(RopeBackward(d_dqkv.get(), d_cos.get(), d_sin.get(), s.B, s.T, s.H, s.KV, s.D,
                             nullptr)
                    .ok());
    ASSERT_TRUE(RopeBackward(d_qkv.get(), d_cos.get(), d_sin.get(), s.B, s.T, s.H, s.KV, s.D,
                             nullptr)
                    .ok());
    ASSERT_TRUE(DeviceOk());
    EXPECT_TRUE(AllClose(d_dqkv.Download(), dback, 1e-5, 1e-5));
    EXPECT_TRUE(AllClose(d_qkv.Download(), qkv, 1e-5, 1e-5));
  }
  EXPECT_EQ(RopeForward(nullptr, nullptr, nullptr, 1, 2, 2, 1, 7, nullptr).code(),
            absl::StatusCode::kInvalidArgument);  // odd D
}

TEST(CudaSwiGluTest, ForwardAndBackwardMatchRef) {
  ACCEL_SKIP_WITHOUT_GPU();
  const int64_t shapes[][2] = {{1, 1}, {3, 37}, {64, 1376}, {1031, 11}};
  for (const auto& [N, I] : shapes) {
    SCOPED_TRACE(::testing::Message() << "N=" << N << " I=" << I);
    TestRng rng(N * 3 + I);
    // Scale 4 reaches far into both tails of the sigmoid.
    const std::vector<float> gate_up = rng.NormalVector(N * 2 * I, 0.0f, 4.0f),
                             dout = rng.NormalVector(N * I);
    std::vector<float> out(N * I), dgate_up(N * 2 * I);
    for (int64_t r = 0; r < N; ++r) {
      for (int64_t i = 0; i < I; ++i) {
        const double g = gate_up[r * 2 * I + i], u = gate_up[r * 2 * I + I + i];
        const double d = dout[r * I + i], sig = Sigmoid(g);
        out[r * I + i] = static_cast<float>(g * sig * u);
        dgate_up[r * 2 * I + i] = static_cast<float>(d * u * sig * (1 + g * (1 - sig)));
        dgate_up[r * 2 * I + I + i] = static_cast<float>(d * g * sig);
      }
    }
    // dgate_up starts as garbage: the backward overwrites it.
    DeviceArray<float> d_gu(gate_up), d_dout(dout), d_out(N * I),
        d_dgu(std::vector<float>(N * 2 * I, 9.0f));
    ASSERT_TRUE(SwiGluForward(d_out.get(), d_gu.get(), N, I, nullptr).ok());
    ASSERT_TRUE(SwiGluBackward(d_dgu.get(), d_dout.get(), d_gu.get(), N, I, nullptr).ok());
    ASSERT_TRUE(DeviceOk());
    EXPECT_TRUE(AllClose(d_out.Download(), out, 1e-5, 1e-5));
    EXPECT_TRUE(AllClose(d_dgu.Download(), dgate_up, 1e-5, 1e-5));
  }
  EXPECT_EQ(SwiGluForward(nullptr, nullptr, -1, 4, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace accel::kernels::cuda
