// StoreServer: a rendezvous key-value store served over gRPC by rank 0 of a gang started the
// torchrun way (MASTER_ADDR / MASTER_PORT, no acceld). It implements only the KV calls of
// accel.v1.WorkerService (KvSet, KvGet, KvWait, KvAdd) over one comm::InMemoryStore, so every
// rank — rank 0 too — talks to it with rpc::GrpcStore exactly as daemon workers talk to acceld.
// Register and ReportEvents answer UNIMPLEMENTED.
//
// Auth: with a non-empty token every call must carry `authorization: Bearer <token>`
// (UNAUTHENTICATED otherwise); with an empty token anyone who reaches the port may read and
// write keys, as with torch's TCPStore. One call never waits longer than kMaxServerWait
// (GrpcStore calls again). SO_REUSEPORT is off, so a port another process holds is an error,
// not a silently shared socket. Thread-safe; stops (cancelling waiting calls) on destruction.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace accel::rpc {

class StoreServer {
 public:
  // Listens on `address` ("host:port"; port 0 picks a free one). Unavailable naming the
  // address when it cannot be bound.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<StoreServer>> Start(
      const std::string& address, const std::string& token = "");
  ~StoreServer();

  int port() const { return port_; }

 private:
  class Service;
  StoreServer() = default;

  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace accel::rpc
