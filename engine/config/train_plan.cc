#include "engine/config/train_plan.h"

#include <string>

#include "absl/strings/str_cat.h"

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

std::string_view Name(Strategy v) { return shard::StrategyName(v); }

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

absl::StatusOr<BackwardPrefetch> ParseBackwardPrefetch(std::string_view name) {
  if (name.empty() || name == "backward_pre" || name == "BACKWARD_PRE") {
    return BackwardPrefetch::kBackwardPre;
  }
  if (name == "backward_post" || name == "BACKWARD_POST") return BackwardPrefetch::kBackwardPost;
  if (name == "none" || name == "NO_PREFETCH") return BackwardPrefetch::kNone;
  return absl::InvalidArgumentError(absl::StrCat(
      "must be backward_pre, backward_post or none, got '", std::string(name), "'"));
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
