// RpcMetrics: per gRPC method, how many calls ended with each status code and how long they
// took (from the call's arrival to its status being sent), fed by a server interceptor that
// acceld installs on its gRPC server, and written into /metrics as
// accel_rpc_requests_total{service,method,code} and accel_rpc_duration_seconds{service,method}.
// Streaming calls (WatchJob, ReportEvents) count once, when they end, with their whole length.
// Thread-safe.
#pragma once

#include <grpcpp/support/server_interceptor.h>
#include <grpcpp/support/status.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/http/prometheus_text.h"

namespace accel::server {

class RpcMetrics {
 public:
  // `method` as gRPC names it: "/accel.v1.Coordinator/SubmitJob".
  void Record(std::string_view method, grpc::StatusCode code, double seconds);
  // The two families, each method's samples in name order.
  void Render(PrometheusText& out) const;

  // For grpc::ServerBuilder::experimental().SetInterceptorCreators; records into this object,
  // which must outlive the server.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> InterceptorFactory();

 private:
  struct PerMethod {
    std::map<int, int64_t> calls_by_code;
    LatencyHistogram latency;
  };
  mutable absl::Mutex mu_;
  std::map<std::string, PerMethod, std::less<>> methods_ ABSL_GUARDED_BY(mu_);
};

// "OK", "UNAUTHENTICATED", ... (the names gRPC's documentation and clients use).
std::string_view GrpcCodeName(grpc::StatusCode code);

}  // namespace accel::server
