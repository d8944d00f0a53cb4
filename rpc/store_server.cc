#include "rpc/store_server.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "accel/v1/worker.grpc.pb.h"
#include "engine/comm/in_memory_store.h"
#include "rpc/grpc_store.h"
#include "rpc/status.h"

namespace accel::rpc {
namespace {

// Compares without an early exit, so timing does not reveal a prefix.
bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

absl::Duration ServerWait(int64_t timeout_ms) {
  return std::clamp(absl::Milliseconds(timeout_ms), absl::ZeroDuration(), kMaxServerWait);
}

}  // namespace

class StoreServer::Service final : public accel::v1::WorkerService::Service {
 public:
  explicit Service(std::string token) : token_(std::move(token)) {}

  grpc::Status KvSet(grpc::ServerContext* ctx, const accel::v1::KvSetRequest* req,
                     accel::v1::KvSetResponse*) override {
    if (grpc::Status s = Check(*ctx); !s.ok()) return s;
    return ToGrpc(store_.Set(req->key(), req->value()));
  }
  grpc::Status KvGet(grpc::ServerContext* ctx, const accel::v1::KvGetRequest* req,
                     accel::v1::KvGetResponse* resp) override {
    if (grpc::Status s = Check(*ctx); !s.ok()) return s;
    absl::StatusOr<std::string> v = store_.Get(req->key(), ServerWait(req->timeout_ms()));
    if (!v.ok()) return ToGrpc(v.status());
    resp->set_value(*v);
    return grpc::Status::OK;
  }
  grpc::Status KvWait(grpc::ServerContext* ctx, const accel::v1::KvWaitRequest* req,
                      accel::v1::KvWaitResponse*) override {
    if (grpc::Status s = Check(*ctx); !s.ok()) return s;
    std::vector<std::string> keys(req->keys().begin(), req->keys().end());
    return ToGrpc(store_.Wait(keys, ServerWait(req->timeout_ms())));
  }
  grpc::Status KvAdd(grpc::ServerContext* ctx, const accel::v1::KvAddRequest* req,
                     accel::v1::KvAddResponse* resp) override {
    if (grpc::Status s = Check(*ctx); !s.ok()) return s;
    absl::StatusOr<int64_t> v = store_.Add(req->key(), req->delta());
    if (!v.ok()) return ToGrpc(v.status());
    resp->set_value(*v);
    return grpc::Status::OK;
  }

 private:
  grpc::Status Check(const grpc::ServerContext& ctx) const {
    if (token_.empty()) return grpc::Status::OK;
    const auto& md = ctx.client_metadata();
    auto it = md.find("authorization");
    std::string value;
    if (it != md.end()) value.assign(it->second.data(), it->second.size());
    if (!absl::StartsWithIgnoreCase(value, "bearer ") || !SameSecret(value.substr(7), token_)) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "rendezvous store: missing or wrong token (ACCEL_RDZV_TOKEN)");
    }
    return grpc::Status::OK;
  }

  const std::string token_;
  comm::InMemoryStore store_;
};

absl::StatusOr<std::unique_ptr<StoreServer>> StoreServer::Start(const std::string& address,
                                                                 const std::string& token) {
  std::unique_ptr<StoreServer> s(new StoreServer());
  s->service_ = std::make_unique<Service>(token);
  grpc::ServerBuilder builder;
  // Two processes on one port would split the keys between them: refuse instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &s->port_);
  builder.RegisterService(s->service_.get());
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "rendezvous store: cannot listen on ", address, " (port in use, or not an address of "
        "this host?)"));
  }
  return s;
}

StoreServer::~StoreServer() {
  if (server_ != nullptr) {
    // Calls still parked in a wait end within kMaxServerWait; don't hold the exit longer.
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }
}

}  // namespace accel::rpc
