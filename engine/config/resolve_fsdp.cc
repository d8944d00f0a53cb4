// FSDP (fsdp_config, FSDP_* variables) and plain data parallel (NO / MULTI_CPU / MULTI_GPU).
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/config/resolve_internal.h"

namespace accel::config::internal {
namespace {

KeyPath Fsdp(const char* key) { return {"fsdp_config", key}; }

// The YAML value, else the environment variable, else nullopt.
template <typename T, typename EnvRead>
std::optional<T> Either(const std::optional<T>& yaml, EnvRead env_read) {
  if (yaml.has_value()) return yaml;
  return env_read();
}

bool BoolSetting(Context& c, const std::optional<bool>& yaml, const char* var, bool fallback) {
  return Either(yaml, [&] { return c.env.Bool({var}); }).value_or(fallback);
}

Strategy StrategyFromReshard(bool reshard) {
  return reshard ? Strategy::kFullShard : Strategy::kShardGradOp;
}

void ResolveFsdp1Strategy(Context& c) {
  const FsdpSection& f = c.yaml.fsdp;
  TrainPlan& p = c.plan;
  const KeyPath reshard_key = Fsdp("fsdp_reshard_after_forward");
  if (f.sharding_strategy.has_value()) {
    p.strategy = *f.sharding_strategy;
    // Accelerate's FSDP1 always takes the strategy; fsdp_reshard_after_forward is never read.
    const bool disagrees =
        (f.reshard_after_forward_strategy && *f.reshard_after_forward_strategy != p.strategy) ||
        (f.reshard_after_forward && *f.reshard_after_forward != ShardsParameters(p.strategy) &&
         p.strategy != Strategy::kNoShard);
    if (disagrees) {
      c.YamlWarn(reshard_key, absl::StrCat("ignored: fsdp_sharding_strategy (",
                                           std::string(Name(p.strategy)),
                                           ") decides with fsdp_version 1, as in Accelerate"));
    }
    return;
  }
  if (f.reshard_after_forward_strategy.has_value()) {
    // What the FSDP1 questionnaire writes. Accelerate ignores it and runs FULL_SHARD; the user
    // meant this strategy, so we take it and say so.
    p.strategy = *f.reshard_after_forward_strategy;
    if (p.strategy != Strategy::kFullShard) {
      c.YamlWarn(reshard_key,
                 absl::StrCat("read as the sharding strategy (", std::string(Name(p.strategy)),
                              "); Accelerate 1.x with fsdp_version 1 ignores this key and would "
                              "run FULL_SHARD; write fsdp_sharding_strategy instead"));
    }
    return;
  }
  if (auto env = c.env.Enum({"FSDP_SHARDING_STRATEGY"}, FsdpStrategyNames())) {
    p.strategy = *env;
    return;
  }
  p.strategy = Strategy::kFullShard;
  if (f.reshard_after_forward.has_value()) {
    p.strategy = StrategyFromReshard(*f.reshard_after_forward);
    if (!*f.reshard_after_forward) {
      c.YamlWarn(reshard_key, "false read as SHARD_GRAD_OP; Accelerate 1.x with fsdp_version 1 "
                              "ignores this key and would run FULL_SHARD");
    }
  }
}

void ResolveFsdp2Strategy(Context& c) {
  const FsdpSection& f = c.yaml.fsdp;
  TrainPlan& p = c.plan;
  if (f.sharding_strategy.has_value()) {
    c.YamlWarn(Fsdp("fsdp_sharding_strategy"),
               "ignored with fsdp_version 2 (deprecated in favor of fsdp_reshard_after_forward: "
               "true = FULL_SHARD, false = SHARD_GRAD_OP)");
  }
  if (f.reshard_after_forward_strategy.has_value()) {
    c.YamlError(Fsdp("fsdp_reshard_after_forward"),
                absl::StrCat("with fsdp_version 2 this is a bool (true = FULL_SHARD, false = "
                             "SHARD_GRAD_OP), not the strategy ",
                             std::string(Name(*f.reshard_after_forward_strategy)),
                             " (Accelerate: invalid truth value)"));
  }
  const bool reshard = BoolSetting(c, f.reshard_after_forward, "FSDP_RESHARD_AFTER_FORWARD", true);
  p.strategy = StrategyFromReshard(reshard);

  const ParallelismSection& par = c.yaml.parallelism;
  if (!par.present) return;
  const int replicate = par.dp_replicate_size.value_or(1);
  const int tp = par.tp_size.value_or(1), cp = par.cp_size.value_or(1);
  if (tp > 1) {
    c.YamlError({"parallelism_config", "parallelism_config_tp_size"},
                "tensor parallelism is not supported by this engine");
  }
  if (cp > 1) {
    c.YamlError({"parallelism_config", "parallelism_config_cp_size"},
                "context parallelism is not supported by this engine");
  }
  const int shard = par.dp_shard_size.value_or(std::max(1, p.num_processes / replicate));
  if (replicate * shard * tp * cp != p.num_processes) {
    c.YamlError({"parallelism_config"},
                absl::StrCat("dp_replicate_size × dp_shard_size × tp_size × cp_size = ",
                             replicate * shard * tp * cp, ", but num_processes is ",
                             p.num_processes));
    return;
  }
  if (replicate > 1) {
    p.strategy = reshard ? Strategy::kHybridShard : Strategy::kHybridShardZero2;
    p.shard_group_size = shard;
  }
}

void ResolveWrap(Context& c) {
  const FsdpSection& f = c.yaml.fsdp;
  TrainPlan& p = c.plan;
  p.wrap_policy = Either(f.auto_wrap_policy, [&] {
                    return c.env.Enum({"FSDP_AUTO_WRAP_POLICY"}, WrapPolicyNames());
                  }).value_or(WrapPolicy::kNoWrap);
  std::vector<std::string> classes;
  if (f.transformer_layer_cls_to_wrap.has_value()) {
    classes = *f.transformer_layer_cls_to_wrap;
  } else if (auto env = c.env.String({"FSDP_TRANSFORMER_CLS_TO_WRAP"})) {
    for (absl::string_view name : absl::StrSplit(*env, ',', absl::SkipWhitespace())) {
      classes.emplace_back(absl::StripAsciiWhitespace(name));
    }
  }
  const int64_t min_params =
      Either(f.min_num_params, [&] { return c.env.Int({"FSDP_MIN_NUM_PARAMS"}, 0); })
          .value_or(c.launcher_defaults() ? 100000000 : 0);
  if (p.wrap_policy == WrapPolicy::kTransformerBased) p.transformer_layer_cls_to_wrap = classes;
  if (p.wrap_policy != WrapPolicy::kTransformerBased && f.transformer_layer_cls_to_wrap &&
      !f.transformer_layer_cls_to_wrap->empty()) {
    c.YamlWarn(Fsdp("fsdp_transformer_layer_cls_to_wrap"),
               absl::StrCat("ignored: fsdp_auto_wrap_policy is ",
                            std::string(Name(p.wrap_policy))));
  }
  if (p.wrap_policy == WrapPolicy::kSizeBased) {
    p.min_num_params = min_params;
    if (min_params == 0) {
      c.YamlWarn(Fsdp("fsdp_min_num_params"),
                 "0 with SIZE_BASED_WRAP wraps nothing; policy read as NO_WRAP (Accelerate "
                 "drops the policy silently)");
      p.wrap_policy = WrapPolicy::kNoWrap;
    }
  }
}

}  // namespace

void ResolveFsdp(Context& c) {
  const FsdpSection& f = c.yaml.fsdp;
  TrainPlan& p = c.plan;
  const int version =
      Either<int>(f.version, [&]() -> std::optional<int> {
        auto v = c.env.Int({"FSDP_VERSION"}, 1, 2);
        return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
      }).value_or(1);
  p.fsdp_version = version;
  const bool v2 = version == 2;
  if (v2) {
    ResolveFsdp2Strategy(c);
  } else {
    ResolveFsdp1Strategy(c);
    if (c.yaml.parallelism.present) {
      c.YamlError({"parallelism_config"},
                  "needs distributed_type FSDP with fsdp_version 2 (Accelerate: \"You cannot "
                  "use --use_parallelism_config without --use_fsdp and --fsdp_version=2.\")");
    }
  }
  if (shard::IsHybrid(p.strategy)) {
    if (!v2) p.shard_group_size = std::max(1, p.num_processes / p.num_machines);
    if (p.shard_group_size == p.num_processes) {
      c.YamlWarn(v2 ? KeyPath{"parallelism_config"} : Fsdp("fsdp_sharding_strategy"),
                 "hybrid sharding over a single group shards over all processes, as the "
                 "non-hybrid strategy does");
    }
  }
  p.reshard_after_forward = ShardsParameters(p.strategy);

  const bool offload = BoolSetting(c, f.offload_params, "FSDP_OFFLOAD_PARAMS", false);
  p.offload_params = p.offload_optimizer = offload ? OffloadDevice::kCpu : OffloadDevice::kNone;
  ResolveWrap(c);

  auto bwd = Either(f.backward_prefetch, [&] {
    return c.env.Enum({"FSDP_BACKWARD_PREFETCH"}, BackwardPrefetchNames());
  });
  auto fwd = Either(f.forward_prefetch, [&] { return c.env.Bool({"FSDP_FORWARD_PREFETCH"}); });
  if (v2) {
    // FSDP2 has no knob: it always issues the next unit's all-gather early in backward.
    if (f.backward_prefetch && *f.backward_prefetch != BackwardPrefetch::kBackwardPre) {
      c.YamlWarn(Fsdp("fsdp_backward_prefetch"),
                 "not supported with fsdp_version 2, which always prefetches like BACKWARD_PRE");
    }
    p.backward_prefetch = BackwardPrefetch::kBackwardPre;
    if (f.forward_prefetch.value_or(false)) {
      c.YamlError(Fsdp("fsdp_forward_prefetch"),
                  "forward_prefetch is not yet implemented in FSDP2, set to None or use "
                  "fsdp_version=1");
    }
    p.forward_prefetch = false;
  } else {
    p.backward_prefetch = bwd.value_or(BackwardPrefetch::kNone);
    p.forward_prefetch = fwd.value_or(false);
  }

  auto sdt = Either(f.state_dict_type, [&] {
    return c.env.Enum({"FSDP_STATE_DICT_TYPE"}, StateDictTypeNames());
  });
  p.state_dict_type = sdt.value_or(v2 ? StateDictType::kSharded : StateDictType::kFull);
  if (v2 && p.state_dict_type == StateDictType::kLocal) {
    c.YamlError(Fsdp("fsdp_state_dict_type"),
                "FSDP2 does not support LOCAL_STATE_DICT. Please set fsdp_state_dict_type to "
                "SHARDED_STATE_DICT or FULL_STATE_DICT.");
  }
  p.save_16bit_model = p.state_dict_type == StateDictType::kFull;

  const bool launcher = c.launcher_defaults();
  p.cpu_ram_efficient_loading =
      BoolSetting(c, f.cpu_ram_efficient_loading, "FSDP_CPU_RAM_EFFICIENT_LOADING", launcher);
  if (v2) {
    constexpr std::string_view kObsolete = "obsolete with fsdp_version 2; ignored";
    // Obsolete in FSDP2: parameters stay addressable by name (DTensors), and only
    // cpu_ram_efficient_loading broadcasts from rank 0.
    if (f.use_orig_params) c.YamlWarn(Fsdp("fsdp_use_orig_params"), kObsolete);
    if (f.sync_module_states) c.YamlWarn(Fsdp("fsdp_sync_module_states"), kObsolete);
    p.use_orig_params = true;
    p.sync_module_states = p.cpu_ram_efficient_loading;
  } else {
    p.use_orig_params = BoolSetting(c, f.use_orig_params, "FSDP_USE_ORIG_PARAMS", launcher);
    p.sync_module_states =
        BoolSetting(c, f.sync_module_states, "FSDP_SYNC_MODULE_STATES", launcher);
    if (p.cpu_ram_efficient_loading && !p.sync_module_states) {
      c.YamlWarn(Fsdp("fsdp_sync_module_states"),
                 "sync_module_states cannot be False since efficient cpu ram loading enabled. "
                 "Setting sync_module_states to True.");
      p.sync_module_states = true;
    }
  }
  p.zero3_init = p.cpu_ram_efficient_loading && ShardsParameters(p.strategy);
  p.activation_checkpointing =
      BoolSetting(c, f.activation_checkpointing, "FSDP_ACTIVATION_CHECKPOINTING", false);
  if (v2 && p.activation_checkpointing && p.wrap_policy == WrapPolicy::kNoWrap) {
    c.YamlError(Fsdp("fsdp_activation_checkpointing"),
                "needs an fsdp_auto_wrap_policy with fsdp_version 2 (it checkpoints the children "
                "of wrapped modules)");
  }
  auto ignored = Either(f.ignored_modules, [&] { return c.env.String({"FSDP_IGNORED_MODULES"}); });
  if (ignored.has_value() && !ignored->empty()) {
    c.YamlError(Fsdp("fsdp_ignored_modules"),
                "ignoring modules is not supported by this engine (every parameter is sharded)");
  }
  p.prefetch = PrefetchPlan{};
  p.mixed_precision.mode = RequestedPrecision(c, /*include_yaml=*/true);
  ResolveTorchPrecision(c);
  ResolveTorchTraining(c);
}

void ResolveDdp(Context& c) {
  TrainPlan& p = c.plan;
  p.strategy = Strategy::kNoShard;
  p.reshard_after_forward = false;
  p.wrap_policy = WrapPolicy::kNoWrap;
  p.state_dict_type = StateDictType::kFull;
  p.save_16bit_model = true;
  p.use_orig_params = true;
  p.sync_module_states = p.num_processes > 1;  // DDP broadcasts rank 0's weights on wrap
  p.prefetch = PrefetchPlan{};
  p.mixed_precision.mode = RequestedPrecision(c, /*include_yaml=*/true);
  ResolveTorchPrecision(c);
  ResolveTorchTraining(c);
}

}  // namespace accel::config::internal
