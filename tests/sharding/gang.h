// Test helper: trains one configuration on N ranks (threads) over real gloo TCP on 127.0.0.1
// and returns what the equivalence, memory and traffic tests compare.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/comm/communicator.h"
#include "engine/train/trainer.h"

namespace accel::testing {

struct GangResult {
  std::vector<float> params;               // rank 0's gathered final parameters
  std::vector<float> losses;               // rank 0's per-step losses (agreed across ranks)
  std::vector<train::StepMetrics> steps;   // rank 0's step records
  std::vector<std::vector<train::EvalMetrics>> evals;  // per rank, its evaluations (eval.data)
  std::vector<std::vector<train::SampleResult>> samples;  // per rank, its samples (rank 0's)
  std::vector<int64_t> compute_peak_bytes;  // per rank, the compute pool's peak over the run
  std::vector<int64_t> model_state_bytes;  // per rank, between steps: params + grads + optimizer
  std::vector<int64_t> host_model_state_bytes;  // the same in the host pool (offload)
  std::vector<int64_t> nvme_model_state_bytes;  // and in the nvme pool (offload to files)
  std::vector<comm::CommStats> stats;      // per rank, world (+ shard + replicate) groups summed
  int64_t num_params = 0;
  int64_t total_padded = 0;  // plan's padded elements (for the padding allowance)
};

// Runs `options.steps` steps on `world` ranks; options.batch is per rank. `as_device`: each
// rank's trainer computes through host ops that say they are a device (CreateHostDeviceOps),
// so every staging path of the GPU backend runs. `node_of_rank`: the placement the
// communicators are told (comm::GlooOptions::node_of_rank; empty: one node).
absl::StatusOr<GangResult> RunGang(const train::TrainOptions& options, int world,
                                   bool as_device = false, std::vector<int> node_of_rank = {});

// `options` (options.steps steps) on `world` ranks twice: straight through, and as two runs —
// the first `stop_at` steps saving a checkpoint into `checkpoint_dir`, then a run resumed from
// it to the end. resumed.losses are the steps after stop_at.
struct ResumeComparison {
  GangResult uninterrupted, resumed;
};
absl::StatusOr<ResumeComparison> RunStraightAndResumed(const train::TrainOptions& options,
                                                       int world, int64_t stop_at,
                                                       const std::string& checkpoint_dir,
                                                       bool as_device = false);

// The sharding tests' inputs in `dir`: data.txt (3000 bytes of a fixed letter pattern) and
// config.json for `config`.
absl::Status WriteGangInputs(const std::string& dir, const model::ModelConfig& config);

// A loss-masked copy of the gang data in `dir` (after WriteGangInputs): masked.txt, the same
// 3000 bytes, and masked.txt.mask (docs/data.md "Loss mask"): runs of counted and masked
// targets of varying length, so micro-batches and ranks count different numbers of targets,
// and 40 masked bytes in a row, so some micro-batches count none. Returns masked.txt's path.
absl::StatusOr<std::string> WriteGangMaskedData(const std::string& dir);

// The sharding tests' small model of each architecture ("gpt2", "llama", "qwen3"), with odd sizes so that
// units need padding at 3 and 4 ranks: GPT-2 L=2, NH=4, C=20, V=256, P=16; a Llama-family model
// with grouped-query attention (4 heads over 2), head_dim 6 ≠ C/NH, q/k/v/o biases and an
// untied head, C=20, I=36, V=256, P=16; "qwen3": the same shape with Qwen3's q/k norms, no
// biases, a tied head and a sliding window of 3 keys on its second layer.
model::ModelConfig SmallModel(const std::string& arch, const std::string& name);

// The sharding tests' training run over the inputs in `dir`: 5 steps of AdamW (lr 1e-2, eps
// 1e-6, decay 0.1), clipping at 1, seq 8, hybrid groups of 2, in `dtype` (params and
// reduction; f32 masters).
train::TrainOptions GangOptions(const std::string& dir, shard::Strategy strategy, int accum,
                                int64_t batch, DType dtype = DType::kF32);

// Euclidean distance between two parameter vectors (double accumulation).
double L2Distance(const std::vector<float>& a, const std::vector<float>& b);

// Resident model-state bytes per rank between steps by the ZeRO formulas, for Ψ parameters on
// `world` ranks, with bytes per element of parameters, reduced gradients and optimizer state
// (fp32: 4, 4, 8; bf16 mixed: 2, 2, 12 with the fp32 master): no_shard keeps all three whole,
// zero1 shards the state, zero2 also the gradients, full_shard everything.
double ZeroModelStateBytes(shard::Strategy strategy, double psi, int world, double param_bytes,
                           double grad_bytes, double state_bytes);

// Bytes each rank sends per step by ring theory (shard::RingTrafficPerStep), elements of
// `element_bytes` over padded units: no_shard's all-reduce or zero1/2's reduce-scatter +
// all-gather, 2Ψ(N-1)/N; full_shard gathers blocks before forward and again before backward,
// the root (kept through the step as FSDP's root is) once, and reduce-scatters once:
// (2·root + 3·blocks)(N-1)/N.
double RingBytesSentPerStep(const model::ModelLayout& layout, int world, shard::Strategy strategy,
                            double element_bytes);

}  // namespace accel::testing
