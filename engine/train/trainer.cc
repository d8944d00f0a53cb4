#include "engine/train/trainer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/hf_weights.h"
#include "engine/comm/self_communicator.h"
#include "engine/data/token_source.h"
#include "engine/train/dataset_phase.h"
#include "engine/base/logging.h"
#include "engine/kernels/adamw.h"
#include "engine/kernels/cross_entropy.h"
#include "engine/optim/clip.h"

namespace accel::train {

absl::StatusOr<std::shared_ptr<const data::TokenSource>> OpenTrainingTokens(
    Env* env, const TrainOptions& options, const model::ModelConfig& config) {
  return OpenTokens(env, options.data, "data", config);
}

absl::StatusOr<std::shared_ptr<const data::TokenSource>> OpenTokens(
    Env* env, const std::string& path, const std::string& what,
    const model::ModelConfig& config) {
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<data::TokenSource> opened,
                         data::TokenSource::Open(env, path));
  std::shared_ptr<const data::TokenSource> source = std::move(opened);
  if (source->max_token() >= config.vocab_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " file ", path, ": token id ", source->max_token(),
        " (the largest in the file) is not below the model's vocab_size ", config.vocab_size(),
        " (model ", config.name(), ")"));
  }
  return source;
}

absl::StatusOr<std::unique_ptr<data::BatchLoader>> OpenTrainingData(
    std::shared_ptr<const data::TokenSource> source, const TrainOptions& options, int rank,
    int world) {
  data::BatchLoaderOptions lo;
  lo.batch_size = options.batch;
  lo.seq_len = options.seq;
  lo.rank = rank;
  lo.world = world;
  lo.shuffle_seed = options.shuffle_seed;
  return data::BatchLoader::Create(std::move(source), lo);
}

void FinishStepTiming(int64_t start_micros, int64_t now_micros, int64_t steps_done,
                      int64_t total_steps, double* elapsed_seconds, StepMetrics* m) {
  m->step_seconds = static_cast<double>(now_micros - start_micros) * 1e-6;
  m->tokens_per_s = m->step_seconds > 0 ? static_cast<double>(m->tokens) / m->step_seconds : 0;
  *elapsed_seconds += m->step_seconds;
  m->elapsed_seconds = *elapsed_seconds;
  m->eta_seconds = *elapsed_seconds / static_cast<double>(steps_done) *
                   static_cast<double>(total_steps - steps_done);
}

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const TrainOptions& options,
                                                         shard::ProcessGroups groups, Env* env,
                                                         MemoryLedger* ledger,
                                                         ComputeBackend backend) {
  ACCEL_RETURN_IF_ERROR(ValidateTrainOptions(options));
  std::unique_ptr<Trainer> t(new Trainer());
  t->options_ = options;
  t->options_.schedule.total_steps = options.steps;
  t->env_ = env;
  t->ledger_ = ledger != nullptr ? ledger : MemoryLedger::Default();
  if (!backend.runner) backend.runner = CreateCpuModelRunner;
  t->backend_ = std::move(backend);
  if (groups.world == nullptr) {
    if (t->backend_.ops != nullptr && !t->backend_.ops->host_addressable()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a trainer on ", t->backend_.device, " needs its communicators (a world of one too)"));
    }
    t->self_comm_ = comm::CreateSelfCommunicator();
    groups = {t->self_comm_.get(), t->self_comm_.get(), nullptr};
  }
  t->groups_ = groups;
  const int rank = groups.world->rank(), world = groups.world->size();

  ACCEL_ASSIGN_OR_RETURN(model::ModelConfig config, ModelConfigOf(env, options));
  // Text, JSONL or chat data the cache does not hold yet: rank 0 prepares it (dataset_phase.h).
  ACCEL_RETURN_IF_ERROR(PrepareDatasetIfMissing(options, rank, env));
  // The data's ids against the model's vocabulary as soon as both are known: before any model
  // memory is allocated or weights are read.
  ACCEL_ASSIGN_OR_RETURN(std::shared_ptr<const data::TokenSource> tokens,
                         OpenTrainingTokens(env, options, config));
  ACCEL_RETURN_IF_ERROR(t->OpenEvalData(config));
  ACCEL_RETURN_IF_ERROR(t->OpenSampler(config));
  ACCEL_ASSIGN_OR_RETURN(model::ModelLayout layout, model::ModelLayout::Create(config));
  t->layout_ = std::make_unique<model::ModelLayout>(std::move(layout));

  // Shapes first: the plan is validated before any model memory exists.
  ACCEL_ASSIGN_OR_RETURN(shard::ShardPlan plan,
                         shard::ShardPlan::Create(*t->layout_, world, rank, options.shard));
  ACCEL_ASSIGN_OR_RETURN(t->sharded_,
                         shard::ShardedModel::Create(t->layout_.get(), std::move(plan), groups,
                                                     absl::Seconds(300), t->ledger_,
                                                     t->backend_.ops));
  t->host_world_ = t->sharded_->host_world();
  // Another job's checkpoint directory is refused now, not after the steps before the first
  // save (the claim itself comes with that save: checkpointing.cc).
  if (!options.checkpoint_dir.empty()) {
    absl::Status owned = t->AgreeOnCheckpointDir(options.checkpoint_dir, /*claim=*/false);
    if (absl::IsUnavailable(owned) || absl::IsDeadlineExceeded(owned)) {
      return Annotate(owned, absl::StrCat("checking the owner of checkpoint.dir ",
                                          options.checkpoint_dir, " (rank ", rank, ")"));
    }
    ACCEL_RETURN_IF_ERROR(owned);
  }
  ACCEL_RETURN_IF_ERROR(t->InitWeights());  // weight_loading.cc
  if (options.shard.param_dtype == DType::kF16 || options.shard.reduce_dtype == DType::kF16) {
    t->scaler_ = LossScaler(options.loss_scaling);
  }
  optim::AdamWConfig adamw = options.adamw;
  // Low precision keeps the moments in the parameters' bf16 too (DESIGN.md §3.2).
  if (t->sharded_->low_precision()) adamw.state_dtype = DType::kBF16;
  ACCEL_ASSIGN_OR_RETURN(t->offload_stream_, t->sharded_->CreateUpdateStream(t->ledger_));
  for (const shard::OwnedRange& r : t->sharded_->OwnedRanges()) {
    ACCEL_ASSIGN_OR_RETURN(optim::AdamW opt,
                           optim::AdamW::Create(*t->layout_, r.flat_begin, r.flat_end, adamw,
                                                &t->sharded_->optimizer_ops()));
    // State in files: the update streams through it tile by tile.
    if (t->offload_stream_ != nullptr) {
      opt.set_stream_tile(options.shard.offload_tile_numel);
      opt.set_stream(t->offload_stream_.get());
    }
    t->optimizers_.push_back(std::move(opt));
  }
  ModelRunnerOptions ro;
  ro.batch = options.batch;
  ro.seq = options.seq;
  ro.bf16_params = options.shard.param_dtype == DType::kBF16;
  ro.checkpoint_blocks = options.activation_checkpointing;
  ro.ledger = t->ledger_;
  ACCEL_ASSIGN_OR_RETURN(ModelRunnerResult runner, t->backend_.runner(t->layout_.get(), ro));
  t->runner_ = std::move(runner.runner);
  t->matmuls_ = std::move(runner.matmuls);
  if (runner.bf16_matmuls) {
    // The model reads the blocks' matmul weights only in bf16: their fp32 copies are skipped.
    t->sharded_->SkipFp32Copy(model::Bf16OnlyWeightRanges(*t->layout_));
  }

  ACCEL_ASSIGN_OR_RETURN(t->loader_, OpenTrainingData(std::move(tokens), options, rank, world));
  t->inputs_.resize(options.grad_accum * options.batch * options.seq);
  t->targets_.resize(options.grad_accum * options.batch * options.seq);
  t->micro_targets_.resize(options.grad_accum);
  if (!options.resume_dir.empty()) ACCEL_RETURN_IF_ERROR(t->Resume(options.resume_dir));
  // NVMe offload: what loading wrote goes to the files before training starts.
  ACCEL_RETURN_IF_ERROR(t->sharded_->EvictOffloaded());
  return t;
}

absl::StatusOr<int64_t> Trainer::FillStep() {
  const int accum = static_cast<int>(options_.grad_accum);
  const int64_t bt = options_.batch * options_.seq;
  int64_t mine = 0;
  for (int micro = 0; micro < accum; ++micro) {
    int32_t* targets = targets_.data() + micro * bt;
    loader_->Fill(step_ * accum + micro, inputs_.data() + micro * bt, targets);
    micro_targets_[micro] = kernels::CountLossTargets(targets, bt);
    mine += micro_targets_[micro];
  }
  // Every rank reads the same file, so every rank takes the same branch.
  if (!loader_->source().has_mask()) return mine * world();
  ACCEL_ASSIGN_OR_RETURN(const double all, sharded_->SumOverRanks(static_cast<double>(mine)));
  return static_cast<int64_t>(all);
}

absl::StatusOr<StepMetrics> Trainer::TrainStep() {
  const int64_t start = env_->NowMicros();
  const int accum = static_cast<int>(options_.grad_accum);
  const int64_t bt = options_.batch * options_.seq;
  shard::ShardedModel& sharded = *sharded_;
  ACCEL_RETURN_IF_ERROR(sharded.ZeroGrads());
  sharded.set_loss_scale(scaler_.scale());
  // The step's loss is the mean over its targets that count, on every rank and micro-batch
  // (Hugging Face's num_items_in_batch): micro-batch m's mean loss is weighted by its count n_m
  // over the step's count N (dloss = scale · n_m / N). With nothing masked that is 1/(accum·world):
  // today's arithmetic is kept, bit for bit. N = 0 (all masked): zero loss and gradients.
  ACCEL_ASSIGN_OR_RETURN(const int64_t step_targets, FillStep());
  const bool masked = step_targets != accum * bt * world();
  double loss_sum = 0;
  for (int micro = 0; micro < accum; ++micro) {
    sharded.BeginMicroStep(micro, accum);
    const int32_t* inputs = inputs_.data() + micro * bt;
    const int32_t* targets = targets_.data() + micro * bt;
    const double weight = step_targets == 0 ? 0.0
                                            : static_cast<double>(micro_targets_[micro]) /
                                                  static_cast<double>(step_targets);
    ACCEL_ASSIGN_OR_RETURN(float loss, runner_->Forward(sharded, inputs, targets));
    ACCEL_RETURN_IF_ERROR(runner_->Backward(
        sharded, inputs, targets,
        masked ? static_cast<float>(scaler_.scale() * weight) : sharded.GradScale(accum)));
    ACCEL_RETURN_IF_ERROR(sharded.EndMicroStep(micro, accum));
    loss_sum += masked ? loss * weight : loss;
  }
  StepMetrics m;
  m.step = step_;
  m.total_steps = options_.steps;
  if (loader_->source().has_mask()) m.loss_targets = step_targets;
  if (step_targets == 0 && rank() == 0) {
    ACCEL_LOG(warn, "step {}: every target of the step is masked; loss and gradients are zero "
                    "(the optimizer still steps)", step_);
  }
  // Agreed on every rank: the mean loss and the global norm are all-gathered values.
  ACCEL_ASSIGN_OR_RETURN(double mean_loss, masked ? sharded.SumOverRanks(loss_sum)
                                                  : sharded.MeanOverRanks(loss_sum / accum));
  ACCEL_ASSIGN_OR_RETURN(double norm_squared, sharded.GradNormSquared());
  m.loss = static_cast<float>(mean_loss);
  m.lr = options_.schedule.LrAt(applied_steps_);
  m.grad_norm = std::sqrt(norm_squared);
  m.loss_scale = scaler_.scale();
  // Under fp16 an overflow (a non-finite norm of the unscaled gradients) is expected now and
  // then: the scaler skips the step and lowers the scale. Every rank sees the same norm.
  m.skipped = scaler_.Update(std::isfinite(m.grad_norm)) || !std::isfinite(m.loss);
  if (!m.skipped) {
    m.clip_scale = optim::ClipScale(m.grad_norm, options_.grad_clip);
    std::vector<shard::OwnedRange> ranges = sharded.OwnedRanges();
    for (size_t i = 0; i < ranges.size(); ++i) {
      if (ranges[i].params16 != nullptr) {
        ACCEL_RETURN_IF_ERROR(
            optimizers_[i].StepBf16(ranges[i].params16, ranges[i].grads, m.lr, m.clip_scale));
      } else {
        ACCEL_ASSIGN_OR_RETURN(const shard::TileHook hook, sharded.BeforeRangeUpdate(ranges[i]));
        ACCEL_RETURN_IF_ERROR(
            optimizers_[i].Step(ranges[i].params, ranges[i].grads, m.lr, m.clip_scale, &hook));
      }
      ACCEL_RETURN_IF_ERROR(sharded.RangeUpdated(ranges[i]));
    }
    ++applied_steps_;
  }
  ACCEL_RETURN_IF_ERROR(sharded.FinishStep());
  // A device's queued work belongs to this step's time (the host: nothing to wait for).
  ACCEL_RETURN_IF_ERROR(sharded.ops().Synchronize());
  ++step_;
  m.comm_wait_seconds = sharded.TakeCommWaitSeconds();
  const int64_t every = options_.rank_stats_every;
  if (every > 0 && (step_ % every == 0 || step_ == options_.steps)) {
    ACCEL_ASSIGN_OR_RETURN(m.ranks, CollectRankStats(m.comm_wait_seconds));
  }
  m.tokens = static_cast<int64_t>(accum) * options_.batch * options_.seq * world();
  FinishStepTiming(start, env_->NowMicros(), step_, options_.steps, &elapsed_seconds_, &m);
  return m;
}

absl::StatusOr<std::vector<RankStats>> Trainer::CollectRankStats(double comm_wait_seconds) {
  RankStats mine = RankStats::FromLedger(rank(), *ledger_);
  int64_t sent = 0, received = 0, cross = 0;
  // Non-hybrid plans use the world communicator as the shard group: count each one once.
  std::vector<comm::Communicator*> distinct = {groups_.world};
  for (comm::Communicator* c : {groups_.shard, groups_.replicate}) {
    if (c != nullptr && c != groups_.world) distinct.push_back(c);
  }
  for (comm::Communicator* c : distinct) {
    const comm::CommStats s = c->stats();
    sent += s.total_sent();
    received += s.total_received();
    cross += s.total_sent_cross_node();
  }
  mine.bytes_sent = sent - stats_sent_;
  mine.bytes_received = received - stats_received_;
  mine.bytes_sent_cross_node = cross - stats_sent_cross_node_;
  stats_sent_cross_node_ = cross;
  mine.comm_wait_seconds = comm_wait_seconds;
  stats_sent_ = sent;
  stats_received_ = received;
  return GatherRankStats(host_world_, mine, absl::Seconds(300));
}

absl::Status Trainer::Train(
    const std::function<absl::Status(const StepMetrics&)>& on_step,
    const std::function<absl::Status(const CheckpointEvent&)>& on_checkpoint,
    const std::function<absl::Status(const EvalMetrics&)>& on_eval,
    const std::function<absl::Status(const SampleResult&)>& on_sample) {
  auto evaluate = [&]() -> absl::Status {
    ACCEL_ASSIGN_OR_RETURN(const EvalMetrics e, Evaluate());
    return on_eval ? on_eval(e) : absl::OkStatus();
  };
  if (options_.eval.at_start && eval_loader_ != nullptr && step_ == 0) {
    ACCEL_RETURN_IF_ERROR(evaluate());
  }
  int64_t nonfinite_run = 0;  // consecutive steps skipped for a non-finite loss or norm
  while (step_ < options_.steps) {
    ACCEL_ASSIGN_OR_RETURN(StepMetrics m, TrainStep());
    if (on_step) ACCEL_RETURN_IF_ERROR(on_step(m));
    nonfinite_run = m.skipped && !scaler_.enabled() ? nonfinite_run + 1 : 0;
    if (options_.max_nonfinite_steps > 0 && nonfinite_run >= options_.max_nonfinite_steps) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the run cannot learn: steps ", m.step + 2 - nonfinite_run, " to ", m.step + 1,
          " had a non-finite loss or gradient norm (last: loss ", m.loss, ", grad norm ",
          m.grad_norm, ") and were skipped; check the learning rate and optimizer settings, "
          "the initial weights and the data (max_nonfinite_steps ",
          options_.max_nonfinite_steps, ")"));
    }
    if (EvalDue(options_.eval, step_, options_.steps)) ACCEL_RETURN_IF_ERROR(evaluate());
    if (SampleDue(options_.sample, step_, options_.steps)) {
      ACCEL_RETURN_IF_ERROR(Sample(on_sample).status());
    }
    if (options_.checkpoint_every > 0 && !options_.checkpoint_dir.empty() &&
        step_ % options_.checkpoint_every == 0) {
      ACCEL_ASSIGN_OR_RETURN(CheckpointEvent e,
                             SaveCheckpoint(options_.checkpoint_dir, options_.keep_last));
      if (on_checkpoint) ACCEL_RETURN_IF_ERROR(on_checkpoint(e));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> Trainer::GatherParams() {
  std::vector<float> full(layout_->num_params());
  ACCEL_RETURN_IF_ERROR(sharded_->GatherFull(full.data()));
  return full;
}

// SaveWeights (unit by unit) is in checkpointing.cc.

}  // namespace accel::train
