#include "engine/plan/memory_plan.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/base/status_macros.h"
#include "engine/kernels/matmul_bf16.h"
#include "engine/model/architecture.h"
#include "engine/shard/shard_plan.h"
#include "engine/plan/memory_replay.h"

namespace accel::plan {
namespace {

std::string DTypesOf(const shard::ShardOptions& o) {
  const std::string params(DTypeName(o.param_dtype)), grads(DTypeName(o.reduce_dtype));
  if (o.param_dtype == DType::kF32 && o.reduce_dtype == DType::kF32) return "fp32";
  if (o.master_dtype != DType::kF32) return absl::StrCat(params, " params without masters");
  return absl::StrCat(params, " params, ", grads, " grads, f32 masters");
}

// stage3.py's estimate_zero3_model_states_mem_needs(total_params, largest_layer_params,
// num_gpus_per_node, num_nodes, cpu_offload, cpu_offload_params, zero_init=True,
// additional_buffer_factor=1.5).
DeepSpeedEstimate DeepSpeedZero3(const model::ModelLayout& layout, const shard::ShardOptions& o,
                                 int world, int per_node) {
  DeepSpeedEstimate e;
  e.total_params = layout.config().NumParams();
  for (const model::ParamSpec& spec : layout.specs()) {
    int64_t n = 1;
    for (int64_t d : spec.shape) n *= d;
    e.largest_layer_params = std::max(e.largest_layer_params, n);
  }
  e.gpus_per_node = std::max(1, per_node);
  e.num_nodes = std::max(1, (world + e.gpus_per_node - 1) / e.gpus_per_node);
  const double total_gpus = static_cast<double>(e.num_nodes) * e.gpus_per_node;
  const double gpus_factor = 1.0 / e.num_nodes, buffer_factor = 1.5;
  const double psi = static_cast<double>(e.total_params);
  const double largest_layer_memory = 4.0 * static_cast<double>(e.largest_layer_params);
  double gpu = 0, cpu = 0;
  if (o.offload_optimizer && o.offload_params) {
    gpu = largest_layer_memory;
    cpu = psi * 18 * gpus_factor * buffer_factor;
  } else if (o.offload_optimizer) {
    gpu = largest_layer_memory + std::floor(2 * psi / total_gpus);
    cpu = psi * 16 * gpus_factor * buffer_factor;
  } else {
    gpu = largest_layer_memory + std::floor(18 * psi / total_gpus);
    cpu = static_cast<double>(e.largest_layer_params) * 4 * e.gpus_per_node * buffer_factor;
  }
  e.gpu_bytes_per_rank = static_cast<int64_t>(gpu);
  e.cpu_bytes_per_node = static_cast<int64_t>(cpu);
  return e;
}

struct RankPeaks {
  std::array<std::array<int64_t, kNumMemoryCategories>, kNumMemoryPools> peak{};
  std::array<int64_t, kNumMemoryPools> pool_peak{};
  std::string describe;
};

absl::StatusOr<RankPeaks> PlanRank(const model::ModelLayout& layout,
                                   const PlannedRun& options, int world, int rank,
                                   int64_t activation_bytes) {
  ACCEL_ASSIGN_OR_RETURN(shard::ShardPlan plan,
                         shard::ShardPlan::Create(layout, world, rank, options.shard));
  MemoryLedger ledger;
  ACCEL_RETURN_IF_ERROR(internal::ReplayRank({.layout = &layout,
                                              .plan = &plan,
                                              .run = &options,
                                              .activation_bytes = activation_bytes},
                                             &ledger));
  RankPeaks r;
  for (int p = 0; p < kNumMemoryPools; ++p) {
    for (int c = 0; c < kNumMemoryCategories; ++c) {
      r.peak[p][c] = ledger.Get(static_cast<MemoryPool>(p), static_cast<MemoryCategory>(c)).peak;
    }
    r.pool_peak[p] = ledger.PoolTotal(static_cast<MemoryPool>(p)).peak;
  }
  r.describe = plan.Describe();
  return r;
}

}  // namespace

int64_t MemoryPlan::RankRamBytes() const {
  return pool_peak[static_cast<int>(MemoryPool::kDevice)] +
         pool_peak[static_cast<int>(MemoryPool::kHost)];
}

int64_t MemoryPlan::MachineRamBytes() const {
  return machine_pool_peak[static_cast<int>(MemoryPool::kDevice)] +
         machine_pool_peak[static_cast<int>(MemoryPool::kHost)];
}

absl::StatusOr<MemoryPlan> PlanMemory(const model::ModelConfig& config,
                                      const PlannedRun& options,
                                      const MemoryPlanOptions& po) {
  if (po.ranks_on_machine < 1 || po.first_local_rank < 0 ||
      po.first_local_rank + po.ranks_on_machine > po.world) {
    return absl::InvalidArgumentError(absl::StrCat(
        "memory plan: ranks ", po.first_local_rank, "..",
        po.first_local_rank + po.ranks_on_machine - 1, " on this machine do not fit a world of ",
        po.world));
  }
  ACCEL_ASSIGN_OR_RETURN(model::ModelLayout layout, model::ModelLayout::Create(config));
  MemoryPlan m;
  m.model = config.name();
  m.num_params = layout.num_params();
  m.batch = options.batch;
  m.seq = options.seq;
  m.dtypes = DTypesOf(options.shard);
  m.world = po.world;
  m.rank = po.rank;
  m.ranks_on_machine = po.ranks_on_machine;
  m.bf16_matmuls = po.bf16_matmuls.value_or(options.shard.param_dtype == DType::kBF16 &&
                                            kernels::Bf16MatmulIsNative());
  ACCEL_ASSIGN_OR_RETURN(
      const int64_t activations,
      model::PlannedActivationBytes(
          config, options.batch, options.seq,
          {.bf16_matmuls = m.bf16_matmuls, .checkpoint_blocks = options.activation_checkpointing}));
  ACCEL_ASSIGN_OR_RETURN(RankPeaks mine, PlanRank(layout, options, po.world, po.rank, activations));
  m.peak = mine.peak;
  m.pool_peak = mine.pool_peak;
  m.strategy = mine.describe;
  for (int r = po.first_local_rank; r < po.first_local_rank + po.ranks_on_machine; ++r) {
    ACCEL_ASSIGN_OR_RETURN(RankPeaks local, PlanRank(layout, options, po.world, r, activations));
    for (int p = 0; p < kNumMemoryPools; ++p) m.machine_pool_peak[p] += local.pool_peak[p];
  }
  m.deepspeed = DeepSpeedZero3(layout, options.shard, po.world, po.ranks_on_machine);
  return m;
}

std::string FormatBytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= (int64_t{1} << 30)) return absl::StrFormat("%.2f GiB", b / (1 << 30));
  if (bytes >= (int64_t{1} << 20)) return absl::StrFormat("%.1f MiB", b / (1 << 20));
  if (bytes >= (int64_t{1} << 10)) return absl::StrFormat("%.1f KiB", b / (1 << 10));
  return absl::StrCat(bytes, " B");
}

std::string MemoryPlanJson(const MemoryPlan& m) {
  std::string out = absl::StrCat(
      R"({"model":")", m.model, R"(","num_params":)", m.num_params, R"(,"batch":)", m.batch,
      R"(,"seq":)", m.seq, R"(,"plan":")", m.strategy, R"(","dtypes":")", m.dtypes,
      R"(","world":)", m.world, R"(,"bf16_matmuls":)", m.bf16_matmuls ? "true" : "false",
      R"(,"rank":{"rank":)", m.rank);
  for (int p = 0; p < kNumMemoryPools; ++p) {
    absl::StrAppend(&out, ",\"", std::string(MemoryPoolName(static_cast<MemoryPool>(p))), "\":{");
    for (int c = 0; c < kNumMemoryCategories; ++c) {
      absl::StrAppend(&out, c ? "," : "", "\"",
                      std::string(MemoryCategoryName(static_cast<MemoryCategory>(c))),
                      "\":", m.peak[p][c]);
    }
    absl::StrAppend(&out, ",\"total\":", m.pool_peak[p], "}");
  }
  absl::StrAppend(&out, ",\"ram\":", m.RankRamBytes(), R"(},"machine":{"ranks":)",
                  m.ranks_on_machine);
  for (int p = 0; p < kNumMemoryPools; ++p) {
    absl::StrAppend(&out, ",\"", std::string(MemoryPoolName(static_cast<MemoryPool>(p))),
                    "\":", m.machine_pool_peak[p]);
  }
  const DeepSpeedEstimate& d = m.deepspeed;
  absl::StrAppend(&out, ",\"ram\":", m.MachineRamBytes(),
                  R"(},"deepspeed_estimator":{"function":"estimate_zero3_model_states_mem_needs",)",
                  R"("total_params":)", d.total_params, R"(,"largest_layer_params":)",
                  d.largest_layer_params, R"(,"gpus_per_node":)", d.gpus_per_node,
                  R"(,"num_nodes":)", d.num_nodes, R"(,"gpu_bytes_per_rank":)",
                  d.gpu_bytes_per_rank, R"(,"cpu_bytes_per_node":)", d.cpu_bytes_per_node, "}}");
  return out;
}

std::string MemoryPlanTable(const MemoryPlan& m) {
  std::string out = absl::StrCat(
      "memory plan: ", m.model, " (", m.num_params, " parameters), micro-batch ", m.batch,
      ", sequence ", m.seq, ", ", m.dtypes, m.bf16_matmuls ? " (bf16 matmuls)" : "", "\n",
      m.strategy, "\n", "peak bytes of rank ", m.rank, " of ", m.world, ":\n");
  absl::StrAppend(&out, absl::StrFormat("  %-7s %-16s %14s %12s\n", "pool", "category", "bytes",
                                        ""));
  for (int p = 0; p < kNumMemoryPools; ++p) {
    if (m.pool_peak[p] == 0) continue;
    const std::string pool(MemoryPoolName(static_cast<MemoryPool>(p)));
    for (int c = 0; c < kNumMemoryCategories; ++c) {
      if (m.peak[p][c] == 0) continue;
      absl::StrAppend(&out, absl::StrFormat(
                                "  %-7s %-16s %14d %12s\n", pool,
                                std::string(MemoryCategoryName(static_cast<MemoryCategory>(c))),
                                m.peak[p][c], FormatBytes(m.peak[p][c])));
    }
    absl::StrAppend(&out, absl::StrFormat("  %-7s %-16s %14d %12s\n", pool, "total (peak)",
                                          m.pool_peak[p], FormatBytes(m.pool_peak[p])));
  }
  absl::StrAppend(&out, absl::StrFormat("rank total (compute + host): %s\n",
                                        FormatBytes(m.RankRamBytes())));
  absl::StrAppend(&out, absl::StrFormat("machine total (%d rank%s here): %s",
                                        m.ranks_on_machine, m.ranks_on_machine == 1 ? "" : "s",
                                        FormatBytes(m.MachineRamBytes())));
  const int64_t nvme = m.machine_pool_peak[static_cast<int>(MemoryPool::kNvme)];
  if (nvme > 0) absl::StrAppend(&out, ", plus ", FormatBytes(nvme), " on NVMe");
  const DeepSpeedEstimate& d = m.deepspeed;
  absl::StrAppend(&out, "\nDeepSpeed's estimator (estimate_zero3_model_states_mem_needs, model "
                        "states only, zero_init, buffer factor 1.5; largest layer ",
                  d.largest_layer_params, " params, ", d.gpus_per_node, " per node, ",
                  d.num_nodes, " node", d.num_nodes == 1 ? "" : "s", "): ",
                  FormatBytes(d.gpu_bytes_per_rank), " per GPU, ",
                  FormatBytes(d.cpu_bytes_per_node), " CPU per node\n");
  return out;
}

}  // namespace accel::plan
