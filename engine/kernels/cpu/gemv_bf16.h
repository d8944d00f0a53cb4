// bf16 matrix × few rows: the decode path of bf16 generation (model/kv_decoder.h), where each new
// token multiplies one row of activations by every weight matrix. At M ≤ kGemvMaxRows the
// product is bound by reading the weights, so this kernel streams the bf16 weights once, widens
// each vector of them to fp32 in registers (exact: a bf16 is the high half of a float) and
// accumulates with fp32 FMAs. Half the bytes of the fp32 path, on any x86-64 with AVX2 (AVX-512
// where compiled for it) — where oneDNN 2.6 has no bf16 kernel (AVX2) it would otherwise widen
// whole weight matrices per call, and where it has one, its GEMM blocking is built for many rows.
//
// Contract: GemmBf16's (matmul_bf16.h) for op(A) = A (not transposed), M ≤ kGemvMaxRows:
// C (M, N) = A (M, K) · op(B) + beta · C, B stored (K, N) (trans_b false) or (N, K) (true), fp32
// sums of exact products. Summation order differs from the GEMM's (per output: k ascending in
// vector lanes, then the lanes), so results agree to fp32 rounding, not bit for bit.
#pragma once

#include <cstdint>

namespace accel::kernels::internal {

inline constexpr int64_t kGemvMaxRows = 4;

void GemvBf16(bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda,
              const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc);

}  // namespace accel::kernels::internal
