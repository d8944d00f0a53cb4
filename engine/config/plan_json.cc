#include "engine/config/plan_json.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace accel::config {
namespace {

using nlohmann::ordered_json;

template <typename T>
ordered_json OrNull(const std::optional<T>& v) {
  return v.has_value() ? ordered_json(*v) : ordered_json(nullptr);
}

ordered_json PathOrNull(OffloadDevice device, const std::string& path) {
  return device == OffloadDevice::kNvme ? ordered_json(path) : ordered_json(nullptr);
}

std::string Dump(const ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, ordered_json::error_handler_t::replace);
}

}  // namespace

ordered_json PlanToJson(const TrainPlan& p) {
  ordered_json j = ordered_json::object();
  j["distributed_type"] = std::string(Name(p.distributed_type));
  j["num_processes"] = p.num_processes;
  j["num_machines"] = p.num_machines;
  j["strategy"] = std::string(Name(p.strategy));
  j["reshard_after_forward"] = p.reshard_after_forward;
  j["offload_params"] = std::string(Name(p.offload_params));
  j["offload_optimizer"] = std::string(Name(p.offload_optimizer));
  j["offload_param_nvme_path"] = PathOrNull(p.offload_params, p.offload_param_nvme_path);
  j["offload_optimizer_nvme_path"] =
      PathOrNull(p.offload_optimizer, p.offload_optimizer_nvme_path);
  j["wrap_policy"] = std::string(Name(p.wrap_policy));
  j["transformer_layer_cls_to_wrap"] = p.transformer_layer_cls_to_wrap;
  j["min_num_params"] = p.min_num_params;
  j["backward_prefetch"] = std::string(Name(p.backward_prefetch));
  j["forward_prefetch"] = p.forward_prefetch;
  j["state_dict_type"] = std::string(Name(p.state_dict_type));
  j["save_16bit_model"] = p.save_16bit_model;
  j["use_orig_params"] = p.use_orig_params;
  j["sync_module_states"] = p.sync_module_states;
  j["cpu_ram_efficient_loading"] = p.cpu_ram_efficient_loading;
  j["zero3_init"] = p.zero3_init;
  j["activation_checkpointing"] = p.activation_checkpointing;
  const MixedPrecisionPlan& mp = p.mixed_precision;
  j["mixed_precision"] = ordered_json{{"mode", std::string(Name(mp.mode))},
                                      {"param_dtype", std::string(Name(mp.param_dtype))},
                                      {"reduce_dtype", std::string(Name(mp.reduce_dtype))},
                                      {"master_dtype", std::string(Name(mp.master_dtype))},
                                      {"optimizer_dtype", std::string(Name(mp.optimizer_dtype))}};
  j["gradient_accumulation_steps"] = p.gradient_accumulation_steps;
  j["gradient_clipping"] = p.gradient_clipping;
  j["train_micro_batch_size_per_gpu"] = OrNull(p.train_micro_batch_size_per_gpu);
  j["train_batch_size"] = OrNull(p.train_batch_size);
  if (p.loss_scaling.has_value()) {
    const LossScalingPlan& ls = *p.loss_scaling;
    j["loss_scaling"] = ordered_json{{"initial_scale_power", ls.initial_scale_power},
                                     {"loss_scale_window", ls.loss_scale_window},
                                     {"hysteresis", ls.hysteresis},
                                     {"min_loss_scale", ls.min_loss_scale}};
  } else {
    j["loss_scaling"] = nullptr;
  }
  j["prefetch"] = ordered_json{{"bucket_size", OrNull(p.prefetch.bucket_size)},
                               {"param_persistence_threshold",
                                OrNull(p.prefetch.param_persistence_threshold)},
                               {"max_live_parameters", p.prefetch.max_live_parameters},
                               {"max_reuse_distance", p.prefetch.max_reuse_distance}};
  j["warnings"] = p.warnings;
  return j;
}

std::string PlanToJsonText(const TrainPlan& plan) { return Dump(PlanToJson(plan), 2); }

ordered_json OptimizerPlanJson(const TrainPlan& p) {
  ordered_json j = ordered_json::object();
  j["optimizer"] = nullptr;
  j["scheduler"] = nullptr;
  if (p.optimizer.has_value()) {
    const OptimizerPlan& o = *p.optimizer;
    ordered_json opt = ordered_json::object();
    opt["type"] = o.type;
    opt["lr"] = OrNull(o.lr);
    opt["betas"] = OrNull(o.betas);
    opt["eps"] = OrNull(o.eps);
    opt["weight_decay"] = OrNull(o.weight_decay);
    opt["adam_w_mode"] = o.adam_w_mode;
    opt["bias_correction"] = o.bias_correction;
    j["optimizer"] = std::move(opt);
  }
  if (p.scheduler.has_value()) {
    const SchedulerPlan& s = *p.scheduler;
    ordered_json sch = ordered_json::object();
    sch["type"] = s.type;
    sch["warmup_min_lr"] = OrNull(s.warmup_min_lr);
    sch["warmup_max_lr"] = OrNull(s.warmup_max_lr);
    sch["warmup_num_steps"] = OrNull(s.warmup_num_steps);
    sch["total_num_steps"] = OrNull(s.total_num_steps);
    sch["warmup_type"] = s.warmup_type;
    if (s.type == "WarmupCosineLR") {
      sch["warmup_min_ratio"] = s.warmup_min_ratio;
      sch["cos_min_ratio"] = s.cos_min_ratio;
    }
    j["scheduler"] = std::move(sch);
  }
  return j;
}

std::string PlanToText(const TrainPlan& plan) {
  const ordered_json j = PlanToJson(plan);
  size_t width = 0;
  for (const auto& [key, value] : j.items()) width = std::max(width, key.size());
  std::string out;
  for (const auto& [key, value] : j.items()) {
    if (key == "warnings") continue;
    std::string shown;
    if (value.is_string()) {
      shown = value.get<std::string>();
    } else if (value.is_object()) {
      for (const auto& [k, v] : value.items()) {
        absl::StrAppend(&shown, shown.empty() ? "" : " ", k, "=",
                        v.is_string() ? v.get<std::string>() : Dump(v, -1));
      }
    } else {
      shown = Dump(value, -1);
    }
    absl::StrAppend(&out, key, ":", std::string(width + 1 - key.size(), ' '), shown, "\n");
  }
  // What the DeepSpeed file's optimizer and scheduler sections set ("null": the job's value,
  // filled when the job is known); null sections are not printed.
  const ordered_json sections = OptimizerPlanJson(plan);
  for (const auto& [key, value] : sections.items()) {
    if (value.is_null()) continue;
    std::string shown = value["type"].get<std::string>();
    for (const auto& [k, v] : value.items()) {
      if (k == "type") continue;
      absl::StrAppend(&shown, " ", k, "=", v.is_string() ? v.get<std::string>() : Dump(v, -1));
    }
    absl::StrAppend(&out, key, ":", std::string(width + 1 - std::min(width, key.size()), ' '),
                    shown, " (from the DeepSpeed config; replaces the job's)\n");
  }
  for (const std::string& w : plan.warnings) absl::StrAppend(&out, "warning: ", w, "\n");
  return out;
}

}  // namespace accel::config
