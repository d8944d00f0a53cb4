#include "job/plan_enums.h"

#include "absl/strings/str_cat.h"

namespace accel::job {
namespace {

namespace v1 = accel::v1;

absl::Status Unknown(std::string_view field, int value) {
  return absl::InvalidArgumentError(absl::StrCat(
      "training plan: ", std::string(field), " has value ", value,
      ", which this build does not know (a plan from a newer acceld?)"));
}

}  // namespace

v1::ShardStrategy ToProto(shard::Strategy s) {
  switch (s) {
    case shard::Strategy::kNoShard: return v1::STRATEGY_NO_SHARD;
    case shard::Strategy::kShardOptimizer: return v1::STRATEGY_SHARD_OPTIMIZER;
    case shard::Strategy::kShardGradOp: return v1::STRATEGY_SHARD_GRAD_OP;
    case shard::Strategy::kFullShard: return v1::STRATEGY_FULL_SHARD;
    case shard::Strategy::kHybridShard: return v1::STRATEGY_HYBRID_SHARD;
    case shard::Strategy::kHybridShardZero2: return v1::STRATEGY_HYBRID_SHARD_ZERO2;
  }
  return v1::SHARD_STRATEGY_UNSPECIFIED;
}

absl::StatusOr<shard::Strategy> FromProto(v1::ShardStrategy s, std::string_view field) {
  switch (s) {
    case v1::STRATEGY_NO_SHARD: return shard::Strategy::kNoShard;
    case v1::STRATEGY_SHARD_OPTIMIZER: return shard::Strategy::kShardOptimizer;
    case v1::STRATEGY_SHARD_GRAD_OP: return shard::Strategy::kShardGradOp;
    case v1::STRATEGY_FULL_SHARD: return shard::Strategy::kFullShard;
    case v1::STRATEGY_HYBRID_SHARD: return shard::Strategy::kHybridShard;
    case v1::STRATEGY_HYBRID_SHARD_ZERO2: return shard::Strategy::kHybridShardZero2;
    default: return Unknown(field, s);
  }
}

v1::BackwardPrefetchKind ToProto(shard::BackwardPrefetch p) {
  switch (p) {
    case shard::BackwardPrefetch::kNone: return v1::BACKWARD_PREFETCH_NONE;
    case shard::BackwardPrefetch::kBackwardPre: return v1::BACKWARD_PREFETCH_PRE;
    case shard::BackwardPrefetch::kBackwardPost: return v1::BACKWARD_PREFETCH_POST;
  }
  return v1::BACKWARD_PREFETCH_UNSPECIFIED;
}

absl::StatusOr<shard::BackwardPrefetch> FromProto(v1::BackwardPrefetchKind p,
                                                  std::string_view field) {
  switch (p) {
    case v1::BACKWARD_PREFETCH_NONE: return shard::BackwardPrefetch::kNone;
    case v1::BACKWARD_PREFETCH_PRE: return shard::BackwardPrefetch::kBackwardPre;
    case v1::BACKWARD_PREFETCH_POST: return shard::BackwardPrefetch::kBackwardPost;
    default: return Unknown(field, p);
  }
}

v1::PlanDType ToProto(DType d) {
  switch (d) {
    case DType::kF32: return v1::DTYPE_F32;
    case DType::kBF16: return v1::DTYPE_BF16;
    case DType::kF16: return v1::DTYPE_F16;
  }
  return v1::DTYPE_UNSPECIFIED;
}

absl::StatusOr<DType> FromProto(v1::PlanDType d, std::string_view field) {
  switch (d) {
    case v1::DTYPE_F32: return DType::kF32;
    case v1::DTYPE_BF16: return DType::kBF16;
    case v1::DTYPE_F16: return DType::kF16;
    default: return Unknown(field, d);
  }
}

v1::LrScheduleKind ToProto(optim::ScheduleKind k) {
  switch (k) {
    case optim::ScheduleKind::kConstant: return v1::LR_CONSTANT;
    case optim::ScheduleKind::kLinear: return v1::LR_LINEAR;
    case optim::ScheduleKind::kCosine: return v1::LR_COSINE;
  }
  return v1::LR_SCHEDULE_UNSPECIFIED;
}

absl::StatusOr<optim::ScheduleKind> FromProto(v1::LrScheduleKind k, std::string_view field) {
  switch (k) {
    case v1::LR_CONSTANT: return optim::ScheduleKind::kConstant;
    case v1::LR_LINEAR: return optim::ScheduleKind::kLinear;
    case v1::LR_COSINE: return optim::ScheduleKind::kCosine;
    default: return Unknown(field, k);
  }
}

v1::DeepSpeedLrType ToProto(optim::DeepSpeedLr::Type t) {
  switch (t) {
    case optim::DeepSpeedLr::Type::kWarmupLR: return v1::WARMUP_LR;
    case optim::DeepSpeedLr::Type::kWarmupDecayLR: return v1::WARMUP_DECAY_LR;
    case optim::DeepSpeedLr::Type::kWarmupCosineLR: return v1::WARMUP_COSINE_LR;
  }
  return v1::DEEPSPEED_LR_UNSPECIFIED;
}

absl::StatusOr<optim::DeepSpeedLr::Type> FromProto(v1::DeepSpeedLrType t,
                                                   std::string_view field) {
  switch (t) {
    case v1::WARMUP_LR: return optim::DeepSpeedLr::Type::kWarmupLR;
    case v1::WARMUP_DECAY_LR: return optim::DeepSpeedLr::Type::kWarmupDecayLR;
    case v1::WARMUP_COSINE_LR: return optim::DeepSpeedLr::Type::kWarmupCosineLR;
    default: return Unknown(field, t);
  }
}

v1::StateDictType ToProto(config::TrainOptions::StateDictType t) {
  switch (t) {
    case config::TrainOptions::StateDictType::kSharded: return v1::STATE_DICT_SHARDED;
    case config::TrainOptions::StateDictType::kFull: return v1::STATE_DICT_FULL;
  }
  return v1::STATE_DICT_UNSPECIFIED;
}

absl::StatusOr<config::TrainOptions::StateDictType> FromProto(v1::StateDictType t,
                                                              std::string_view field) {
  switch (t) {
    case v1::STATE_DICT_SHARDED: return config::TrainOptions::StateDictType::kSharded;
    case v1::STATE_DICT_FULL: return config::TrainOptions::StateDictType::kFull;
    default: return Unknown(field, t);
  }
}

v1::AioBackendKind ToProto(io::AioBackend b) {
  switch (b) {
    case io::AioBackend::kAuto: return v1::AIO_AUTO;
    case io::AioBackend::kThreads: return v1::AIO_THREADS;
    case io::AioBackend::kIoUring: return v1::AIO_IO_URING;
  }
  return v1::AIO_BACKEND_UNSPECIFIED;
}

absl::StatusOr<io::AioBackend> FromProto(v1::AioBackendKind b, std::string_view field) {
  switch (b) {
    case v1::AIO_AUTO: return io::AioBackend::kAuto;
    case v1::AIO_THREADS: return io::AioBackend::kThreads;
    case v1::AIO_IO_URING: return io::AioBackend::kIoUring;
    default: return Unknown(field, b);
  }
}

absl::StatusOr<v1::PlanDevice> DeviceToProto(std::string_view device, std::string_view field) {
  if (device.empty() || device == "cpu") return v1::DEVICE_CPU;
  if (device == "cuda") return v1::DEVICE_CUDA;
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), ": unknown device \"", std::string(device),
                   "\" (cpu or cuda)"));
}

absl::StatusOr<v1::LauncherKind> LauncherToProto(std::string_view launcher,
                                                 std::string_view field) {
  if (launcher.empty() || launcher == "local") return v1::LAUNCHER_LOCAL;
  if (launcher == "slurm") return v1::LAUNCHER_SLURM;
  if (launcher == "kubernetes") return v1::LAUNCHER_KUBERNETES;
  if (launcher == "standalone") return v1::LAUNCHER_STANDALONE;
  return absl::InvalidArgumentError(absl::StrCat(
      std::string(field), ": unknown launcher \"", std::string(launcher),
      "\" (local, slurm or kubernetes)"));
}

absl::StatusOr<std::string> DeviceFromProto(v1::PlanDevice d, std::string_view field) {
  switch (d) {
    case v1::DEVICE_CPU: return std::string("cpu");
    case v1::DEVICE_CUDA: return std::string("cuda");
    default: return Unknown(field, d);
  }
}

absl::StatusOr<std::string> LauncherFromProto(v1::LauncherKind l, std::string_view field) {
  switch (l) {
    case v1::LAUNCHER_LOCAL: return std::string("local");
    case v1::LAUNCHER_SLURM: return std::string("slurm");
    case v1::LAUNCHER_KUBERNETES: return std::string("kubernetes");
    case v1::LAUNCHER_STANDALONE: return std::string("standalone");
    default: return Unknown(field, l);
  }
}

}  // namespace accel::job
