#include "engine/train/cuda/device_trainer.h"

#include <cuda_runtime.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/full_model_writer.h"
#include "engine/kernels/cuda/device.h"
#include "engine/kernels/cuda/kernels.h"
#include "engine/model/param_specs.h"
#include "engine/optim/clip.h"

namespace accel::train {
namespace {

// What the device path cannot do yet, named by option.
absl::Status CheckSupported(const TrainOptions& o) {
  auto refuse = [](const char* what) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " is not supported on the cuda device yet (docs/gpu.md: the device trainer is "
              "single-rank fp32)"));
  };
  if (o.shard.param_dtype != DType::kF32 || o.shard.reduce_dtype != DType::kF32) {
    return refuse("mixed precision");
  }
  if (!o.init_weights.empty()) return refuse("--init-weights");
  if (!o.checkpoint_dir.empty() || !o.resume_dir.empty()) return refuse("checkpointing");
  if (o.sync_module_states) return refuse("--sync-module-states");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceTrainer>> DeviceTrainer::Create(const TrainOptions& options,
                                                                     int device, Env* env) {
  ACCEL_RETURN_IF_ERROR(ValidateTrainOptions(options));
  ACCEL_RETURN_IF_ERROR(CheckSupported(options));
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
  ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&t->stream_, cudaStreamNonBlocking));

  ACCEL_ASSIGN_OR_RETURN(model::Gpt2Config config, ModelConfigOf(env, options));
  ACCEL_ASSIGN_OR_RETURN(model::Gpt2Layout layout, model::Gpt2Layout::Create(config));
  t->layout_ = std::make_unique<model::Gpt2Layout>(std::move(layout));
  t->allocator_ =
      std::make_unique<cuda::CachingAllocator>(cuda::CudaRawAllocator(device), &t->ledger_);
  ACCEL_ASSIGN_OR_RETURN(t->blas_, cuda::Blas::Create(&t->ledger_));
  t->model_ = std::make_unique<model::Gpt2Cuda>(t->layout_.get(), t->blas_.get(), t->stream_);

  const int64_t n = t->layout_->num_params();
  auto alloc = [&](int64_t bytes, MemoryCategory category, cuda::DeviceBuffer* out) {
    auto b = cuda::DeviceBuffer::Create(t->allocator_.get(), bytes, category, t->stream_);
    if (b.ok()) *out = std::move(*b);
    return b.status();
  };
  ACCEL_RETURN_IF_ERROR(alloc(n * 4, MemoryCategory::kParams, &t->params_));
  ACCEL_RETURN_IF_ERROR(alloc(n * 4, MemoryCategory::kGrads, &t->grads_));
  ACCEL_RETURN_IF_ERROR(alloc(n * 4, MemoryCategory::kOptimizerState, &t->exp_avg_));
  ACCEL_RETURN_IF_ERROR(alloc(n * 4, MemoryCategory::kOptimizerState, &t->exp_avg_sq_));
  ACCEL_RETURN_IF_ERROR(alloc(sizeof(double), MemoryCategory::kOther, &t->norm_squared_));
  {
    std::vector<float> host(n);
    model::InitGpt2Params(*t->layout_, options.seed, host.data());
    ACCEL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(t->params_.data(), host.data(), n * 4,
                                               cudaMemcpyHostToDevice, t->stream_));
    ACCEL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(t->exp_avg_.data(), 0, n * 4, t->stream_));
    ACCEL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(t->exp_avg_sq_.data(), 0, n * 4, t->stream_));
    ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(t->stream_));  // `host` goes out of scope
  }
  t->decay_ranges_ = optim::AdamW::DecayRanges(*t->layout_, 0, n);
  ACCEL_ASSIGN_OR_RETURN(auto acts, model::Gpt2CudaActivations::Create(
                                        config, options.batch, options.seq, t->allocator_.get(),
                                        t->stream_));
  t->acts_.emplace(std::move(acts));

  ACCEL_ASSIGN_OR_RETURN(t->loader_, OpenTrainingData(env, options, config, 0, 1));
  t->inputs_.resize(options.batch * options.seq);
  t->targets_.resize(options.batch * options.seq);
  return t;
}

DeviceTrainer::~DeviceTrainer() {
  if (stream_ != nullptr) {
    (void)cudaStreamSynchronize(stream_);
    // Device buffers return to the allocator before it and the stream go.
    acts_.reset();
    params_ = cuda::DeviceBuffer();
    grads_ = cuda::DeviceBuffer();
    exp_avg_ = cuda::DeviceBuffer();
    exp_avg_sq_ = cuda::DeviceBuffer();
    norm_squared_ = cuda::DeviceBuffer();
    (void)cudaStreamDestroy(stream_);
  }
}

absl::StatusOr<StepMetrics> DeviceTrainer::TrainStep() {
  const int64_t start = env_->NowMicros();
  const int64_t n = layout_->num_params();
  const int accum = static_cast<int>(options_.grad_accum);
  ACCEL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(grads_.data(), 0, n * 4, stream_));
  model::FlatParamAccess access(layout_.get(), params_.as<float>(), grads_.as<float>());
  double loss_sum = 0;
  for (int micro = 0; micro < accum; ++micro) {
    loader_->Fill(step_ * accum + micro, inputs_.data(), targets_.data());
    ACCEL_ASSIGN_OR_RETURN(float loss,
                           model_->Forward(access, inputs_.data(), targets_.data(), *acts_));
    loss_sum += loss;
    ACCEL_RETURN_IF_ERROR(model_->Backward(access, *acts_, 1.0f / static_cast<float>(accum)));
  }
  ACCEL_RETURN_IF_ERROR(kernels::cuda::SquaredL2Norm(norm_squared_.as<double>(), grads_.data(),
                                                     DType::kF32, n, false, stream_));
  double norm_squared = 0;
  ACCEL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&norm_squared, norm_squared_.data(), sizeof(double),
                                             cudaMemcpyDeviceToHost, stream_));
  ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));

  StepMetrics m;
  m.step = step_;
  m.total_steps = options_.steps;
  m.loss = static_cast<float>(loss_sum / accum);
  m.lr = options_.schedule.LrAt(applied_steps_);
  m.grad_norm = std::sqrt(norm_squared);
  m.skipped = !std::isfinite(m.grad_norm) || !std::isfinite(m.loss);
  if (!m.skipped) {
    m.clip_scale = optim::ClipScale(m.grad_norm, options_.grad_clip);
    kernels::AdamWHyper h;
    h.lr = m.lr;
    h.beta1 = options_.adamw.beta1;
    h.beta2 = options_.adamw.beta2;
    h.eps = options_.adamw.eps;
    h.step = ++applied_steps_;
    h.grad_scale = m.clip_scale;
    for (const optim::AdamW::DecayRange& r : decay_ranges_) {
      h.weight_decay = r.decay ? options_.adamw.weight_decay : 0.0f;
      ACCEL_RETURN_IF_ERROR(kernels::cuda::AdamWUpdate(
          params_.as<float>() + r.begin, exp_avg_.as<float>() + r.begin,
          exp_avg_sq_.as<float>() + r.begin, grads_.as<float>() + r.begin, DType::kF32,
          r.end - r.begin, h, nullptr, DType::kF32, stream_));
    }
  }
  ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  ++step_;
  m.tokens = static_cast<int64_t>(accum) * options_.batch * options_.seq;
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
  const int64_t n = layout_->num_params();
  std::vector<float> host(n);
  ACCEL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host.data(), params_.data(), n * 4,
                                             cudaMemcpyDeviceToHost, stream_));
  ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  ACCEL_RETURN_IF_ERROR(env_->CreateDirs(DirName(path)));
  ACCEL_ASSIGN_OR_RETURN(auto writer,
                         checkpoint::FullModelWriter::Create(env_, path, layout_.get(), dtype));
  for (int u = 0; u < layout_->num_units(); ++u) {
    ACCEL_RETURN_IF_ERROR(writer->AppendUnit(u, host.data() + layout_->unit(u).offset));
  }
  return writer->Finish(/*write_config=*/true).status();
}

}  // namespace accel::train
