#include "rpc/grpc_store.h"

#include <algorithm>
#include <chrono>

#include "engine/comm/in_memory_store.h"
#include "rpc/channel.h"
#include "rpc/status.h"

namespace accel::rpc {
namespace {

// Headroom over the server-side wait before the client gives up on a call.
constexpr absl::Duration kCallSlack = absl::Seconds(10);

}  // namespace

GrpcStore::GrpcStore(std::shared_ptr<grpc::Channel> channel, std::string token)
    : stub_(accel::v1::WorkerService::NewStub(std::move(channel))), token_(std::move(token)) {}

void GrpcStore::Prepare(grpc::ClientContext& ctx, absl::Duration wait) const {
  Authorize(ctx, token_);
  ctx.set_deadline(std::chrono::system_clock::now() +
                   absl::ToChronoMilliseconds(wait + kCallSlack));
  ctx.set_wait_for_ready(false);
}

absl::Status GrpcStore::Set(const std::string& key, const std::string& value) {
  grpc::ClientContext ctx;
  Prepare(ctx, absl::ZeroDuration());
  accel::v1::KvSetRequest req;
  req.set_key(key);
  req.set_value(value);
  accel::v1::KvSetResponse resp;
  return FromGrpc(stub_->KvSet(&ctx, req, &resp));
}

absl::StatusOr<std::string> GrpcStore::Get(const std::string& key, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    const absl::Duration wait =
        std::clamp(deadline - absl::Now(), absl::ZeroDuration(), kMaxServerWait);
    grpc::ClientContext ctx;
    Prepare(ctx, wait);
    accel::v1::KvGetRequest req;
    req.set_key(key);
    req.set_timeout_ms(absl::ToInt64Milliseconds(wait));
    accel::v1::KvGetResponse resp;
    grpc::Status s = stub_->KvGet(&ctx, req, &resp);
    if (s.ok()) return resp.value();
    if (s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) return FromGrpc(s);
    if (absl::Now() >= deadline) return comm::MissingKeysError({key}, timeout);
  }
}

absl::Status GrpcStore::Wait(const std::vector<std::string>& keys, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    const absl::Duration wait =
        std::clamp(deadline - absl::Now(), absl::ZeroDuration(), kMaxServerWait);
    grpc::ClientContext ctx;
    Prepare(ctx, wait);
    accel::v1::KvWaitRequest req;
    for (const std::string& k : keys) req.add_keys(k);
    req.set_timeout_ms(absl::ToInt64Milliseconds(wait));
    accel::v1::KvWaitResponse resp;
    grpc::Status s = stub_->KvWait(&ctx, req, &resp);
    if (s.ok()) return absl::OkStatus();
    if (s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) return FromGrpc(s);
    if (absl::Now() >= deadline) {
      // The server's message names the keys still missing at its last try.
      return absl::DeadlineExceededError(s.error_message());
    }
  }
}

absl::StatusOr<int64_t> GrpcStore::Add(const std::string& key, int64_t delta) {
  grpc::ClientContext ctx;
  Prepare(ctx, absl::ZeroDuration());
  accel::v1::KvAddRequest req;
  req.set_key(key);
  req.set_delta(delta);
  accel::v1::KvAddResponse resp;
  grpc::Status s = stub_->KvAdd(&ctx, req, &resp);
  if (!s.ok()) return FromGrpc(s);
  return resp.value();
}

}  // namespace accel::rpc
