// Oracle for matmul_bf16.h: widen the bf16 operands to fp32 (exactly) and run ref::Gemm, which
// accumulates in double.
#include <cstdint>
#include <vector>

#include "engine/kernels/matmul.h"
#include "engine/kernels/matmul_bf16.h"
#include "engine/tensor/dtype.h"

namespace accel::kernels::ref {
namespace {

// The (rows, ld) storage of a bf16 matrix as fp32.
std::vector<float> Widen(const uint16_t* x, int64_t rows, int64_t ld) {
  std::vector<float> out(static_cast<size_t>(rows * ld));
  if (x != nullptr) Bf16ToFloat(x, out.data(), out.size());
  return out;
}

}  // namespace

void GemmBf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t* A,
              int64_t lda, const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const std::vector<float> a = Widen(A, trans_a ? K : M, lda);
  const std::vector<float> b = Widen(B, trans_b ? N : K, ldb);
  Gemm(trans_a, trans_b, M, N, K, 1.0f, a.data(), lda, b.data(), ldb, beta, C, ldc);
}

namespace {

using ForwardFn = void (*)(float*, const float*, const float*, const float*, int64_t, int64_t,
                           int64_t);
using BackwardFn = void (*)(float*, float*, float*, const float*, const float*, const float*,
                            int64_t, int64_t, int64_t);

// The fp32 oracle on the widened operands; the weight is dense IC * OC values in either layout.
void WidenedForward(ForwardFn forward, float* out, const uint16_t* inp, const uint16_t* weight,
                    const float* bias, int64_t N, int64_t IC, int64_t OC) {
  forward(out, Widen(inp, N, IC).data(), Widen(weight, IC, OC).data(), bias, N, IC, OC);
}

void WidenedBackward(BackwardFn backward, float* dinp, float* dweight, float* dbias,
                     const float* dout, const uint16_t* dout16, const uint16_t* inp,
                     const uint16_t* weight, int64_t N, int64_t IC, int64_t OC) {
  const std::vector<float> d = Widen(dout16, N, OC);
  backward(dinp, dweight, nullptr, d.data(), Widen(inp, N, IC).data(),
           Widen(weight, IC, OC).data(), N, IC, OC);
  if (dbias != nullptr) backward(nullptr, nullptr, dbias, dout, nullptr, nullptr, N, IC, OC);
}

}  // namespace

void MatmulForwardBf16(float* out, const uint16_t* inp, const uint16_t* weight, const float* bias,
                       int64_t N, int64_t IC, int64_t OC) {
  WidenedForward(MatmulForward, out, inp, weight, bias, N, IC, OC);
}

void MatmulBackwardBf16(float* dinp, float* dweight, float* dbias, const float* dout,
                        const uint16_t* dout16, const uint16_t* inp, const uint16_t* weight,
                        int64_t N, int64_t IC, int64_t OC) {
  WidenedBackward(MatmulBackward, dinp, dweight, dbias, dout, dout16, inp, weight, N, IC, OC);
}

void LinearForwardBf16(float* out, const uint16_t* inp, const uint16_t* weight, const float* bias,
                       int64_t N, int64_t IC, int64_t OC) {
  WidenedForward(LinearForward, out, inp, weight, bias, N, IC, OC);
}

void LinearBackwardBf16(float* dinp, float* dweight, float* dbias, const float* dout,
                        const uint16_t* dout16, const uint16_t* inp, const uint16_t* weight,
                        int64_t N, int64_t IC, int64_t OC) {
  WidenedBackward(LinearBackward, dinp, dweight, dbias, dout, dout16, inp, weight, N, IC, OC);
}

}  // namespace accel::kernels::ref
