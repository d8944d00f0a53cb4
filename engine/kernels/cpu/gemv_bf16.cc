// bf16 weights × few activation rows (gemv_bf16.h): streamed once, widened in registers.
#include "engine/kernels/cpu/gemv_bf16.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace accel::kernels::internal {
namespace {

float Widen1(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// The vector of fp32 lanes this build has: AVX-512 (16 lanes) or AVX2 (8); else scalar loops.
#if defined(__AVX512F__)
constexpr int64_t kLanes = 16;
using Vec = __m512;
inline Vec Zero() { return _mm512_setzero_ps(); }
inline Vec Broadcast(float x) { return _mm512_set1_ps(x); }
inline Vec LoadBf16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
inline Vec LoadF32(const float* p) { return _mm512_loadu_ps(p); }
inline Vec Fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline void Store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
inline float Sum(Vec v) { return _mm512_reduce_add_ps(v); }
#define ACCEL_GEMV_VECTOR 1
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int64_t kLanes = 8;
using Vec = __m256;
inline Vec Zero() { return _mm256_setzero_ps(); }
inline Vec Broadcast(float x) { return _mm256_set1_ps(x); }
inline Vec LoadBf16(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline Vec LoadF32(const float* p) { return _mm256_loadu_ps(p); }
inline Vec Fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline void Store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline float Sum(Vec v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}
#define ACCEL_GEMV_VECTOR 1
#endif

void Finish(float* c, float value, float beta) { *c = beta == 0.0f ? value : value + beta * *c; }

// B stored (K, N): each thread owns blocks of kBlock columns and walks every row of B over
// them, kBlock / kLanes accumulators per activation row, so each weight is read once per call.
void RowMajorWeights(int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda,
                     const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc) {
#ifdef ACCEL_GEMV_VECTOR
  constexpr int64_t kAcc = 8;  // independent FMA chains: enough to cover the FMA latency
  constexpr int64_t kBlock = kAcc * kLanes;
  const int64_t full_blocks = N / kBlock;
#pragma omp parallel for schedule(static)
  for (int64_t blk = 0; blk < full_blocks; ++blk) {
    const int64_t n0 = blk * kBlock;
    for (int64_t m = 0; m < M; ++m) {
      Vec acc[kAcc];
      for (Vec& v : acc) v = Zero();
      for (int64_t k = 0; k < K; ++k) {
        const Vec a = Broadcast(Widen1(A[m * lda + k]));
        const uint16_t* row = B + k * ldb + n0;
        for (int64_t j = 0; j < kAcc; ++j) acc[j] = Fma(a, LoadBf16(row + j * kLanes), acc[j]);
      }
      float out[kBlock];
      for (int64_t j = 0; j < kAcc; ++j) Store(out + j * kLanes, acc[j]);
      for (int64_t j = 0; j < kBlock; ++j) Finish(&C[m * ldc + n0 + j], out[j], beta);
    }
  }
  const int64_t tail = full_blocks * kBlock;
#else
  const int64_t tail = 0;
#endif
  // The last columns (fewer than a block), or every column without vectors.
  if (tail == N) return;
  for (int64_t m = 0; m < M; ++m) {
    std::vector<float> acc(static_cast<size_t>(N - tail), 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      const float a = Widen1(A[m * lda + k]);
      const uint16_t* row = B + k * ldb;
      for (int64_t n = tail; n < N; ++n) acc[n - tail] += a * Widen1(row[n]);
    }
    for (int64_t n = tail; n < N; ++n) Finish(&C[m * ldc + n], acc[n - tail], beta);
  }
}

// B stored (N, K): every output is a dot product of an activation row with a weight row, so
// threads split the weight rows; the activation rows are widened once per call.
void TransposedWeights(int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda,
                       const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  std::vector<float> a32(static_cast<size_t>(M * K));
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) a32[m * K + k] = Widen1(A[m * lda + k]);
  }
  const float* a = a32.data();
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const uint16_t* w = B + n * ldb;
    for (int64_t m = 0; m < M; ++m) {
      const float* x = a + m * K;
      int64_t k = 0;
      float sum = 0.0f;
#ifdef ACCEL_GEMV_VECTOR
      Vec acc0 = Zero(), acc1 = Zero();  // two chains hide the FMA latency
      for (; k + 2 * kLanes <= K; k += 2 * kLanes) {
        acc0 = Fma(LoadF32(x + k), LoadBf16(w + k), acc0);
        acc1 = Fma(LoadF32(x + k + kLanes), LoadBf16(w + k + kLanes), acc1);
      }
      for (; k + kLanes <= K; k += kLanes) acc0 = Fma(LoadF32(x + k), LoadBf16(w + k), acc0);
      sum = Sum(acc0) + Sum(acc1);
#endif
      for (; k < K; ++k) sum += x[k] * Widen1(w[k]);
      Finish(&C[m * ldc + n], sum, beta);
    }
  }
}

}  // namespace

void GemvBf16(bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda,
              const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (trans_b) {
    TransposedWeights(M, N, K, A, lda, B, ldb, beta, C, ldc);
  } else {
    RowMajorWeights(M, N, K, A, lda, B, ldb, beta, C, ldc);
  }
}

}  // namespace accel::kernels::internal
