// A DeepSpeed config JSON (deepspeed_config_file), read into typed fields that remember whether
// each was absent, "auto", or a value.
//
// Every key is checked against DeepSpeed's schema: unknown keys are errors with "did you mean";
// sections this engine does not implement (amp, pipeline, compression, ZeRO++ quantisation,
// MiCS, ...) are errors when switched on; monitoring and logging sections are accepted and
// have no effect. "auto" is accepted exactly where Accelerate can fill it (deepspeed_auto.md in
// docs/config.md lists them) plus optimizer betas/eps (filled from the job, as the HF Trainer
// does); anywhere else it is an error naming the key. Legacy spellings accepted with a warning:
// zero_optimization.cpu_offload / cpu_offload_param, stage3_gather_fp16_weights_on_model_save,
// aio nested inside zero_optimization, aio.thread_count, a top-level "bfloat16" section.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "engine/config/diagnostics.h"
#include "engine/config/train_plan.h"

namespace accel::config {

template <typename T>
struct Autoable {
  enum class State { kAbsent, kAuto, kValue };
  State state = State::kAbsent;
  T value{};

  bool absent() const { return state == State::kAbsent; }
  bool is_auto() const { return state == State::kAuto; }
  bool has_value() const { return state == State::kValue; }
  static Autoable Auto() { return Autoable{State::kAuto, T{}}; }
  static Autoable Of(T v) { return Autoable{State::kValue, std::move(v)}; }
};

struct DsOffload {
  bool present = false;
  Autoable<OffloadDevice> device;
  Autoable<std::string> nvme_path;
  std::optional<bool> pin_memory;
  std::optional<int64_t> buffer_count;
  std::optional<int64_t> buffer_size;  // offload_param only
  std::optional<int64_t> max_in_cpu;   // offload_param only
};

struct DsZero {
  bool present = false;
  Autoable<int64_t> stage;
  DsOffload offload_param;
  DsOffload offload_optimizer;
  std::optional<bool> overlap_comm;
  std::optional<bool> contiguous_gradients;
  Autoable<int64_t> reduce_bucket_size;
  std::optional<int64_t> allgather_bucket_size;
  Autoable<int64_t> stage3_prefetch_bucket_size;
  Autoable<int64_t> stage3_param_persistence_threshold;
  std::optional<int64_t> stage3_max_live_parameters;
  std::optional<int64_t> stage3_max_reuse_distance;
  std::optional<int64_t> sub_group_size;
  Autoable<bool> stage3_gather_16bit_weights_on_model_save;
};

struct DsAio {
  std::optional<int64_t> block_size;
  std::optional<int64_t> queue_depth;
  std::optional<int64_t> intra_op_parallelism;
  std::optional<bool> single_submit;
  std::optional<bool> overlap_events;
};

// The activation_checkpointing section. Its presence switches per-block checkpointing on: the
// section has no other purpose, and the engine's model checkpoints each transformer block itself
// (what DeepSpeed users get from gradient_checkpointing_enable() plus this section).
struct DsActivationCheckpointing {
  bool present = false;
};

struct DsFp16 {
  bool present = false;
  Autoable<bool> enabled;
  std::optional<double> loss_scale;  // 0 = dynamic
  std::optional<int64_t> initial_scale_power;
  std::optional<int64_t> loss_scale_window;
  std::optional<int64_t> hysteresis;
  std::optional<double> min_loss_scale;
};

struct DsBf16 {
  bool present = false;
  Autoable<bool> enabled;
};

struct DsOptimizer {
  bool present = false;
  std::string type;  // canonical spelling: "Adam", "AdamW", "SGD"
  Autoable<double> lr;
  Autoable<double> weight_decay;
  Autoable<std::array<double, 2>> betas;
  Autoable<double> eps;
  std::optional<bool> adam_w_mode;
  std::optional<bool> bias_correction;
};

struct DsScheduler {
  bool present = false;
  std::string type;  // "WarmupLR", "WarmupDecayLR", "WarmupCosineLR"
  Autoable<double> warmup_min_lr;
  Autoable<double> warmup_max_lr;
  Autoable<int64_t> warmup_num_steps;
  Autoable<int64_t> total_num_steps;
  std::string warmup_type = "log";  // log | linear (DeepSpeed's default: log)
  double warmup_min_ratio = 0.0;    // WarmupCosineLR
  double cos_min_ratio = 1e-4;      // WarmupCosineLR
};

struct DeepSpeedJson {
  std::string source;
  Autoable<int64_t> train_batch_size;
  Autoable<int64_t> train_micro_batch_size_per_gpu;
  Autoable<int64_t> gradient_accumulation_steps;
  Autoable<double> gradient_clipping;
  std::optional<FloatType> communication_data_type;
  DsZero zero;
  DsAio aio;
  DsActivationCheckpointing activation_checkpointing;
  DsFp16 fp16;
  DsBf16 bf16;
  DsOptimizer optimizer;
  DsScheduler scheduler;
};

// Reads `doc` (from ParseJsonDocument). Problems go to diag.
DeepSpeedJson ReadDeepSpeedJson(const Document& doc, Diagnostics* diag);

// Internal (deepspeed_zero.cc): zero_optimization and aio.
class Reader;
void ReadZeroSection(Reader& r, DeepSpeedJson* out);
void ReadAioSection(Reader& r, const KeyPath& path, DsAio* out);

// Shared by both files: the value at path as absent / "auto" / a value read by `read`.
template <typename T, typename ReadFn>
Autoable<T> ReadAutoable(bool is_auto, bool present, ReadFn read) {
  if (is_auto) return Autoable<T>::Auto();
  if (!present) return Autoable<T>{};
  auto v = read();
  if (!v.has_value()) return Autoable<T>{};
  return Autoable<T>::Of(*v);
}

}  // namespace accel::config
