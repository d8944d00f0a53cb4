// The gRPC services of acceld, thin by design: check the bearer token, translate proto <-> plain
// types, call JobManager / JobRegistry / EventLog, translate absl::Status -> grpc::Status.
//
// Auth (docs/rpc.md §Auth): every call needs `authorization: Bearer <token>`. The client API
// takes the client token; a job's worker token there is PERMISSION_DENIED. The worker API takes
// only worker tokens, each valid for its job's current attempt. A missing or unknown token is
// UNAUTHENTICATED. grpc.health.v1 needs no token (probes).
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>
#include <vector>

#include "accel/v1/coordinator.grpc.pb.h"
#include "accel/v1/worker.grpc.pb.h"
#include "server/core/event_log.h"
#include "server/core/job_manager.h"
#include "server/core/job_registry.h"
#include "server/core/state_store.h"

namespace accel::server {

struct ServiceDeps {
  std::string client_token;
  JobManager* manager = nullptr;
  JobRegistry* registry = nullptr;
  EventLog* events = nullptr;
  StateStore* store = nullptr;
  std::string version;
  // How long CancelJob waits for the workers to be gone before answering.
  absl::Duration cancel_wait = absl::Seconds(60);
  // --data-root, canonical (rpc::DataRoots): every path a job names must lie under one; empty:
  // any path (docs/rpc.md, "What acceld reads on a client's behalf").
  std::vector<std::string> data_roots;
};

class CoordinatorService final : public accel::v1::Coordinator::Service {
 public:
  explicit CoordinatorService(ServiceDeps deps) : d_(std::move(deps)) {}

  grpc::Status SubmitJob(grpc::ServerContext* ctx, const accel::v1::SubmitJobRequest* req,
                         accel::v1::SubmitJobResponse* resp) override;
  grpc::Status GetJob(grpc::ServerContext* ctx, const accel::v1::GetJobRequest* req,
                      accel::v1::Job* resp) override;
  grpc::Status ListJobs(grpc::ServerContext* ctx, const accel::v1::ListJobsRequest* req,
                        accel::v1::ListJobsResponse* resp) override;
  grpc::Status CancelJob(grpc::ServerContext* ctx, const accel::v1::CancelJobRequest* req,
                         accel::v1::Job* resp) override;
  grpc::Status DeleteJob(grpc::ServerContext* ctx, const accel::v1::DeleteJobRequest* req,
                         accel::v1::Job* resp) override;
  grpc::Status WatchJob(grpc::ServerContext* ctx, const accel::v1::WatchJobRequest* req,
                        grpc::ServerWriter<accel::v1::Event>* writer) override;
  grpc::Status ListCheckpoints(grpc::ServerContext* ctx,
                               const accel::v1::ListCheckpointsRequest* req,
                               accel::v1::ListCheckpointsResponse* resp) override;
  grpc::Status GetCluster(grpc::ServerContext* ctx, const accel::v1::GetClusterRequest* req,
                          accel::v1::Cluster* resp) override;

 private:
  grpc::Status CheckClient(grpc::ServerContext* ctx) const;
  accel::v1::Job ToProto(const JobRecord& job) const;

  ServiceDeps d_;
};

class WorkerServiceImpl final : public accel::v1::WorkerService::Service {
 public:
  explicit WorkerServiceImpl(ServiceDeps deps) : d_(std::move(deps)) {}

  grpc::Status Register(grpc::ServerContext* ctx, const accel::v1::RegisterRequest* req,
                        accel::v1::Assignment* resp) override;
  grpc::Status ReportEvents(grpc::ServerContext* ctx,
                            grpc::ServerReader<accel::v1::WorkerEvent>* reader,
                            accel::v1::ReportEventsResponse* resp) override;
  grpc::Status KvSet(grpc::ServerContext* ctx, const accel::v1::KvSetRequest* req,
                     accel::v1::KvSetResponse* resp) override;
  grpc::Status KvGet(grpc::ServerContext* ctx, const accel::v1::KvGetRequest* req,
                     accel::v1::KvGetResponse* resp) override;
  grpc::Status KvWait(grpc::ServerContext* ctx, const accel::v1::KvWaitRequest* req,
                      accel::v1::KvWaitResponse* resp) override;
  grpc::Status KvAdd(grpc::ServerContext* ctx, const accel::v1::KvAddRequest* req,
                     accel::v1::KvAddResponse* resp) override;

 private:
  absl::StatusOr<WorkerIdentity> CheckWorker(grpc::ServerContext* ctx) const;

  ServiceDeps d_;
};

}  // namespace accel::server
