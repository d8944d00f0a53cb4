#include "engine/train/cuda/device_trainer.h"

#include <cuda_runtime.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/full_model_writer.h"
#include "engine/checkpoint/hf_gpt2.h"
#include "engine/comm/in_memory_store.h"
#include "engine/kernels/cuda/device.h"
#include "engine/kernels/cuda/kernels.h"
#include "engine/model/param_specs.h"
#include "engine/optim/clip.h"
#include "engine/shard/cuda/nccl_process_groups.h"

namespace accel::train {
namespace {

constexpr absl::Duration kCommTimeout = absl::Seconds(300);

// What the device path cannot do yet, named by option.
absl::Status CheckSupported(const TrainOptions& o) {
  auto refuse = [](const char* what) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is not supported on the cuda device yet (docs/gpu.md)"));
  };
  if (o.shard.master_dtype != DType::kF32) return refuse("low precision (bf16 without masters)");
  if (!o.checkpoint_dir.empty() || !o.resume_dir.empty()) return refuse("checkpointing");
  if (o.cpu_ram_efficient_loading) return refuse("cpu_ram_efficient_loading");
  if (o.zero3_init) return refuse("zero3_init");
  return absl::OkStatus();
}

}  // namespace

absl::Status DeviceTrainer::CheckOptions(const TrainOptions& options) {
  ACCEL_RETURN_IF_ERROR(ValidateTrainOptions(options));
  return CheckSupported(options);
}

absl::StatusOr<std::unique_ptr<DeviceTrainer>> DeviceTrainer::Create(const TrainOptions& options,
                                                                     shard::ProcessGroups groups,
                                                                     int device, Env* env) {
  ACCEL_RETURN_IF_ERROR(CheckOptions(options));
  const std::vector<cuda::DeviceInfo> devices = cuda::ListDevices();
  if (device < 0 || device >= static_cast<int>(devices.size())) {
    return absl::UnavailableError(absl::StrCat("no CUDA device ", device, " (", devices.size(),
                                               " visible)"));
  }
  ACCEL_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  std::unique_ptr<DeviceTrainer> t(new DeviceTrainer());
  t->options_ = options;
  t->options_.schedule.total_steps = options.steps;
  t->env_ = env;
  t->device_ = device;
  ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&t->stream_, cudaStreamNonBlocking));
  t->allocator_ =
      std::make_unique<cuda::CachingAllocator>(cuda::CudaRawAllocator(device), &t->ledger_);
  ACCEL_ASSIGN_OR_RETURN(t->ops_, shard::CudaDeviceOps::Create(t->allocator_.get(), t->stream_));
  if (groups.world == nullptr) {
    comm::InMemoryStore store;
    comm::NcclOptions nccl;
    nccl.timeout = kCommTimeout;
    ACCEL_ASSIGN_OR_RETURN(t->own_groups_,
                           shard::CreateNcclProcessGroups(&store, "solo", 0, 1, device,
                                                          options.shard, nccl));
    groups = t->own_groups_.view();
  }
  t->groups_ = groups;
  const int rank = groups.world->rank(), world = groups.world->size();

  ACCEL_ASSIGN_OR_RETURN(model::Gpt2Config config, ModelConfigOf(env, options));
  ACCEL_ASSIGN_OR_RETURN(model::Gpt2Layout layout, model::Gpt2Layout::Create(config));
  t->layout_ = std::make_unique<model::Gpt2Layout>(std::move(layout));
  ACCEL_ASSIGN_OR_RETURN(t->blas_, cuda::Blas::Create(&t->ledger_));
  t->model_ = std::make_unique<model::Gpt2Cuda>(t->layout_.get(), t->blas_.get(), t->stream_);

  // Shapes first: the plan is validated before any model memory exists.
  ACCEL_ASSIGN_OR_RETURN(shard::ShardPlan plan,
                         shard::ShardPlan::Create(*t->layout_, world, rank, options.shard));
  ACCEL_ASSIGN_OR_RETURN(t->sharded_,
                         shard::ShardedModel::Create(t->layout_.get(), std::move(plan), groups,
                                                     kCommTimeout, &t->ledger_, t->ops_.get()));
  ACCEL_RETURN_IF_ERROR(t->InitWeights());
  if (options.shard.param_dtype == DType::kF16 || options.shard.reduce_dtype == DType::kF16) {
    t->scaler_ = LossScaler(options.loss_scaling);
  }
  for (const shard::OwnedRange& r : t->sharded_->OwnedRanges()) {
    const size_t bytes = static_cast<size_t>(r.flat_end - r.flat_begin) * sizeof(float);
    RangeState state;
    ACCEL_ASSIGN_OR_RETURN(state.m, t->ops_->Allocate(bytes, MemoryCategory::kOptimizerState));
    ACCEL_ASSIGN_OR_RETURN(state.v, t->ops_->Allocate(bytes, MemoryCategory::kOptimizerState));
    state.decay = optim::AdamW::DecayRanges(*t->layout_, r.flat_begin, r.flat_end);
    t->ranges_.push_back(std::move(state));
  }
  // bf16 parameters are multiplied as bf16 (tensor cores); the fp32 copy then skips the
  // blocks' matmul weights, which the model reads only through ParamsBf16.
  const bool bf16_matmuls = options.shard.param_dtype == DType::kBF16;
  ACCEL_ASSIGN_OR_RETURN(auto acts, model::Gpt2CudaActivations::Create(
                                        config, options.batch, options.seq, t->allocator_.get(),
                                        t->stream_, bf16_matmuls));
  t->acts_.emplace(std::move(acts));
  if (bf16_matmuls) {
    const model::Gpt2 cpu_model(t->layout_.get());  // owns the list of matmul weight ranges
    std::vector<std::vector<std::pair<int64_t, int64_t>>> skip(t->layout_->num_units());
    for (int u = 0; u < t->layout_->num_units(); ++u) skip[u] = cpu_model.MatmulWeightRanges(u);
    t->sharded_->SkipFp32Copy(std::move(skip));
  }
  ACCEL_ASSIGN_OR_RETURN(t->loader_, OpenTrainingData(env, options, config, rank, world));
  t->inputs_.resize(options.batch * options.seq);
  t->targets_.resize(options.batch * options.seq);
  return t;
}

DeviceTrainer::~DeviceTrainer() {
  if (stream_ == nullptr) return;
  (void)cudaSetDevice(device_);
  (void)cudaStreamSynchronize(stream_);
  // Device memory goes back to the allocator before it, the communicators before the ops, and
  // the allocator before the stream it caches for.
  ranges_.clear();
  acts_.reset();
  sharded_.reset();
  own_groups_ = shard::OwnedProcessGroups();
  ops_.reset();
  allocator_.reset();
  (void)cudaStreamDestroy(stream_);
}

absl::Status DeviceTrainer::InitWeights() {
  const TrainOptions& o = options_;
  std::vector<float> full(layout_->num_params());
  const bool read_here = !o.sync_module_states || rank() == 0;
  if (read_here && o.init_weights.empty()) {
    model::InitGpt2Params(*layout_, o.seed, full.data());
  } else if (read_here) {
    ACCEL_RETURN_IF_ERROR(
        checkpoint::LoadHfGpt2Weights(env_, o.init_weights, *layout_, full.data()));
  }
  if (o.sync_module_states) ACCEL_RETURN_IF_ERROR(sharded_->BroadcastFull(full.data(), 0));
  return sharded_->LoadFull(full.data());
}

absl::StatusOr<StepMetrics> DeviceTrainer::TrainStep() {
  const int64_t start = env_->NowMicros();
  const int accum = static_cast<int>(options_.grad_accum);
  shard::ShardedModel& sharded = *sharded_;
  ACCEL_RETURN_IF_ERROR(sharded.ZeroGrads());
  sharded.set_loss_scale(scaler_.scale());
  double loss_sum = 0;
  for (int micro = 0; micro < accum; ++micro) {
    sharded.BeginMicroStep(micro, accum);
    loader_->Fill(step_ * accum + micro, inputs_.data(), targets_.data());
    ACCEL_ASSIGN_OR_RETURN(float loss,
                           model_->Forward(sharded, inputs_.data(), targets_.data(), *acts_));
    ACCEL_RETURN_IF_ERROR(model_->Backward(sharded, *acts_, sharded.GradScale(accum)));
    ACCEL_RETURN_IF_ERROR(sharded.EndMicroStep(micro, accum));
    loss_sum += loss;
  }
  StepMetrics m;
  m.step = step_;
  m.total_steps = options_.steps;
  ACCEL_ASSIGN_OR_RETURN(double mean_loss, sharded.MeanOverRanks(loss_sum / accum));
  ACCEL_ASSIGN_OR_RETURN(double norm_squared, sharded.GradNormSquared());
  m.loss = static_cast<float>(mean_loss);
  m.lr = options_.schedule.LrAt(applied_steps_);
  m.grad_norm = std::sqrt(norm_squared);
  m.loss_scale = scaler_.scale();
  m.skipped = scaler_.Update(std::isfinite(m.grad_norm)) || !std::isfinite(m.loss);
  if (!m.skipped) {
    m.clip_scale = optim::ClipScale(m.grad_norm, options_.grad_clip);
    kernels::AdamWHyper h;
    h.lr = m.lr;
    h.beta1 = options_.adamw.beta1;
    h.beta2 = options_.adamw.beta2;
    h.eps = options_.adamw.eps;
    h.step = ++applied_steps_;
    h.grad_scale = m.clip_scale;
    const std::vector<shard::OwnedRange> owned = sharded.OwnedRanges();
    for (size_t i = 0; i < owned.size(); ++i) {
      const shard::OwnedRange& r = owned[i];
      RangeState& state = ranges_[i];
      for (const optim::AdamW::DecayRange& d : state.decay) {
        const int64_t at = d.begin;  // relative to the range's flat_begin
        h.weight_decay = d.decay ? options_.adamw.weight_decay : 0.0f;
        ACCEL_RETURN_IF_ERROR(kernels::cuda::AdamWUpdate(
            r.params + at, state.m.as<float>() + at, state.v.as<float>() + at, r.grads + at,
            DType::kF32, d.end - d.begin, h, nullptr, DType::kF32, stream_));
      }
    }
  }
  ACCEL_RETURN_IF_ERROR(sharded.FinishStep());
  // The step's work is done before its time is taken (and before the next step's inputs).
  ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  ++step_;
  m.comm_wait_seconds = sharded.TakeCommWaitSeconds();
  m.tokens = static_cast<int64_t>(accum) * options_.batch * options_.seq * world();
  FinishStepTiming(start, env_->NowMicros(), step_, options_.steps, &elapsed_seconds_, &m);
  return m;
}

absl::Status DeviceTrainer::Train(const std::function<absl::Status(const StepMetrics&)>& on_step) {
  while (step_ < options_.steps) {
    ACCEL_ASSIGN_OR_RETURN(StepMetrics m, TrainStep());
    if (on_step) ACCEL_RETURN_IF_ERROR(on_step(m));
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceTrainer::DriverMemory> DeviceTrainer::QueryDriverMemory() const {
  size_t free = 0, total = 0;
  ACCEL_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free, &total));
  return DriverMemory{static_cast<int64_t>(total - free), static_cast<int64_t>(total)};
}

absl::Status DeviceTrainer::SaveWeights(const std::string& path, DType dtype) {
  std::unique_ptr<checkpoint::FullModelWriter> writer;
  absl::Status writing;  // rank 0's file error; the gathers go on so no rank is left waiting
  if (rank() == 0) {
    writing = env_->CreateDirs(DirName(path));
    if (writing.ok()) {
      absl::StatusOr<std::unique_ptr<checkpoint::FullModelWriter>> w =
          checkpoint::FullModelWriter::Create(env_, path, layout_.get(), dtype);
      writing = w.status();
      if (w.ok()) writer = std::move(*w);
    }
  }
  std::vector<float> unit;
  for (int u = 0; u < layout_->num_units(); ++u) {
    unit.resize(layout_->unit(u).numel);
    ACCEL_RETURN_IF_ERROR(sharded_->GatherUnit(u, unit.data()));
    if (writer != nullptr && writing.ok()) writing = writer->AppendUnit(u, unit.data());
  }
  if (writer != nullptr && writing.ok()) writing = writer->Finish(/*write_config=*/true).status();
  return writing;
}

}  // namespace accel::train
