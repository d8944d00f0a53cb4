#include "worker/standalone_config.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/status_macros.h"
#include "engine/config/accelerate_yaml.h"
#include "engine/config/document.h"
#include "engine/config/lower.h"
#include "engine/config/mode.h"

namespace accel::worker {
namespace {

using Copy = std::function<void(train::TrainOptions& to, const train::TrainOptions& from)>;

// Every flag whose setting a config can also decide, and the fields it owns.
const std::vector<std::pair<std::string, Copy>>& FlagFields() {
  using O = train::TrainOptions;
  static const auto* table = new std::vector<std::pair<std::string, Copy>>{
      {"--strategy", [](O& t, const O& f) { t.shard.strategy = f.shard.strategy; }},
      {"--hybrid-group-size",
       [](O& t, const O& f) { t.shard.hybrid_group_size = f.shard.hybrid_group_size; }},
      {"--forward-prefetch",
       [](O& t, const O& f) { t.shard.forward_prefetch = f.shard.forward_prefetch; }},
      {"--backward-prefetch",
       [](O& t, const O& f) { t.shard.backward_prefetch = f.shard.backward_prefetch; }},
      {"--no-reshard-after-forward",
       [](O& t, const O& f) { t.shard.reshard_after_forward = f.shard.reshard_after_forward; }},
      {"--param-persistence-threshold",
       [](O& t, const O& f) {
         t.shard.param_persistence_threshold = f.shard.param_persistence_threshold;
       }},
      {"--reduce-every-micro-step",
       [](O& t, const O& f) {
         t.shard.reduce_every_micro_step = f.shard.reduce_every_micro_step;
       }},
      {"--batch", [](O& t, const O& f) { t.batch = f.batch; }},
      {"--grad-accum", [](O& t, const O& f) { t.grad_accum = f.grad_accum; }},
      {"--grad-clip", [](O& t, const O& f) { t.grad_clip = f.grad_clip; }},
      {"--lr", [](O& t, const O& f) { t.schedule.base_lr = f.schedule.base_lr; }},
      {"--min-lr", [](O& t, const O& f) { t.schedule.min_lr = f.schedule.min_lr; }},
      {"--warmup", [](O& t, const O& f) { t.schedule.warmup_steps = f.schedule.warmup_steps; }},
      {"--schedule", [](O& t, const O& f) { t.schedule.kind = f.schedule.kind; }},
      {"--weight-decay", [](O& t, const O& f) { t.adamw.weight_decay = f.adamw.weight_decay; }},
      {"--beta1", [](O& t, const O& f) { t.adamw.beta1 = f.adamw.beta1; }},
      {"--beta2", [](O& t, const O& f) { t.adamw.beta2 = f.adamw.beta2; }},
      {"--eps", [](O& t, const O& f) { t.adamw.eps = f.adamw.eps; }},
      {"--sync-module-states",
       [](O& t, const O& f) { t.sync_module_states = f.sync_module_states; }},
      {"--state-dict-type", [](O& t, const O& f) { t.state_dict_type = f.state_dict_type; }},
      {"--save-16bit", [](O& t, const O& f) { t.save_16bit = f.save_16bit; }},
      {"--cpu-ram-efficient-loading",
       [](O& t, const O& f) { t.cpu_ram_efficient_loading = f.cpu_ram_efficient_loading; }},
      {"--zero3-init", [](O& t, const O& f) { t.zero3_init = f.zero3_init; }},
      {"--mixed-precision",
       [](O& t, const O& f) {
         t.shard.param_dtype = f.shard.param_dtype;
         t.shard.reduce_dtype = f.shard.reduce_dtype;
         t.shard.master_dtype = f.shard.master_dtype;
       }},
  };
  return *table;
}

}  // namespace

absl::StatusOr<StandaloneConfig> ApplyStandaloneConfig(StandaloneFlags* f, int world,
                                                       std::string_view world_source,
                                                       LauncherMachines machines, Env* env) {
  config::LoweringInputs in;
  in.job = f->train;
  if (!f->config.empty()) in.accelerate = {f->config, ""};
  if (!f->deepspeed_config.empty()) in.deepspeed = {f->deepspeed_config, ""};
  in.env = ProcessLaunchVars();  // the same map type as config::EnvMap
  in.launcher_world = world;
  in.launcher_world_source = std::string(world_source);
  if (machines.count > 0) {
    in.launcher_machines = machines.count;
    in.launcher_machines_source = machines.source;
  }
  in.accumulation_given = f->given.contains("--grad-accum");
  in.clipping_given = f->given.contains("--grad-clip");
  if (f->load_dtype == "bf16") in.load_dtype = config::FloatType::kBf16;
  const std::set<std::string> given = f->given;
  in.job_wins = [given](train::TrainOptions& lowered, const train::TrainOptions& job) {
    std::vector<std::string> kept;
    for (const auto& [flag, copy] : FlagFields()) {
      if (!given.contains(flag)) continue;
      copy(lowered, job);
      kept.push_back(flag);
    }
    return kept;
  };
  ACCEL_ASSIGN_OR_RETURN(config::LoweredJob lowered, config::Lower(in, env));
  f->train = std::move(lowered.options);
  StandaloneConfig out;
  out.source = std::move(lowered.source);
  out.notes = std::move(lowered.notes);
  out.model = std::move(lowered.model);
  return out;
}

std::optional<MultiNodeKeys> PeekMultiNodeKeys(const std::string& path, Env* env) {
  absl::StatusOr<std::string> text = ReadFileToString(env, path);
  if (!text.ok()) return std::nullopt;
  absl::StatusOr<config::Document> doc = config::ParseYamlDocument(*text, path);
  if (!doc.ok()) return std::nullopt;
  config::Diagnostics ignored;  // the lowering reports them
  const config::AccelerateConfig c = config::ReadAccelerateConfig(*doc, &ignored);
  MultiNodeKeys keys;
  keys.file = path;
  keys.num_processes = c.num_processes.value_or(0);
  keys.num_machines = std::max(1, c.num_machines.value_or(1));
  keys.machine_rank = c.machine_rank.value_or(0);
  keys.main_process_ip = c.main_process_ip.value_or("");
  keys.main_process_port = c.main_process_port.value_or(0);
  keys.rdzv_backend = c.rdzv_backend.value_or("");
  return keys;
}

void PrintResolvedMode(const train::TrainOptions& options, const StandaloneConfig& config,
                       bool json) {
  if (json) {
    std::printf("%s\n", config::ModeJson(options, config.source, config.notes).c_str());
  } else {
    std::printf("mode: %s%s\n", config::DescribeMode(options).c_str(),
                config.source.empty() ? "" : absl::StrCat(" (from ", config.source, ")").c_str());
    for (const std::string& n : config.notes) std::printf("warning: %s\n", n.c_str());
  }
  std::fflush(stdout);
}

}  // namespace accel::worker
