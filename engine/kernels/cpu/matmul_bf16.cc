// bf16 matmul fast path: oneDNN's matmul primitive (bf16 x bf16 -> f32, fp32 accumulation).
//
// dnnl_sgemm has no bf16 twin, so this path uses primitives: one per (shape, strides, beta,
// thread count), created on first use and cached per thread. The cache stays small because a
// model has a handful of linear shapes (GPT-2: four per block plus the lm_head, each as
// forward, dinp and dweight). Transposes are strides on the plain memory descriptors; oneDNN's
// brgemm kernels take them without a reorder (measured: the transposed dinp and dweight shapes
// run within 25% of the forward one). beta becomes a sum post-op. The scratchpad is the
// caller's (thread-local here), so a primitive never shares oneDNN's global one between threads.
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>

#include <omp.h>

#include <atomic>
#include <vector>

#include "engine/kernels/cpu/gemv_bf16.h"
#include "engine/kernels/cpu/linear_layer.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/matmul_bf16.h"
#include "engine/tensor/dtype.h"

namespace accel::kernels {
namespace {

using dnnl::memory;

[[noreturn]] void Die(const char* what, long long a, long long b) {
  std::fprintf(stderr, "accel::kernels::GemmBf16: %s (%lld vs %lld)\n", what, a, b);
  std::abort();
}

struct GemmKey {
  bool trans_a, trans_b;
  int64_t M, N, K, lda, ldb, ldc;
  float beta;
  int threads;
  bool operator<(const GemmKey& o) const {
    return std::tie(trans_a, trans_b, M, N, K, lda, ldb, ldc, beta, threads) <
           std::tie(o.trans_a, o.trans_b, o.M, o.N, o.K, o.lda, o.ldb, o.ldc, o.beta, o.threads);
  }
};

struct CachedGemm {
  dnnl::matmul primitive;
  memory::desc a, b, c;
  size_t scratchpad_bytes = 0;
};

// Everything a thread needs to run primitives: its engine, stream, cache and scratchpad.
struct ThreadContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<GemmKey, CachedGemm> cache;
  std::unique_ptr<uint8_t, decltype(&std::free)> scratchpad{nullptr, &std::free};
  size_t scratchpad_bytes = 0;

  uint8_t* Scratchpad(size_t bytes) {
    if (bytes > scratchpad_bytes) {
      const size_t rounded = (bytes + 63) / 64 * 64;
      scratchpad.reset(static_cast<uint8_t*>(std::aligned_alloc(64, rounded)));
      if (scratchpad == nullptr) Die("cannot allocate the scratchpad", rounded, 0);
      scratchpad_bytes = rounded;
    }
    return scratchpad.get();
  }
};

ThreadContext& Context() {
  thread_local ThreadContext context;
  return context;
}

CachedGemm Create(ThreadContext& ctx, const GemmKey& k) {
  // Row-major op(A) (M, K): stored (M, K) with row stride lda, or (K, M) read transposed.
  const memory::dims a_strides = k.trans_a ? memory::dims{1, k.lda} : memory::dims{k.lda, 1};
  const memory::dims b_strides = k.trans_b ? memory::dims{1, k.ldb} : memory::dims{k.ldb, 1};
  CachedGemm g;
  g.a = memory::desc({k.M, k.K}, memory::data_type::bf16, a_strides);
  g.b = memory::desc({k.K, k.N}, memory::data_type::bf16, b_strides);
  g.c = memory::desc({k.M, k.N}, memory::data_type::f32, memory::dims{k.ldc, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (k.beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(k.beta);
    attr.set_post_ops(ops);
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(g.a, g.b, g.c), attr, ctx.engine);
  g.primitive = dnnl::matmul(pd);
  g.scratchpad_bytes = pd.scratchpad_desc().get_size();
  return g;
}

// oneDNN 2.6 has bf16 matmul kernels from AVX-512 up only; on other x86-64 CPUs creating the
// primitive fails as unimplemented. There the operands are widened to fp32 (exactly) and the
// fp32 path multiplies them: the same contract (exact products, fp32 sums), slower than fp32
// compute on fp32 copies, which is why Bf16MatmulIsNative() keeps callers off this path.
std::atomic<bool> g_widen_to_fp32{false};

// rows x cols bf16 values at row stride ld into dense fp32 (thread-local storage).
const float* Widen(const uint16_t* src, int64_t rows, int64_t cols, int64_t ld,
                   std::vector<float>& out) {
  out.resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    Bf16ToFloat(src + r * ld, out.data() + r * cols, static_cast<size_t>(cols));
  }
  return out.data();
}

void WidenedGemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t* A,
                 int64_t lda, const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  thread_local std::vector<float> a32, b32;
  const int64_t a_rows = trans_a ? K : M, a_cols = trans_a ? M : K;
  const int64_t b_rows = trans_b ? N : K, b_cols = trans_b ? K : N;
  const float* a = Widen(A, a_rows, a_cols, lda, a32);
  const float* b = Widen(B, b_rows, b_cols, ldb, b32);
  Gemm(trans_a, trans_b, M, N, K, 1.0f, a, a_cols, b, b_cols, beta, C, ldc);
}

}  // namespace

void GemmBf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t* A,
              int64_t lda, const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (M < 0 || N < 0 || K < 0) Die("negative dimension M/N", M, N);
  if (C == nullptr || ldc < N) Die("C is null or ldc < N", ldc, N);
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    }
    return;
  }
  if (A == nullptr || B == nullptr) Die("A or B is null", M, N);
  if (lda < (trans_a ? M : K)) Die("lda smaller than op(A)'s stored row", lda, trans_a ? M : K);
  if (ldb < (trans_b ? K : N)) Die("ldb smaller than op(B)'s stored row", ldb, trans_b ? K : N);
  // A few activation rows (a decode step): bound by the weights' bytes, read once by the GEMV.
  if (!trans_a && M <= internal::kGemvMaxRows) {
    internal::GemvBf16(trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  if (g_widen_to_fp32.load(std::memory_order_relaxed)) {
    WidenedGemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  ThreadContext& ctx = Context();
  const GemmKey key{trans_a, trans_b, M, N, K, lda, ldb, ldc, beta, omp_get_max_threads()};
  try {
    auto it = ctx.cache.find(key);
    if (it == ctx.cache.end()) it = ctx.cache.emplace(key, Create(ctx, key)).first;
    const CachedGemm& g = it->second;
    memory a(g.a, ctx.engine, const_cast<uint16_t*>(A));
    memory b(g.b, ctx.engine, const_cast<uint16_t*>(B));
    memory c(g.c, ctx.engine, C);
    memory scratch(memory::desc({static_cast<int64_t>(g.scratchpad_bytes)}, memory::data_type::u8,
                                memory::format_tag::a),
                   ctx.engine, ctx.Scratchpad(g.scratchpad_bytes));
    g.primitive.execute(ctx.stream, {{DNNL_ARG_SRC, a},
                                     {DNNL_ARG_WEIGHTS, b},
                                     {DNNL_ARG_DST, c},
                                     {DNNL_ARG_SCRATCHPAD, scratch}});
    ctx.stream.wait();
  } catch (const dnnl::error& e) {
    if (e.status == dnnl_unimplemented) {  // no bf16 kernels for this CPU: see WidenedGemm
      g_widen_to_fp32.store(true, std::memory_order_relaxed);
      WidenedGemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
      return;
    }
    std::fprintf(stderr, "accel::kernels::GemmBf16: oneDNN failed: %s (status %d, M=%lld N=%lld "
                 "K=%lld)\n", e.what(), static_cast<int>(e.status), static_cast<long long>(M),
                 static_cast<long long>(N), static_cast<long long>(K));
    std::abort();
  }
}

using internal::WeightLayout;

void MatmulForwardBf16(float* out, const uint16_t* inp, const uint16_t* weight, const float* bias,
                       int64_t N, int64_t IC, int64_t OC) {
  internal::LinearLayerForward(GemmBf16, WeightLayout::kInOut, out, inp, weight, bias, N, IC, OC);
}

void MatmulBackwardBf16(float* dinp, float* dweight, float* dbias, const float* dout,
                        const uint16_t* dout16, const uint16_t* inp, const uint16_t* weight,
                        int64_t N, int64_t IC, int64_t OC) {
  internal::LinearLayerBackward(GemmBf16, WeightLayout::kInOut, dinp, dweight, dbias, dout,
                                dout16, inp, weight, N, IC, OC);
}

void LinearForwardBf16(float* out, const uint16_t* inp, const uint16_t* weight, const float* bias,
                       int64_t N, int64_t IC, int64_t OC) {
  internal::LinearLayerForward(GemmBf16, WeightLayout::kOutIn, out, inp, weight, bias, N, IC, OC);
}

void LinearBackwardBf16(float* dinp, float* dweight, float* dbias, const float* dout,
                        const uint16_t* dout16, const uint16_t* inp, const uint16_t* weight,
                        int64_t N, int64_t IC, int64_t OC) {
  internal::LinearLayerBackward(GemmBf16, WeightLayout::kOutIn, dinp, dweight, dbias, dout,
                                dout16, inp, weight, N, IC, OC);
}

}  // namespace accel::kernels
