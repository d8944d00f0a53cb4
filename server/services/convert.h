// proto <-> plain conversions for the gRPC services (the only place both worlds meet).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "accel/v1/coordinator.pb.h"
#include "accel/v1/job.pb.h"
#include "accel/v1/worker.pb.h"
#include "engine/config/lower.h"
#include "server/core/job_manager.h"
#include "server/core/state_store.h"
#include "server/core/types.h"

namespace accel::server {

// The record acceld stores for a submitted spec: the spec as it runs (job::ResolvedSpec), the
// plan beside it, and the typed knobs the manager acts on. InvalidArgument for a device kind
// it does not know.
[[nodiscard]] absl::StatusOr<JobRecord> JobRecordFromSpec(const accel::v1::JobSpec& spec,
                                                          const config::LoweredJob& lowered);
// GetJob's JobPlan of a stored accel.v1.TrainingPlan; InvalidArgument when it is empty, does
// not parse, or does not decode (job::PlannedJobFromPlan).
[[nodiscard]] absl::StatusOr<accel::v1::JobPlan> ShownPlan(const std::string& training_plan);
// acceld's PlanHooks for its state store: a stored plan must decode; a job stored before plans
// existed gets one by lowering its stored spec once (job::PlanJobSpec, files read through env).
PlanHooks AcceldPlanHooks(Env* env = Env::Default());
// last_seq is filled in by the caller (it lives in the EventLog).
accel::v1::Job JobToProto(const JobRecord& job, int64_t last_seq);
// DataLoss when the stored body does not parse.
[[nodiscard]] absl::StatusOr<accel::v1::Event> EventToProto(const Event& event);
accel::v1::Checkpoint CheckpointToProto(const CheckpointRecord& c);
// The scheduler's view as GetCluster answers it (also the dashboard's /api/v1/cluster).
accel::v1::Cluster ClusterToProto(const ClusterView& v, const std::string& version);
// A worker's event as a report; heartbeats give nullopt. InvalidArgument for an empty event.
[[nodiscard]] absl::StatusOr<std::optional<WorkerReport>> ReportFromProto(
    const accel::v1::WorkerEvent& event);
// proto3 JSON with the .proto field names.
std::string MessageToJson(const google::protobuf::Message& m);

}  // namespace accel::server
