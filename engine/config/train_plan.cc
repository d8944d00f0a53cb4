#include "engine/config/train_plan.h"

namespace accel::config {

std::string_view Name(DistributedType v) {
  switch (v) {
    case DistributedType::kNo: return "NO";
    case DistributedType::kMultiCpu: return "MULTI_CPU";
    case DistributedType::kMultiGpu: return "MULTI_GPU";
    case DistributedType::kFsdp: return "FSDP";
    case DistributedType::kDeepSpeed: return "DEEPSPEED";
  }
  return "?";
}

std::string_view Name(Strategy v) {
  switch (v) {
    case Strategy::kNoShard: return "no_shard";
    case Strategy::kZero1: return "zero1";
    case Strategy::kShardGradOp: return "shard_grad_op";
    case Strategy::kFullShard: return "full_shard";
    case Strategy::kHybridShard: return "hybrid_shard";
    case Strategy::kHybridShardZero2: return "hybrid_shard_zero2";
  }
  return "?";
}

std::string_view Name(OffloadDevice v) {
  switch (v) {
    case OffloadDevice::kNone: return "none";
    case OffloadDevice::kCpu: return "cpu";
    case OffloadDevice::kNvme: return "nvme";
  }
  return "?";
}

std::string_view Name(WrapPolicy v) {
  switch (v) {
    case WrapPolicy::kTransformerBased: return "transformer_based_wrap";
    case WrapPolicy::kSizeBased: return "size_based_wrap";
    case WrapPolicy::kNoWrap: return "no_wrap";
  }
  return "?";
}

std::string_view Name(BackwardPrefetch v) {
  switch (v) {
    case BackwardPrefetch::kNone: return "none";
    case BackwardPrefetch::kBackwardPre: return "backward_pre";
    case BackwardPrefetch::kBackwardPost: return "backward_post";
  }
  return "?";
}

std::string_view Name(StateDictType v) {
  switch (v) {
    case StateDictType::kFull: return "full";
    case StateDictType::kSharded: return "sharded";
    case StateDictType::kLocal: return "local";
  }
  return "?";
}

std::string_view Name(PrecisionMode v) {
  switch (v) {
    case PrecisionMode::kNo: return "no";
    case PrecisionMode::kFp16: return "fp16";
    case PrecisionMode::kBf16: return "bf16";
  }
  return "?";
}

std::string_view Name(FloatType v) {
  switch (v) {
    case FloatType::kFp32: return "fp32";
    case FloatType::kBf16: return "bf16";
    case FloatType::kFp16: return "fp16";
  }
  return "?";
}

bool ShardsParameters(Strategy s) {
  return s == Strategy::kFullShard || s == Strategy::kHybridShard;
}

}  // namespace accel::config
