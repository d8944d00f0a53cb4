// How a process decides, once, whether bf16 mixed precision multiplies its bf16 operands as bf16
// (oneDNN's bf16 kernels) or as fp32 copies (the fp32 GEMM): the decision behind
// kernels::ChosenBf16Matmul() (matmul_bf16.h), split out so its rules are tested without a CPU
// of each kind.
//
// The rules, in order:
//   1. ACCEL_BF16_MATMUL=1 / =0 in the environment forces bf16 / fp32 (tests, comparisons).
//   2. A CPU whose oneDNN ISA has no bf16 dot products (no AVX512_BF16, no AMX) uses fp32: oneDNN
//      has no bf16 kernel there and the widened path is slower than fp32 copies.
//   3. Otherwise the two GEMMs are timed on this host, on a GPT-2-sized linear layer (forward and
//      weight gradient), and bf16 is used when it is at least kMinSpeedup (1.10) times faster. Having the
//      instruction is not enough: on an AVX512_BF16 Xeon without AMX oneDNN 2.6's bf16 kernel ran
//      at a fifth of the fp32 FMA rate and bf16 training at 0.68x fp32 (issue 33). The measurement
//      is cached per host (CPU model, ISA flags, oneDNN version, thread count) in a small file,
//      so only a host's first rank pays for it (about 50 ms).
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/kernels/matmul_bf16.h"

namespace accel::kernels::internal {

// Where the two paths break even. Measured on an AVX512_BF16 EPYC (gpt2, 2 threads): the
// matmuls are about 70% of an fp32 step, and the rest of the step costs about the same on both
// paths (the native one rounds matmul inputs to bf16, the other widens bf16 parameters to fp32
// copies), so native wins from a GEMM speedup of about 1.05x; 1.10x leaves the timing's noise a
// margin (docs/performance.md, "bf16 matmuls: chosen per machine").
inline constexpr double kMinSpeedup = 1.10;

struct Bf16ChoiceInputs {
  std::string override_value;  // ACCEL_BF16_MATMUL's value; "" when unset
  bool bf16_isa = false;       // oneDNN's effective ISA has AVX512_BF16 or AMX
  std::string isa_name;        // for the reason line: "avx512_core_bf16", "avx2", ...
  std::string host_key;        // what the measurement depends on; the cache entry's key
  std::string cache_dir;       // "" : no cache (measure every time)
  Env* env = nullptr;          // for the cache file
  // Times both GEMMs here: fp32 time / bf16 time (> 1: bf16 faster).
  std::function<absl::StatusOr<double>()> measure;
};

Bf16MatmulChoice ChooseBf16Matmul(const Bf16ChoiceInputs& inputs);

// What ChosenBf16Matmul() passes: this process's environment, oneDNN's ISA, this host's key
// (model name and flags from /proc/cpuinfo, oneDNN's version, kernels::NumThreads()), the cache
// directory ($XDG_CACHE_HOME/accel/cpu, else ~/.cache/accel/cpu) and the real measurement.
Bf16ChoiceInputs ThisHostsBf16ChoiceInputs();

// The real measurement: best of five runs of each GEMM at 256x768x768, forward (NN) and weight
// gradient (TN) shapes, fp32 (Gemm) against bf16 (oneDNN's bf16 matmul), at the current thread
// count. Returns fp32 time / bf16 time.
absl::StatusOr<double> MeasureBf16OverFp32();

}  // namespace accel::kernels::internal
