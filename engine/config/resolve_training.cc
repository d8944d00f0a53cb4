// Accumulation, clipping, batch sizes (the batch rule), optimizer and scheduler.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/config/resolve_internal.h"
#include "engine/config/batch_bounds.h"

namespace accel::config::internal {
namespace {

// Whether a file's value differs from the job's beyond float rounding (a job's lr travels as a
// float in TrainOptions).
bool Differs(double job, double file) {
  return std::fabs(job - file) > 1e-6 * std::max(std::fabs(job), std::fabs(file));
}

}  // namespace

void ResolveTorchTraining(Context& c) {
  // Accelerator reads ACCELERATE_GRADIENT_ACCUMULATION_STEPS over its own argument (the job).
  const auto env_ga = c.env.Int({"ACCELERATE_GRADIENT_ACCUMULATION_STEPS"}, 1, kMaxGradAccum);
  if (env_ga && c.job().gradient_accumulation_steps &&
      *env_ga != *c.job().gradient_accumulation_steps) {
    c.diag->Warn("environment", "ACCELERATE_GRADIENT_ACCUMULATION_STEPS",
                 absl::StrCat(*env_ga, " overrides the job's ",
                              *c.job().gradient_accumulation_steps));
  }
  c.plan.gradient_accumulation_steps =
      env_ga.value_or(c.job().gradient_accumulation_steps.value_or(1));
  // With FSDP and DDP clipping is the training loop's; the job file's default is 1.0.
  c.plan.gradient_clipping = c.job().gradient_clipping.value_or(1.0);
  ResolveBatch(c, BatchKeys{Autoable<int64_t>::Auto(), Autoable<int64_t>::Auto(), "job"});
}

void ResolveBatch(Context& c, const BatchKeys& keys) {
  TrainPlan& p = c.plan;
  const int64_t ga = p.gradient_accumulation_steps;
  const int64_t world = std::max(1, p.num_processes);
  const std::optional<int64_t> job_micro = c.job().micro_batch_size;
  // Accelerate fills train_micro_batch_size_per_gpu from the job (its DataLoader) only when it
  // is "auto"; a fixed value is kept, and with the key absent DeepSpeed derives it from a fixed
  // train_batch_size. Otherwise ("auto", or nothing given) the job's micro batch counts.
  std::optional<int64_t> micro;
  const char* fixed_key = nullptr;  // the file key the micro batch comes from
  if (keys.micro.has_value()) {
    micro = keys.micro.value;
    fixed_key = "train_micro_batch_size_per_gpu";
  } else if (keys.micro.absent() && keys.total.has_value()) {
    fixed_key = "train_batch_size";
  } else {
    micro = job_micro;
  }
  if (keys.total.has_value()) {
    const int64_t total = keys.total.value;
    if (!micro.has_value()) {
      // DeepSpeed derives the micro batch from the total (ga ≤ 2^20 and world ≤ 2^20 here).
      if (total % (ga * world) != 0) {
        c.diag->Error(keys.source, "train_batch_size",
                      absl::StrCat(total, " is not divisible by gradient_accumulation_steps × "
                                          "world size = ", ga, " × ", world));
        return;
      }
      micro = total / (ga * world);
    } else if (__int128{*micro} * ga * world != total) {
      c.diag->Error(keys.source, "train_batch_size",
                    absl::StrCat("Check batch related parameters. train_batch_size is not equal "
                                 "to micro_batch_per_gpu * gradient_acc_step * world_size ",
                                 total, " != ", *micro, " * ", ga, " * ", world));
      return;
    }
  }
  if (fixed_key != nullptr && job_micro && micro && *job_micro != *micro && !c.job().stand_in) {
    const bool derived = keys.micro.absent();
    c.diag->Warn(
        keys.source, fixed_key,
        absl::StrCat(derived ? absl::StrCat(keys.total.value, " over ", ga,
                                            " accumulation step(s) × ", world,
                                            " processes gives a micro batch of ", *micro,
                                            ", which")
                             : absl::StrCat(*micro, " (fixed in the file)"),
                     " is kept over the job's micro batch size ", *job_micro,
                     " (Accelerate fills train_micro_batch_size_per_gpu from the job only when "
                     "it is \"auto\")"));
  }
  if (!micro.has_value()) {
    c.MissingJobValue(keys.source, "train_micro_batch_size_per_gpu", "the job's micro batch");
    return;
  }
  if (*micro < 1) {
    c.diag->Error("job", "micro_batch_size", "must be at least 1");
    return;
  }
  if (*micro > kMaxMicroBatch) {  // derived from a large train_batch_size
    c.diag->Error(keys.source, fixed_key != nullptr ? fixed_key : "train_micro_batch_size_per_gpu",
                  absl::StrCat("gives a micro batch of ", *micro, "; at most ", kMaxMicroBatch));
    return;
  }
  int64_t total = 0;
  if (__builtin_mul_overflow(*micro, ga, &total) || __builtin_mul_overflow(total, world, &total)) {
    c.diag->Error(keys.source, "train_batch_size",
                  absl::StrCat(*micro, " × ", ga, " × ", world, " is too large"));
    return;
  }
  p.train_micro_batch_size_per_gpu = micro;
  p.train_batch_size = total;
}

void ResolveOptimizer(Context& c, const DeepSpeedJson& json) {
  const JobSettings& job = c.job();
  const std::string& src = json.source;
  if (json.optimizer.present && !json.optimizer.type.empty()) {
    const DsOptimizer& o = json.optimizer;
    OptimizerPlan plan;
    plan.type = o.type;
    plan.adam_w_mode = o.type == "AdamW" || o.adam_w_mode.value_or(true);
    plan.bias_correction = o.bias_correction.value_or(true);
    // Accelerate's DummyOptim defaults: lr 0.001, weight_decay 0.
    auto fill = [&](const Autoable<double>& v, const std::optional<double>& from_job,
                    double dummy_default, const char* key) -> std::optional<double> {
      if (v.has_value()) return v.value;
      if (v.absent()) return std::nullopt;  // the optimizer's own default
      if (from_job) return from_job;
      if (c.inputs.job_complete) return dummy_default;
      c.MissingJobValue(src, absl::StrCat("optimizer.params.", key),
                        absl::StrCat("the job's ", key));
      return std::nullopt;
    };
    // A value fixed in the file wins over the job's, as DeepSpeed's optimizer section does
    // over the script's: said once per key, so a job's --lr is never silently replaced.
    auto overrides = [&](const Autoable<double>& v, const std::optional<double>& from_job,
                         const char* key) {
      if (v.has_value() && from_job && Differs(*from_job, v.value) && !job.stand_in) {
        c.diag->Warn(src, absl::StrCat("optimizer.params.", key),
                     absl::StrCat(v.value, " (fixed in the file) overrides the job's ", key, " ",
                                  *from_job, "; write \"auto\" to take the job's"));
      }
    };
    overrides(o.lr, job.lr, "lr");
    overrides(o.weight_decay, job.weight_decay, "weight_decay");
    overrides(o.eps, job.eps, "eps");
    if (o.betas.has_value() && job.betas && !job.stand_in &&
        (Differs((*job.betas)[0], o.betas.value[0]) ||
         Differs((*job.betas)[1], o.betas.value[1]))) {
      c.diag->Warn(src, "optimizer.params.betas",
                   absl::StrCat("(", o.betas.value[0], ", ", o.betas.value[1],
                                ") (fixed in the file) override the job's betas (", (*job.betas)[0],
                                ", ", (*job.betas)[1], "); write \"auto\" to take the job's"));
    }
    plan.lr = fill(o.lr, job.lr, 0.001, "lr");
    plan.weight_decay = fill(o.weight_decay, job.weight_decay, 0.0, "weight_decay");
    // betas and eps: plain Accelerate cannot fill "auto" here (it fails with "not found in
    // kwargs"); we take the job's, as the Hugging Face Trainer does.
    if (o.betas.has_value()) plan.betas = o.betas.value;
    if (o.betas.is_auto()) {
      if (job.betas) {
        plan.betas = job.betas;
      } else {
        c.MissingJobValue(src, "optimizer.params.betas", "the job's betas");
      }
    }
    if (o.eps.has_value()) plan.eps = o.eps.value;
    if (o.eps.is_auto()) {
      if (job.eps) {
        plan.eps = job.eps;
      } else {
        c.MissingJobValue(src, "optimizer.params.eps", "the job's eps");
      }
    }
    c.plan.optimizer = plan;
  }
  if (!json.scheduler.present || json.scheduler.type.empty()) return;
  const DsScheduler& s = json.scheduler;
  SchedulerPlan plan;
  plan.type = s.type;
  plan.warmup_type = s.warmup_type;
  plan.warmup_min_ratio = s.warmup_min_ratio;
  plan.cos_min_ratio = s.cos_min_ratio;
  std::optional<double> lr = c.plan.optimizer ? c.plan.optimizer->lr : job.lr;
  if (!lr && c.inputs.job_complete) lr = 0.001;
  if (s.warmup_min_lr.has_value()) plan.warmup_min_lr = s.warmup_min_lr.value;
  if (s.warmup_min_lr.is_auto()) plan.warmup_min_lr = 0.0;
  if (s.warmup_max_lr.has_value()) plan.warmup_max_lr = s.warmup_max_lr.value;
  if (s.warmup_max_lr.is_auto()) {
    plan.warmup_max_lr = lr;
    if (!lr) c.MissingJobValue(src, "scheduler.params.warmup_max_lr", "the job's lr");
  }
  // The schedule's fixed values win over the job's lr and warmup likewise (a total_num_steps
  // other than the job's steps is the lowering's note already).
  auto overrides = [&](const char* key, bool fixed, double value,
                       const std::optional<double>& from_job, const char* job_key) {
    if (fixed && from_job && Differs(*from_job, value) && !job.stand_in) {
      c.diag->Warn(src, absl::StrCat("scheduler.params.", key),
                   absl::StrCat(value, " (fixed in the file) overrides the job's ", job_key, " ",
                                *from_job, "; write \"auto\" to take the job's"));
    }
  };
  auto as_real = [](const std::optional<int64_t>& v) -> std::optional<double> {
    if (!v) return std::nullopt;
    return static_cast<double>(*v);
  };
  overrides("warmup_max_lr", s.warmup_max_lr.has_value(), s.warmup_max_lr.value, job.lr, "lr");
  overrides("warmup_num_steps", s.warmup_num_steps.has_value(),
            static_cast<double>(s.warmup_num_steps.value), as_real(job.warmup_steps),
            "warmup_steps");
  if (s.warmup_num_steps.has_value()) plan.warmup_num_steps = s.warmup_num_steps.value;
  if (s.warmup_num_steps.is_auto()) plan.warmup_num_steps = job.warmup_steps.value_or(0);
  if (s.total_num_steps.has_value()) plan.total_num_steps = s.total_num_steps.value;
  if (s.total_num_steps.is_auto()) {
    // Accelerate divides the DummyScheduler's total by num_processes because users count
    // steps on the unsharded DataLoader; the job's steps are already optimizer steps.
    plan.total_num_steps = job.steps;
    if (!job.steps) {
      c.MissingJobValue(src, "scheduler.params.total_num_steps",
                        "the job's step count");
    }
  }
  if (s.type != "WarmupLR" && s.total_num_steps.absent()) {
    c.diag->Error(src, "scheduler.params.total_num_steps", absl::StrCat("required by ", s.type));
  }
  c.plan.scheduler = plan;
}

}  // namespace accel::config::internal
