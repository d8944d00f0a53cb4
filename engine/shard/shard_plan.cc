#include "engine/shard/shard_plan.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace accel::shard {

std::string_view StrategyName(Strategy s) {
  switch (s) {
    case Strategy::kNoShard: return "no_shard";
    case Strategy::kShardOptimizer: return "zero1";
    case Strategy::kShardGradOp: return "shard_grad_op";
    case Strategy::kFullShard: return "full_shard";
    case Strategy::kHybridShard: return "hybrid_shard";
    case Strategy::kHybridShardZero2: return "hybrid_shard_zero2";
  }
  return "unknown";
}

absl::StatusOr<Strategy> ParseStrategy(std::string_view name) {
  const std::string n = absl::AsciiStrToLower(absl::string_view(name.data(), name.size()));
  if (n == "no_shard" || n == "zero0") return Strategy::kNoShard;
  if (n == "zero1" || n == "shard_optimizer") return Strategy::kShardOptimizer;
  if (n == "shard_grad_op" || n == "zero2") return Strategy::kShardGradOp;
  if (n == "full_shard" || n == "zero3") return Strategy::kFullShard;
  if (n == "hybrid_shard") return Strategy::kHybridShard;
  if (n == "hybrid_shard_zero2") return Strategy::kHybridShardZero2;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown sharding strategy '", std::string(name),
      "' (expected no_shard, zero1, shard_grad_op, full_shard, hybrid_shard or hybrid_shard_zero2)"));
}

bool IsHybrid(Strategy s) {
  return s == Strategy::kHybridShard || s == Strategy::kHybridShardZero2;
}

bool ShardPlan::hybrid() const { return IsHybrid(options_.strategy); }

bool ShardPlan::params_persistent() const {
  return options_.strategy != Strategy::kFullShard && options_.strategy != Strategy::kHybridShard;
}

bool ShardPlan::reduce_per_unit() const {
  return options_.strategy != Strategy::kNoShard &&
         options_.strategy != Strategy::kShardOptimizer;
}

absl::StatusOr<ShardPlan> ShardPlan::Create(const model::ModelLayout& layout, int world, int rank,
                                            const ShardOptions& options) {
  if (world < 1) return absl::InvalidArgumentError(absl::StrCat("world size ", world, " < 1"));
  if (rank < 0 || rank >= world) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is outside the world of ", world, " ranks"));
  }
  if (options.max_inflight_gathers < 1) {
    return absl::InvalidArgumentError(absl::StrCat("max_inflight_gathers must be >= 1, got ",
                                                   options.max_inflight_gathers));
  }
  if (options.master_dtype != DType::kF32 &&
      !(options.master_dtype == DType::kBF16 && options.param_dtype == DType::kBF16)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "master_dtype ", std::string(DTypeName(options.master_dtype)), " needs param_dtype bf16 "
        "(low precision is bf16 only), got param_dtype ",
        std::string(DTypeName(options.param_dtype))));
  }
  if (options.offload_optimizer && options.master_dtype != DType::kF32) {
    return absl::InvalidArgumentError(
        "offload_optimizer needs fp32 masters; low precision (master_dtype bf16) keeps none");
  }
  if (!options.offload_dir.empty() && !options.offload_optimizer) {
    return absl::InvalidArgumentError(
        "offload_dir (NVMe offload) needs offload_optimizer: it says where offloaded state goes");
  }
  if (options.offload_tile_numel < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "offload_tile_numel (sub_group_size) must be at least 1, got ", options.offload_tile_numel));
  }
  if (absl::Status s = io::ValidateAioOptions(options.offload_aio);
      !options.offload_dir.empty() && !s.ok()) {
    return s;
  }
  if (!options.offload_param_dir.empty() && !options.offload_params) {
    return absl::InvalidArgumentError(
        "offload_param_dir (NVMe parameter offload) needs offload_params: it says where the "
        "offloaded parameter shards go");
  }
  if (options.offload_params_to_host &&
      (!options.offload_params || !options.offload_param_dir.empty())) {
    return absl::InvalidArgumentError(
        "offload_params_to_host needs offload_params and no offload_param_dir (it keeps the "
        "parameter shards in host memory)");
  }
  if (options.offload_params && options.master_dtype != DType::kF32) {
    return absl::InvalidArgumentError(
        "offload_params needs fp32 masters; low precision (master_dtype bf16) updates the "
        "parameters in place, which offload keeps off the compute memory");
  }
  if (absl::Status s = io::ValidateAioOptions(options.offload_aio);
      !options.offload_param_dir.empty() && !s.ok()) {
    return s;
  }
  if (options.offload_params && options.strategy != Strategy::kFullShard &&
      options.strategy != Strategy::kHybridShard) {
    return absl::InvalidArgumentError(absl::StrCat(
        "offload_params needs a strategy that shards parameters (full_shard, hybrid_shard); ",
        std::string(StrategyName(options.strategy)), " keeps them whole on the device"));
  }
  ShardPlan p;
  p.options_ = options;
  p.world_ = world;
  p.rank_ = rank;
  p.shard_size_ = world;
  if (p.hybrid()) {
    const int g = options.hybrid_group_size;
    if (g < 1 || world % g != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          std::string(StrategyName(options.strategy)), " needs a hybrid group size that divides the world (",
          world, " ranks), got ", g));
    }
    p.shard_size_ = g;
  }
  const int64_t S = p.shard_size_;
  const int64_t r = rank % S;
  for (int u = 0; u < layout.num_units(); ++u) {
    UnitShard us;
    us.offset = layout.unit(u).offset;
    us.numel = layout.unit(u).numel;
    us.padded_numel = (us.numel + S - 1) / S * S;
    us.shard_numel = us.padded_numel / S;
    us.shard_begin = r * us.shard_numel;
    us.shard_valid = std::clamp<int64_t>(us.numel - us.shard_begin, 0, us.shard_numel);
    p.total_padded_ += us.padded_numel;
    p.total_shard_ += us.shard_numel;
    p.units_.push_back(us);
  }
  return p;
}

std::vector<std::pair<int64_t, int64_t>> ShardPlan::OwnedFlatRanges() const {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const UnitShard& us : units_) {
    if (!optimizer_sharded()) {
      ranges.emplace_back(us.offset, us.offset + us.numel);
    } else if (us.shard_valid > 0) {
      ranges.emplace_back(us.offset + us.shard_begin, us.offset + us.shard_begin + us.shard_valid);
    }
  }
  return ranges;
}

bool ShardPlan::PrimaryReplica() const {
  if (options_.strategy == Strategy::kNoShard) return rank_ == 0;
  if (hybrid()) return shard_group_index() == 0;
  return true;
}

std::string ParamOffloadDir(const ShardOptions& o) {
  if (!o.offload_params) return "";
  if (!o.offload_param_dir.empty()) return o.offload_param_dir;
  return o.offload_optimizer && !o.offload_params_to_host ? o.offload_dir : "";
}

bool ParamsWithOptimizer(const ShardOptions& o) {
  return o.offload_params && o.offload_optimizer && ParamOffloadDir(o) == o.offload_dir;
}

namespace {
std::string Place(const std::string& dir) { return dir.empty() ? "the host" : "files in " + dir; }
}  // namespace

std::string ShardPlan::Describe() const {
  const ShardOptions& o = options_;
  std::string offload;
  if (ParamsWithOptimizer(o)) {
    offload = ", parameters and optimizer offloaded to " + Place(o.offload_dir);
  } else {
    if (o.offload_params) offload += ", parameters offloaded to " + Place(ParamOffloadDir(o));
    if (o.offload_optimizer) offload += ", optimizer offloaded to " + Place(o.offload_dir);
  }
  return absl::StrCat(std::string(StrategyName(o.strategy)), ": ", world_, " ranks, shard group ",
                      shard_size_, ", ", units_.size(), " units, ", total_shard_,
                      " elements per shard (", total_padded_, " padded)", offload);
}

}  // namespace accel::shard
