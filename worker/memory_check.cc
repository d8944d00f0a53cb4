#include "worker/memory_check.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/status_macros.h"
#include "engine/config/planned_run.h"
#include "engine/plan/memory_plan.h"

namespace accel::worker {
namespace {

// What a suggested change must leave free beyond its plan: what the plan does not count and the
// process adds after the check (the data file's pages, thread stacks, communication buffers,
// allocator slack; 10-40 MiB on the CPU runs measured), with room to spare. Refusing itself
// uses no slack (memory_check.h).
constexpr int64_t kSuggestionSlack = int64_t{64} << 20;

struct Budget {
  int64_t available = 0;
  std::string source;  // "memory cgroup limit 300.0 MiB (FILE), less 12.0 MiB resident"
};

Budget BudgetOf(const ProcessMemory& m, int local_ranks) {
  Budget b;
  // What this process holds already and the cgroup is charged for (its anonymous memory: the
  // libraries' pages are page cache, charged to whoever read them first); every local rank is
  // assumed to hold as much.
  const int64_t resident = std::max<int64_t>(m.rss_anon, 0) * local_ranks;
  if (m.cgroup.limit >= 0) {
    b.available = m.cgroup.limit - resident;
    b.source = absl::StrCat("memory cgroup limit ", plan::FormatBytes(m.cgroup.limit), " in ",
                            m.cgroup.limit_file, ", less ", plan::FormatBytes(resident),
                            " already resident (RssAnon)");
  } else {
    // MemAvailable already leaves out what this process holds.
    b.available = m.mem_available;
    b.source = "MemAvailable in /proc/meminfo (no memory cgroup limit)";
  }
  return b;
}

// The RAM the machine's ranks need under `options` (machine totals of the RAM pools).
struct Need {
  int64_t bytes = 0;
  plan::MemoryPlan plan;
};

absl::StatusOr<Need> NeedOf(const model::ModelConfig& config, const config::TrainOptions& options,
                            int world, int rank, int local_ranks, bool on_gpu) {
  plan::MemoryPlanOptions po;
  po.world = world;
  po.rank = rank;
  po.ranks_on_machine = std::min(local_ranks, world);
  po.first_local_rank = std::min(rank / po.ranks_on_machine * po.ranks_on_machine,
                                 world - po.ranks_on_machine);
  ACCEL_ASSIGN_OR_RETURN(plan::MemoryPlan plan,
                         plan::PlanMemory(config, config::PlannedRunOf(options), po));
  Need n;
  n.bytes = on_gpu ? plan.machine_pool_peak[static_cast<int>(MemoryPool::kHost)]
                   : plan.MachineRamBytes();
  n.plan = std::move(plan);
  return n;
}

// The changes that would make the plan fit, each planned: "activation_checkpointing",
// "micro-batch 2", ...
std::vector<std::string> WhatWouldFit(const model::ModelConfig& config,
                                      const config::TrainOptions& options, const MemoryCheckInput& in,
                                      int64_t available) {
  std::vector<std::string> fits;
  auto fits_with = [&](int world, const std::function<void(config::TrainOptions&)>& change) {
    config::TrainOptions o = options;
    change(o);
    absl::StatusOr<Need> need = NeedOf(config, o, world, in.rank % world, in.local_ranks, in.on_gpu);
    return need.ok() && need->bytes + kSuggestionSlack <= available;
  };
  auto try_option = [&](const std::string& name, int world,
                        const std::function<void(config::TrainOptions&)>& change) {
    const bool fit = fits_with(world, change);
    if (fit) fits.push_back(name);
    return fit;
  };
  if (!options.activation_checkpointing) {
    try_option("activation_checkpointing", in.world,
               [](config::TrainOptions& o) { o.activation_checkpointing = true; });
  }
  const shard::Strategy s = options.shard.strategy;
  const bool shards_params = s == shard::Strategy::kFullShard || s == shard::Strategy::kHybridShard;
  if (!shards_params && in.world > 1) {
    try_option("full_shard", in.world,
               [](config::TrainOptions& o) { o.shard.strategy = shard::Strategy::kFullShard; });
  }
  if (!in.on_gpu && options.shard.offload_dir.empty() &&
      options.shard.master_dtype == DType::kF32) {
    // On a CPU, offload to host memory moves bytes between two pools of the same RAM: only
    // offload to files (NVMe) lowers it.
    try_option("offload_optimizer to NVMe (offload_dir)", in.world, [](config::TrainOptions& o) {
      o.shard.offload_optimizer = true;
      o.shard.offload_dir = "nvme";
    });
    try_option("offload_optimizer + offload_params to NVMe with full_shard", in.world,
               [](config::TrainOptions& o) {
                 o.shard.offload_optimizer = o.shard.offload_params = true;
                 o.shard.offload_dir = "nvme";
                 o.shard.offload_param_dir.clear();  // the parameters with the optimizer
                 o.shard.offload_params_to_host = false;
                 if (o.shard.strategy != shard::Strategy::kHybridShard) {
                   o.shard.strategy = shard::Strategy::kFullShard;
                 }
               });
  }
  if (s != shard::Strategy::kNoShard) {
    for (int machines = 2; machines <= 16; machines *= 2) {
      const int world = in.world * machines;
      if (try_option(absl::StrCat(machines, "x the machines (world ", world, ")"), world,
                     [](config::TrainOptions&) {})) {
        break;
      }
    }
  }
  // The largest smaller micro-batch that fits. Only the activations depend on it and they grow
  // with it, so a binary search plans log2(batch) times (counting down planned once per value:
  // micro_batch 2^20 kept a worker here for hours, issue 28).
  int64_t lo = 1, hi = options.batch - 1, largest = 0;
  while (lo <= hi) {
    const int64_t b = lo + (hi - lo) / 2;
    if (fits_with(in.world, [b](config::TrainOptions& o) { o.batch = b; })) {
      largest = b;
      lo = b + 1;
    } else {
      hi = b - 1;
    }
  }
  if (largest > 0) fits.push_back(absl::StrCat("micro-batch ", largest));
  return fits;
}

}  // namespace

absl::Status CheckMemoryPlan(const MemoryCheckInput& in, const ProcessMemory& machine) {
  const config::TrainOptions& options = *in.options;
  if (options.ignore_memory_plan) return absl::OkStatus();
  // Options from a typed plan were validated by the one lowering and carry their model: no
  // second validation, no config.json read. Others (library callers, tests) keep the
  // Trainer's errors for bad options.
  if (!options.resolved_model.has_value()) {
    ACCEL_RETURN_IF_ERROR(config::ValidateTrainOptions(options));
  }
  ACCEL_ASSIGN_OR_RETURN(model::ModelConfig config, config::ModelConfigOf(Env::Default(), options));
  ACCEL_ASSIGN_OR_RETURN(Need need,
                         NeedOf(config, options, in.world, in.rank, in.local_ranks, in.on_gpu));
  if (machine.cgroup.limit < 0 && machine.mem_available < 0) {
    return absl::OkStatus();  // nothing to compare with (no /proc/meminfo)
  }
  const Budget budget = BudgetOf(machine, std::min(in.local_ranks, in.world));
  if (need.bytes <= budget.available) return absl::OkStatus();
  // Name the pool that holds most of it, with its largest category.
  const plan::MemoryPlan& p = need.plan;
  const MemoryPool pool =
      !in.on_gpu && p.pool_peak[0] >= p.pool_peak[1] ? MemoryPool::kDevice : MemoryPool::kHost;
  int largest = 0;
  for (int c = 1; c < kNumMemoryCategories; ++c) {
    if (p.peak[static_cast<int>(pool)][c] > p.peak[static_cast<int>(pool)][largest]) largest = c;
  }
  const std::vector<std::string> fits = WhatWouldFit(config, options, in, budget.available);
  return absl::FailedPreconditionError(absl::StrCat(
      "memory plan does not fit: the ", std::string(MemoryPoolName(pool)), " pool needs ",
      p.pool_peak[static_cast<int>(pool)], " bytes per rank (",
      std::string(MemoryCategoryName(static_cast<MemoryCategory>(largest))), " ",
      plan::FormatBytes(p.peak[static_cast<int>(pool)][largest]), "), ",
      p.ranks_on_machine, " rank(s) on this machine need ", need.bytes, " bytes (",
      plan::FormatBytes(need.bytes), ") of RAM, available ", budget.available, " bytes (",
      budget.source, "); ",
      fits.empty() ? "none of activation_checkpointing, NVMe offload, full_shard, more "
                     "machines or a smaller micro-batch would fit"
                                : absl::StrCat("would fit with: ", absl::StrJoin(fits, ", "),
                                  " (each planned, with 64 MiB to spare)"),
      "; --ignore-memory-plan (job key train.ignore_memory_plan) starts it anyway"));
}

}  // namespace accel::worker
