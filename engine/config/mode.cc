#include "engine/config/mode.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace accel::config {

DType ToDType(FloatType t) {
  switch (t) {
    case FloatType::kFp32: return DType::kF32;
    case FloatType::kBf16: return DType::kBF16;
    case FloatType::kFp16: return DType::kF16;
  }
  return DType::kF32;
}

ResolvedMode ModeOf(const TrainOptions& o) {
  ResolvedMode m;
  m.strategy = o.shard.strategy;
  m.params = o.shard.param_dtype;
  m.grads = o.shard.reduce_dtype;
  m.loss_scaling = o.shard.param_dtype == DType::kF16 || o.shard.reduce_dtype == DType::kF16;
  m.master = m.optimizer_state = o.shard.master_dtype;
  return m;
}

std::string StateDictName(TrainOptions::StateDictType t) {
  return t == TrainOptions::StateDictType::kFull ? "full" : "sharded";
}

std::string PrecisionName(const TrainOptions& o) {
  const ResolvedMode m = ModeOf(o);
  if (m.master == DType::kBF16) return "bf16 low precision";
  if (m.params == DType::kF32 && m.grads == DType::kF32) return "fp32";
  const DType low = m.params != DType::kF32 ? m.params : m.grads;
  return absl::StrCat(low == DType::kF16 ? "fp16" : "bf16", " mixed");
}

namespace {
const char* OffloadPlace(const std::string& dir) { return dir.empty() ? "host" : "nvme"; }
std::string OffloadWhere(const std::string& dir) {
  return dir.empty() ? "the host" : "files in " + dir;
}
}  // namespace

std::string OptimizerDevice(const TrainOptions& o) {
  return o.shard.offload_optimizer ? OffloadPlace(o.shard.offload_dir) : "compute";
}

std::string ParamsOffloadDir(const TrainOptions& o) { return shard::ParamOffloadDir(o.shard); }

std::string ParamsDevice(const TrainOptions& o) {
  return o.shard.offload_params ? OffloadPlace(ParamsOffloadDir(o)) : "compute";
}

namespace {
// " (offloaded to the host)", " (offloaded to files in DIR, with the parameters)",
// "; parameters offloaded to files in DIR" (apart from the optimizer's state), or "".
std::string OffloadNote(const TrainOptions& o) {
  const shard::ShardOptions& s = o.shard;
  if (shard::ParamsWithOptimizer(s)) {
    return absl::StrCat(" (offloaded to ", OffloadWhere(s.offload_dir), ", with the parameters)");
  }
  std::string note;
  if (s.offload_optimizer) absl::StrAppend(&note, " (offloaded to ", OffloadWhere(s.offload_dir), ")");
  if (s.offload_params) {
    absl::StrAppend(&note, ", parameters offloaded to ", OffloadWhere(ParamsOffloadDir(o)));
  }
  return note;
}
}  // namespace

std::string DescribeMode(const TrainOptions& o) {
  const ResolvedMode m = ModeOf(o);
  std::string group = shard::IsHybrid(m.strategy)
                          ? absl::StrCat(" (hybrid group ", o.shard.hybrid_group_size, ")")
                          : "";
  return absl::StrFormat(
      "%s%s: params %s, grads %s, master %s, optimizer state %s%s, loss scaling %s, accum "
      "%d%s, clip %g, checkpoints %s%s%s",
      std::string(shard::StrategyName(m.strategy)), group, std::string(DTypeName(m.params)),
      std::string(DTypeName(m.grads)), std::string(DTypeName(m.master)),
      std::string(DTypeName(m.optimizer_state)),
      OffloadNote(o),
      m.loss_scaling ? "on" : "off",
      o.grad_accum, o.shard.reduce_every_micro_step ? " (reduce every micro-step)" : "",
      o.grad_clip, StateDictName(o.state_dict_type), o.save_16bit ? " + 16-bit model" : "",
      o.activation_checkpointing ? ", activation checkpointing per block" : "");
}

std::string ModeJson(const TrainOptions& o, std::string_view config_source,
                     const std::vector<std::string>& notes) {
  const ResolvedMode m = ModeOf(o);
  nlohmann::ordered_json j;
  j["event"] = "mode";
  j["strategy"] = std::string(shard::StrategyName(m.strategy));
  j["hybrid_group_size"] = shard::IsHybrid(m.strategy) ? o.shard.hybrid_group_size : 0;
  j["params"] = std::string(DTypeName(m.params));
  j["grads"] = std::string(DTypeName(m.grads));
  j["master"] = std::string(DTypeName(m.master));
  j["optimizer_state"] = std::string(DTypeName(m.optimizer_state));
  j["optimizer_device"] = OptimizerDevice(o);
  j["params_device"] = ParamsDevice(o);
  j["offload_dir"] = o.shard.offload_dir;
  j["offload_param_dir"] = ParamsOffloadDir(o);
  j["loss_scaling"] = m.loss_scaling;
  j["grad_accum"] = o.grad_accum;
  j["reduce_every_micro_step"] = o.shard.reduce_every_micro_step;
  j["grad_clip"] = o.grad_clip;
  j["state_dict_type"] = StateDictName(o.state_dict_type);
  j["save_16bit"] = o.save_16bit;
  j["activation_checkpointing"] = o.activation_checkpointing;
  if (config_source.empty()) {
    j["config"] = nullptr;
  } else {
    j["config"] = std::string(config_source);
  }
  j["notes"] = notes;
  return j.dump();
}

}  // namespace accel::config
