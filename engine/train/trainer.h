// Trainer: training (any registered architecture) on one rank of a data-parallel gang (or
// alone) — Train() and TrainStep() read top to bottom, and never branch on the sharding strategy.
//
// Owns the ShardedModel (this rank's parameters and gradients under the plan), the activations,
// one AdamW per owned range, the data loader and the LR schedule. A step runs grad_accum
// micro-batches (forward + backward; rank r's micro-step m of step k reads window
// (k·accum + m)·world + r), agrees on the mean loss and the global gradient norm across ranks,
// (with a loss mask: the mean over the step's targets that count on every rank and micro-batch,
// docs/data.md "Loss mask"),
// skips the update on every rank when either is not finite, clips, updates the owned ranges and
// lets the sharded model re-gather what it keeps full.
// Memory: parameters, gradients and optimizer state are charged to the "compute" pool
// (MemoryPool::kDevice; RAM on a CPU-only build), activations likewise.
// Where it computes is the ComputeBackend's choice (model_runner.h): the CPU by default, or a
// device whose DeviceOps hold the sharded model and the optimizer and whose ModelRunner runs
// the model (engine/train/cuda/device_trainer.h builds one for a CUDA GPU). Everything else —
// the step, agreement, clipping, checkpoints, weight loading, statistics — is this class's, for
// both. Host-side agreements (checkpoint outcomes, rank statistics, loading broadcasts) go
// through the world communicator, staged through device memory when the backend's is not host
// memory (shard::CreateStagedCommunicator).
// Not thread-safe; kernels use the OpenMP pool (kernels::SetNumThreads).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/base/memory_ledger.h"
#include "engine/config/train_options.h"
#include "engine/data/batch_loader.h"
#include "engine/model/architecture.h"
#include "engine/optim/adamw.h"
#include "engine/optim/lr_schedule.h"
#include "engine/shard/sharded_model.h"
#include "engine/generate/training_sample.h"
#include "engine/train/evaluation.h"
#include "engine/train/loss_scaler.h"
#include "engine/train/metrics.h"
#include "engine/train/model_runner.h"
#include "engine/train/sampling.h"

namespace accel::train {

// The engine's options are the lowering's output (engine/config/train_options.h): one struct
// from config file to Trainer.
using TrainOptions = config::TrainOptions;
using config::ModelConfigOf;
using config::ValidateTrainOptions;

// What a checkpoint save did, for the metrics stream and acceld.
struct CheckpointEvent {
  int64_t step = 0;
  std::string path;
  std::string kind;      // "sharded", "full", "16bit", "sharded+16bit" (docs/checkpoint_format.md)
  int64_t bytes = 0;     // all ranks' files together (rank files, model file, config.json)
  std::vector<int64_t> rank_bytes;  // bytes written by each rank, indexed by rank
  double seconds = 0;
  // The eval loss of this step's weights, when an evaluation of this step ran before the save.
  std::optional<double> eval_loss;
};

// The tokens of options.data; a one-line InvalidArgument naming the file, its largest token id
// and config's vocab_size when that id is not below vocab_size.
[[nodiscard]] absl::StatusOr<std::shared_ptr<const data::TokenSource>> OpenTrainingTokens(
    Env* env, const TrainOptions& options, const model::ModelConfig& config);
// The same for any token file, the error naming `what` ("data", "eval.data") and the file.
[[nodiscard]] absl::StatusOr<std::shared_ptr<const data::TokenSource>> OpenTokens(
    Env* env, const std::string& path, const std::string& what,
    const model::ModelConfig& config);
// The batch loader of `rank` in a gang of `world` over `source` (from OpenTrainingTokens).
[[nodiscard]] absl::StatusOr<std::unique_ptr<data::BatchLoader>> OpenTrainingData(
    std::shared_ptr<const data::TokenSource> source, const TrainOptions& options, int rank,
    int world);

// Fills m's step_seconds, tokens_per_s (from m->tokens), elapsed and ETA once `steps_done` of
// `total_steps` are done; adds the step to *elapsed_seconds.
void FinishStepTiming(int64_t start_micros, int64_t now_micros, int64_t steps_done,
                      int64_t total_steps, double* elapsed_seconds, StepMetrics* m);

class Trainer {
 public:
  // Validates the options, builds the model, loads or initialises the weights and opens the
  // data. Errors name the option, file or tensor at fault.
  // groups: this rank's communicators (over memory of the backend's kind); an empty
  // ProcessGroups trains alone (world of one, host backends only). `backend` (model_runner.h):
  // the CPU when default.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Trainer>> Create(
      const TrainOptions& options, shard::ProcessGroups groups = {}, Env* env = Env::Default(),
      MemoryLedger* ledger = nullptr, ComputeBackend backend = {});

  // Runs the remaining steps, calling on_step after each, on_eval after each evaluation
  // (options().eval: at_start before the first step of a fresh run, every_n_steps, at_end; an
  // evaluation due at a step runs before that step's checkpoint save), on_sample after each
  // sample on rank 0 (options().sample: every N steps and the last, after the step's
  // evaluation, before its save) and on_checkpoint after each save.
  [[nodiscard]] absl::Status Train(
      const std::function<absl::Status(const StepMetrics&)>& on_step,
      const std::function<absl::Status(const CheckpointEvent&)>& on_checkpoint = nullptr,
      const std::function<absl::Status(const EvalMetrics&)>& on_eval = nullptr,
      const std::function<absl::Status(const SampleResult&)>& on_sample = nullptr);
  // One evaluation of the current weights on options().eval.data (evaluation.h): forward only,
  // nothing a step keeps changes. Collective: every rank must call it. FailedPrecondition
  // without eval data.
  [[nodiscard]] absl::StatusOr<EvalMetrics> Evaluate();
  // One sample of the current weights (sampling.h): the result on rank 0, nullopt on the
  // others; rank 0 hands it to `on_sample` before the ranks go on. However long rank 0 takes
  // (generation and on_sample), the others wait for it under its heartbeat
  // (sample_heartbeat.h), not under the communicator's deadline. Collective: every rank must
  // call it. FailedPrecondition without sample.every; on the other ranks, Aborted when rank 0's
  // sample failed.
  [[nodiscard]] absl::StatusOr<std::optional<SampleResult>> Sample(
      const std::function<absl::Status(const SampleResult&)>& on_sample = nullptr);
  // The latest evaluation, if any.
  const std::optional<EvalMetrics>& last_eval() const { return last_eval_; }
  // One optimizer step.
  [[nodiscard]] absl::StatusOr<StepMetrics> TrainStep();

  // Saves a checkpoint of the current step into `dir` (DIR/step_N, DIR/latest) of the kind
  // options().state_dict_type / save_16bit ask for. Collective: every rank must call it; a rank
  // that calls it alone gets the communicator's DeadlineExceeded / Unavailable, annotated.
  // Sharded: every rank writes its own ranges. Full / 16-bit: gathered unit by unit, rank 0
  // streams model.safetensors (sharded above options().max_shard_bytes). Rank 0 commits; every
  // rank returns the same outcome.
  [[nodiscard]] absl::StatusOr<CheckpointEvent> SaveCheckpoint(const std::string& dir,
                                                               int keep_last);
  // Loads DIR's latest checkpoint into this rank's ranges and continues from its step.
  // A model-only step ("full" / "16bit", not written by the trainer) is FailedPrecondition.
  // Collective.
  [[nodiscard]] absl::Status Resume(const std::string& dir);

  // Gathers the full parameters (layout order) on every rank. Collective.
  [[nodiscard]] absl::StatusOr<std::vector<float>> GatherParams();
  // Writes the parameters as a Hugging Face model.safetensors (+ config.json beside it) from
  // rank 0; above options().max_shard_bytes, the sharded form in path's directory instead
  // (model-0000k-of-0000n.safetensors + model.safetensors.index.json). Collective: every rank
  // must call it.
  [[nodiscard]] absl::Status SaveWeights(const std::string& path, DType dtype = DType::kF32);

  const model::ModelLayout& layout() const { return *layout_; }
  const TrainOptions& options() const { return options_; }
  const shard::ShardedModel& sharded() const { return *sharded_; }
  // use_orig_params: every parameter by name, as a view into what this rank updates.
  std::vector<shard::ParamView> NamedParameters() { return sharded_->ParamViews(); }
  const std::string& device() const { return backend_.device; }
  // With bf16 parameters: how the matmuls run here and why ("bf16 (oneDNN avx512_core_bf16:
  // 1.74x the fp32 GEMM here, measured)"); empty otherwise (ModelRunnerResult::matmuls).
  const std::string& matmuls() const { return matmuls_; }
  // The world communicator for host-memory values (a staged view of the world on a device).
  comm::Communicator* host_world() const { return host_world_; }
  int rank() const { return groups_.world->rank(); }
  int world() const { return groups_.world->size(); }
  int64_t step() const { return step_; }
  const LossScaler& loss_scaler() const { return scaler_; }
  MemoryLedger* ledger() const { return ledger_; }

 private:
  Trainer() = default;
  absl::StatusOr<std::vector<RankStats>> CollectRankStats(double comm_wait_seconds);
  // Fills the step's micro-batches into inputs_ / targets_ (micro-batch m at m·B·T), counts the
  // targets that count in each (micro_targets_) and returns the step's count over every rank
  // (one small all-gather). Without a loss mask: B·T·accum·world, with no collective.
  [[nodiscard]] absl::StatusOr<int64_t> FillStep();
  // weight_loading.cc: the initial weights by options_ (seeded or --init-weights; default,
  // sync_module_states, cpu_ram_efficient_loading, zero3_init).
  [[nodiscard]] absl::Status InitWeights();
  // Every rank reads only its HeldRange of each unit from a Hugging Face safetensors file.
  [[nodiscard]] absl::Status LoadHeldRanges(const std::string& path);
  // checkpointing.cc: gathers the parameters unit by unit (collective) and hands each unit to
  // `sink` on rank 0; memory beyond the model is one unit. A sink error is returned after the
  // last unit (the gathers go on, so no rank is left waiting).
  [[nodiscard]] absl::Status GatherUnits(
      const std::function<absl::Status(int unit, const float* values)>& sink);
  // checkpoint_dir.cc: rank 0 checks (claim: and claims) that `dir` is
  // options_.checkpoint_owner's and tells the others; every rank returns the same outcome, a
  // refusal naming the directory's owner. Collective: a failed broadcast comes back as the
  // communicator's Unavailable / DeadlineExceeded, unannotated, for the caller to annotate.
  [[nodiscard]] absl::Status AgreeOnCheckpointDir(const std::string& dir, bool claim);
  // evaluation.cc: the eval set's loader (none without options_.eval.data).
  [[nodiscard]] absl::Status OpenEvalData(const model::ModelConfig& config);
  // sampling.cc: rank 0's sampler (none without options_.sample or on other ranks).
  [[nodiscard]] absl::Status OpenSampler(const model::ModelConfig& config);
  // sampling.cc: rank 0's generation on the gathered parameters `full`.
  [[nodiscard]] absl::StatusOr<SampleResult> SampleOnRankZero(const float* full);

  TrainOptions options_;
  Env* env_ = nullptr;
  MemoryLedger* ledger_ = nullptr;
  ComputeBackend backend_;
  std::unique_ptr<model::ModelLayout> layout_;
  std::unique_ptr<comm::Communicator> self_comm_;  // when training alone
  shard::ProcessGroups groups_;
  // Host-memory collectives of the trainer's own: the sharded model's host view of the world.
  comm::Communicator* host_world_ = nullptr;
  std::unique_ptr<shard::ShardedModel> sharded_;
  // NVMe offload: the update's transfers and staging buffers (AdamW::set_stream).
  std::unique_ptr<shard::TileStream> offload_stream_;
  std::vector<optim::AdamW> optimizers_;  // one per owned range; after sharded_ (its ops)
  std::unique_ptr<ModelRunner> runner_;
  std::string matmuls_;
  std::unique_ptr<data::BatchLoader> loader_;
  std::unique_ptr<data::BatchLoader> eval_loader_;  // one rank's view: every batch, in order
  std::optional<EvalMetrics> last_eval_;
  std::unique_ptr<generate::TrainingSampler> sampler_;  // rank 0's, with options_.sample
  std::vector<int32_t> inputs_, targets_;  // the step's accum micro-batches, (accum, B, T)
  std::vector<int64_t> micro_targets_;     // per micro-batch: targets != kIgnoreIndex
  LossScaler scaler_;  // enabled under fp16 only
  // Communicator totals at the last stats record.
  int64_t stats_sent_ = 0, stats_received_ = 0, stats_sent_cross_node_ = 0;
  int64_t step_ = 0;
  // Steps whose update was applied: the LR schedule's position. A skipped (overflowing) step
  // does not advance it, as Accelerate's scheduler wrapper and DeepSpeed's engine skip it.
  int64_t applied_steps_ = 0;
  double elapsed_seconds_ = 0;
  // The checkpoint directories this trainer has claimed (AgreeOnCheckpointDir): a save into
  // one of them needs no new agreement.
  std::vector<std::string> claimed_dirs_;
};

}  // namespace accel::train
