// bf16 matrix multiplication with fp32 accumulation: the compute path of bf16 mixed precision.
//
// Operands are bf16 (raw uint16_t bits, engine/tensor/dtype.h), row-major, with the same
// conventions as matmul.h; products are exact in fp32 and summed in fp32, and C is fp32.
// GemmBf16 is C = op(A) · op(B) + beta · C (beta == 0 never reads C). MatmulForwardBf16 and
// MatmulBackwardBf16 are the linear layer of matmul.h with the weight and the matmul inputs in
// bf16: the caller rounds activations (FloatToBf16) and keeps dout in fp32 as well, for the
// bias gradient. LinearForwardBf16 and LinearBackwardBf16 are the same for the nn.Linear
// orientation (weight stored (OC, IC), out = inp · weightᵀ + bias; matmul.h's Linear*).
//
// A product of at most 4 activation rows (op(A) not transposed: a decode step) runs a GEMV of
// our own on any x86-64 (cpu/gemv_bf16.h): the bf16 weights read once, widened in registers.
// Fast path otherwise: oneDNN's matmul primitive, bf16 x bf16 -> f32, which runs on AMX where the CPU has
// it and on AVX512_BF16's dot products otherwise (on this project's AVX-512 EPYC, 1.5-2.1x the
// fp32 linear layers: accel_bench_kernels --benchmark_filter=Matmul, docs/performance.md). Primitives are cached per calling
// thread, keyed by shape, strides, beta and thread count, so concurrent callers (ranks as
// threads in tests) never share one. Operands should be 64-byte aligned (Buffer's alignment);
// oneDNN's bf16 kernels slow down badly on 16-byte aligned ones (shared/reference/gemm.md).
// On a CPU without AVX-512, where oneDNN 2.6 has no bf16 matmul kernels, the operands are
// widened to fp32 (exactly) and multiplied by the fp32 path: same contract, no speedup.
// A contract violation (null operand, stride smaller than a row) aborts with a message, as in
// matmul.h. kernels::ref widens to fp32 and calls ref::Gemm (the oracle).
#pragma once

#include <cstdint>
#include <string>

namespace accel::kernels {

// How bf16 mixed precision multiplies on this host, decided once per process
// (cpu/matmul_bf16_choice.h has the rules): natively (bf16 operands, oneDNN's bf16 kernels)
// only where the CPU has bf16 dot products (AVX512_BF16 or AMX) and a short measurement, cached
// per host, finds them faster than the fp32 GEMM; otherwise the bf16 parameters' fp32 copies go
// through the fp32 GEMM. ACCEL_BF16_MATMUL=0 in the environment forces fp32 (to compare the two
// paths), =1 forces bf16 (tests of the fast path on any CPU).
struct Bf16MatmulChoice {
  bool native = false;
  double measured_speedup = 0;  // fp32 GEMM time / bf16 GEMM time here; 0: not measured
  // One line for the worker's mode line and `accelctl config explain`, e.g. "bf16 (oneDNN
  // avx512_core_bf16: 1.74x the fp32 GEMM here, measured)".
  std::string reason;
};
const Bf16MatmulChoice& ChosenBf16Matmul();
bool Bf16MatmulIsNative();  // ChosenBf16Matmul().native

#define ACCEL_MATMUL_BF16_KERNELS                                                               \
  void GemmBf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,                    \
                const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb, float beta,     \
                float* C, int64_t ldc);                                                         \
  /* out (N, OC) = inp (N, IC) · weight (IC, OC) + bias (OC); bias (fp32) may be null. */       \
  void MatmulForwardBf16(float* out, const uint16_t* inp, const uint16_t* weight,              \
                         const float* bias, int64_t N, int64_t IC, int64_t OC);                 \
  /* Accumulates (+=): dinp (N, IC) += dout16 · weightᵀ; dweight (IC, OC) += inpᵀ · dout16;   \
     dbias (OC) += column sums of dout (fp32). Any of dinp, dweight, dbias may be null. */      \
  void MatmulBackwardBf16(float* dinp, float* dweight, float* dbias, const float* dout,         \
                          const uint16_t* dout16, const uint16_t* inp, const uint16_t* weight,  \
                          int64_t N, int64_t IC, int64_t OC);                                   \
  /* out (N, OC) = inp (N, IC) · weight (OC, IC)ᵀ + bias (OC); bias (fp32) may be null. */      \
  void LinearForwardBf16(float* out, const uint16_t* inp, const uint16_t* weight,              \
                         const float* bias, int64_t N, int64_t IC, int64_t OC);                 \
  /* Accumulates (+=): dinp (N, IC) += dout16 · weight; dweight (OC, IC) += dout16ᵀ · inp;    \
     dbias (OC) += column sums of dout (fp32). Any of dinp, dweight, dbias may be null. */      \
  void LinearBackwardBf16(float* dinp, float* dweight, float* dbias, const float* dout,         \
                          const uint16_t* dout16, const uint16_t* inp, const uint16_t* weight,  \
                          int64_t N, int64_t IC, int64_t OC);

ACCEL_MATMUL_BF16_KERNELS
namespace ref {
ACCEL_MATMUL_BF16_KERNELS
}  // namespace ref

}  // namespace accel::kernels
