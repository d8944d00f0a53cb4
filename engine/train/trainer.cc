#include "engine/train/trainer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/hf_gpt2.h"
#include "engine/data/token_source.h"
#include "engine/kernels/adamw.h"
#include "engine/optim/clip.h"

namespace accel::train {
namespace {

absl::Status ValidateOptions(const TrainOptions& o) {
  auto positive = [](const char* flag, int64_t v) -> absl::Status {
    if (v > 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(flag, " must be positive, got ", v));
  };
  ACCEL_RETURN_IF_ERROR(positive("--batch", o.batch));
  ACCEL_RETURN_IF_ERROR(positive("--seq", o.seq));
  ACCEL_RETURN_IF_ERROR(positive("--grad-accum", o.grad_accum));
  if (o.steps < 0) return absl::InvalidArgumentError(absl::StrCat("--steps must be >= 0, got ", o.steps));
  if (o.data.empty()) return absl::InvalidArgumentError("--data is required");
  if (!(o.schedule.base_lr >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("--lr must be >= 0, got ", o.schedule.base_lr));
  }
  if (o.schedule.warmup_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--warmup must be >= 0, got ", o.schedule.warmup_steps));
  }
  if (!(o.grad_clip >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("--grad-clip must be >= 0, got ", o.grad_clip));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const TrainOptions& options, Env* env,
                                                         MemoryLedger* ledger) {
  ACCEL_RETURN_IF_ERROR(ValidateOptions(options));
  std::unique_ptr<Trainer> t(new Trainer());
  t->options_ = options;
  t->options_.schedule.total_steps = options.steps;
  t->env_ = env;
  t->ledger_ = ledger != nullptr ? ledger : MemoryLedger::Default();

  model::Gpt2Config config;
  if (!options.model_config.empty()) {
    ACCEL_ASSIGN_OR_RETURN(config, model::LoadGpt2Config(env, options.model_config));
  } else {
    ACCEL_ASSIGN_OR_RETURN(config, model::Gpt2Preset(options.model));
  }
  ACCEL_ASSIGN_OR_RETURN(model::Gpt2Layout layout, model::Gpt2Layout::Create(config));
  t->layout_ = std::make_unique<model::Gpt2Layout>(std::move(layout));
  t->model_ = std::make_unique<model::Gpt2>(t->layout_.get());

  const int64_t n = t->layout_->num_params();
  ACCEL_ASSIGN_OR_RETURN(t->params_,
                         AllocateFloats(n, MemoryPool::kDevice, MemoryCategory::kParams, t->ledger_));
  ACCEL_ASSIGN_OR_RETURN(t->grads_,
                         AllocateFloats(n, MemoryPool::kDevice, MemoryCategory::kGrads, t->ledger_));
  if (options.init_weights.empty()) {
    model::InitGpt2Params(*t->layout_, options.seed, t->params_.as<float>());
  } else {
    ACCEL_RETURN_IF_ERROR(checkpoint::LoadHfGpt2Weights(env, options.init_weights, *t->layout_,
                                                        t->params_.as<float>()));
  }
  ACCEL_ASSIGN_OR_RETURN(auto acts, model::Gpt2Activations::Create(config, options.batch,
                                                                   options.seq, MemoryPool::kDevice,
                                                                   t->ledger_));
  t->acts_.emplace(std::move(acts));
  ACCEL_ASSIGN_OR_RETURN(auto opt, optim::AdamW::Create(*t->layout_, 0, n, options.adamw,
                                                        MemoryPool::kDevice, t->ledger_));
  t->optimizer_.emplace(std::move(opt));

  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<data::TokenSource> opened,
                         data::TokenSource::Open(env, options.data));
  std::shared_ptr<const data::TokenSource> source = std::move(opened);
  if (source->max_token() >= config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        options.data, " holds token ", source->max_token(), ", outside the vocabulary of model ",
        config.name, " (", config.vocab_size, " tokens)"));
  }
  data::BatchLoaderOptions lo;
  lo.batch_size = options.batch;
  lo.seq_len = options.seq;
  lo.rank = options.rank;
  lo.world = options.world;
  lo.shuffle_seed = options.shuffle_seed;
  ACCEL_ASSIGN_OR_RETURN(t->loader_, data::BatchLoader::Create(source, lo));
  t->inputs_.resize(options.batch * options.seq);
  t->targets_.resize(options.batch * options.seq);
  return t;
}

absl::StatusOr<StepMetrics> Trainer::TrainStep() {
  const int64_t start = env_->NowMicros();
  const int64_t accum = options_.grad_accum;
  model::FlatParamAccess access(layout_.get(), params_.as<float>(), grads_.as<float>());
  grads_.Zero();
  double loss_sum = 0;
  for (int64_t micro = 0; micro < accum; ++micro) {
    loader_->Fill(step_ * accum + micro, inputs_.data(), targets_.data());
    ACCEL_ASSIGN_OR_RETURN(float loss,
                           model_->Forward(access, inputs_.data(), targets_.data(), *acts_));
    ACCEL_RETURN_IF_ERROR(model_->Backward(access, inputs_.data(), targets_.data(), *acts_,
                                           1.0f / static_cast<float>(accum)));
    loss_sum += loss;
  }
  StepMetrics m;
  m.step = step_;
  m.total_steps = options_.steps;
  m.loss = static_cast<float>(loss_sum / static_cast<double>(accum));
  m.lr = options_.schedule.LrAt(step_);
  m.grad_norm = std::sqrt(kernels::SquaredL2Norm(grads_.as<float>(), layout_->num_params()));
  m.skipped = !std::isfinite(m.loss) || !std::isfinite(m.grad_norm);
  if (!m.skipped) {
    m.clip_scale = optim::ClipScale(m.grad_norm, options_.grad_clip);
    optimizer_->Step(params_.as<float>(), grads_.as<float>(), m.lr, m.clip_scale);
  }
  ++step_;
  m.tokens = accum * options_.batch * options_.seq;
  m.step_seconds = static_cast<double>(env_->NowMicros() - start) * 1e-6;
  m.tokens_per_s = m.step_seconds > 0 ? static_cast<double>(m.tokens) / m.step_seconds : 0;
  elapsed_seconds_ += m.step_seconds;
  m.elapsed_seconds = elapsed_seconds_;
  m.eta_seconds = elapsed_seconds_ / static_cast<double>(step_) *
                  static_cast<double>(options_.steps - step_);
  return m;
}

absl::Status Trainer::Train(const std::function<absl::Status(const StepMetrics&)>& on_step) {
  while (step_ < options_.steps) {
    ACCEL_ASSIGN_OR_RETURN(StepMetrics m, TrainStep());
    if (on_step) ACCEL_RETURN_IF_ERROR(on_step(m));
  }
  return absl::OkStatus();
}

absl::Status Trainer::SaveWeights(const std::string& path, DType dtype) {
  return checkpoint::SaveHfGpt2Weights(env_, path, *layout_, params_.as<float>(), dtype);
}

}  // namespace accel::train
