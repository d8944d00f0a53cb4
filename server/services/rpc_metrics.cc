#include "server/services/rpc_metrics.h"

#include <chrono>

namespace accel::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

// One per call: created when the call arrives, records when its status is about to be sent.
class TimingInterceptor final : public grpc::experimental::Interceptor {
 public:
  TimingInterceptor(RpcMetrics* metrics, const char* method)
      : metrics_(metrics), method_(method), start_(std::chrono::steady_clock::now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start_;
      metrics_->Record(method_, methods->GetSendStatus().error_code(), took.count());
    }
    methods->Proceed();
  }

 private:
  RpcMetrics* const metrics_;
  const std::string method_;
  const std::chrono::steady_clock::time_point start_;
};

class TimingInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit TimingInterceptorFactory(RpcMetrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    // gRPC owns and deletes the interceptor when the call ends.
    return new TimingInterceptor(metrics_, info->method() != nullptr ? info->method() : "unknown");
  }

 private:
  RpcMetrics* const metrics_;
};

// "/accel.v1.Coordinator/SubmitJob" -> {"accel.v1.Coordinator", "SubmitJob"}.
std::pair<std::string_view, std::string_view> SplitMethod(std::string_view full) {
  if (!full.empty() && full.front() == '/') full.remove_prefix(1);
  const size_t slash = full.rfind('/');
  if (slash == std::string_view::npos) return {"", full};
  return {full.substr(0, slash), full.substr(slash + 1)};
}

}  // namespace

std::string_view GrpcCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN";
  }
}

void RpcMetrics::Record(std::string_view method, grpc::StatusCode code, double seconds) {
  absl::MutexLock lock(&mu_);
  auto it = methods_.find(method);
  if (it == methods_.end()) it = methods_.emplace(std::string(method), PerMethod{}).first;
  ++it->second.calls_by_code[static_cast<int>(code)];
  it->second.latency.Observe(seconds);
}

void RpcMetrics::Render(PrometheusText& out) const {
  absl::MutexLock lock(&mu_);
  using Type = PrometheusText::Type;
  out.Family("accel_rpc_requests_total", "gRPC calls acceld finished, by method and status code.",
             Type::kCounter);
  for (const auto& [full, m] : methods_) {
    const auto [service, method] = SplitMethod(full);
    for (const auto& [code, n] : m.calls_by_code) {
      out.Sample("accel_rpc_requests_total",
                 {{"service", service},
                  {"method", method},
                  {"code", GrpcCodeName(static_cast<grpc::StatusCode>(code))}},
                 static_cast<double>(n));
    }
  }
  out.Family("accel_rpc_duration_seconds",
             "Time from a gRPC call's arrival to its status (streams: their whole length).",
             Type::kHistogram);
  for (const auto& [full, m] : methods_) {
    const auto [service, method] = SplitMethod(full);
    out.Histogram("accel_rpc_duration_seconds", {{"service", service}, {"method", method}},
                  m.latency);
  }
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
RpcMetrics::InterceptorFactory() {
  return std::make_unique<TimingInterceptorFactory>(this);
}

}  // namespace accel::server
