// GrpcStore: the engine's rendezvous Store (engine/comm/store.h) served by acceld's
// WorkerService KV, so a gang bootstraps gloo through the coordinator instead of a shared
// directory. Keys are scoped to the job by acceld; callers prefix them per attempt
// (comm::PrefixStore with the assignment's rendezvous prefix).
//
// A long Get/Wait is split into calls of at most kMaxServerWait each, so acceld never parks a
// thread for longer than that on one call; the caller's timeout is honoured overall and ends in
// DeadlineExceeded naming the missing keys. Transport failures are Unavailable. Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "accel/v1/worker.grpc.pb.h"
#include "absl/time/time.h"
#include "engine/comm/store.h"

namespace accel::rpc {

inline constexpr absl::Duration kMaxServerWait = absl::Seconds(10);

class GrpcStore final : public comm::Store {
 public:
  GrpcStore(std::shared_ptr<grpc::Channel> channel, std::string token);

  [[nodiscard]] absl::Status Set(const std::string& key, const std::string& value) override;
  [[nodiscard]] absl::StatusOr<std::string> Get(const std::string& key,
                                                absl::Duration timeout) override;
  [[nodiscard]] absl::Status Wait(const std::vector<std::string>& keys,
                                  absl::Duration timeout) override;
  [[nodiscard]] absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;

 private:
  void Prepare(grpc::ClientContext& ctx, absl::Duration wait) const;

  std::unique_ptr<accel::v1::WorkerService::Stub> stub_;
  const std::string token_;
};

}  // namespace accel::rpc
