// The plan's enums (proto/accel/v1/plan.proto) <-> the engine's, one pair per kind. Encoding
// is total over the engine's values; decoding refuses a value this build does not know (a plan
// from a newer acceld) with InvalidArgument naming `field`. Used by plan_proto.cc and its test.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "accel/v1/plan.pb.h"
#include "engine/config/train_options.h"
#include "engine/io/async_io.h"

namespace accel::job {

accel::v1::ShardStrategy ToProto(shard::Strategy s);
accel::v1::BackwardPrefetchKind ToProto(shard::BackwardPrefetch p);
accel::v1::PlanDType ToProto(DType d);
accel::v1::LrScheduleKind ToProto(optim::ScheduleKind k);
accel::v1::DeepSpeedLrType ToProto(optim::DeepSpeedLr::Type t);
accel::v1::StateDictType ToProto(config::TrainOptions::StateDictType t);
accel::v1::AioBackendKind ToProto(io::AioBackend b);

[[nodiscard]] absl::StatusOr<shard::Strategy> FromProto(accel::v1::ShardStrategy s,
                                                        std::string_view field);
[[nodiscard]] absl::StatusOr<shard::BackwardPrefetch> FromProto(accel::v1::BackwardPrefetchKind p,
                                                                std::string_view field);
[[nodiscard]] absl::StatusOr<DType> FromProto(accel::v1::PlanDType d, std::string_view field);
[[nodiscard]] absl::StatusOr<optim::ScheduleKind> FromProto(accel::v1::LrScheduleKind k,
                                                            std::string_view field);
[[nodiscard]] absl::StatusOr<optim::DeepSpeedLr::Type> FromProto(accel::v1::DeepSpeedLrType t,
                                                                 std::string_view field);
[[nodiscard]] absl::StatusOr<config::TrainOptions::StateDictType> FromProto(
    accel::v1::StateDictType t, std::string_view field);
[[nodiscard]] absl::StatusOr<io::AioBackend> FromProto(accel::v1::AioBackendKind b,
                                                       std::string_view field);

// Device and launcher: the spec's words at the door (resources.device, resources.launcher),
// enums after it. InvalidArgument naming `field` for a word or value this build does not know.
[[nodiscard]] absl::StatusOr<accel::v1::PlanDevice> DeviceToProto(std::string_view device,
                                                                  std::string_view field);
[[nodiscard]] absl::StatusOr<accel::v1::LauncherKind> LauncherToProto(std::string_view launcher,
                                                                      std::string_view field);
[[nodiscard]] absl::StatusOr<std::string> DeviceFromProto(accel::v1::PlanDevice d,
                                                          std::string_view field);
[[nodiscard]] absl::StatusOr<std::string> LauncherFromProto(accel::v1::LauncherKind l,
                                                            std::string_view field);

}  // namespace accel::job
