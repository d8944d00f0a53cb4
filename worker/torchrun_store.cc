#include "worker/torchrun_store.h"

#include <chrono>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "rpc/grpc_store.h"
#include "worker/local_address.h"

namespace accel::worker {
absl::StatusOr<NetworkRendezvous> StartTorchrunRendezvous(const TorchrunEnv& env, int rank,
                                                          absl::Duration timeout) {
  NetworkRendezvous r;
  ACCEL_ASSIGN_OR_RETURN(r.local_address, LocalAddressToward(env.master_addr, env.master_port,
                                                            "MASTER_ADDR"));
  const std::string target = HostPort(env.master_addr, env.master_port);
  if (rank == 0) {
    const std::string bind = IsLoopbackHost(env.master_addr)
                                 ? target
                                 : absl::StrCat("0.0.0.0:", env.master_port);
    absl::StatusOr<std::unique_ptr<rpc::StoreServer>> server =
        rpc::StoreServer::Start(bind, env.token);
    if (!server.ok()) {
      return absl::UnavailableError(absl::StrCat("rank 0 (MASTER_PORT=", env.master_port,
                                                 "): ", server.status().message()));
    }
    r.server = std::move(*server);
  }
  // Ranks may start before rank 0 listens: wait for it rather than fail the first call,
  // retrying every second at most (gRPC's default backoff grows to two minutes).
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  const auto deadline = std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout);
  if (!channel->WaitForConnected(deadline)) {
    return absl::UnavailableError(absl::StrCat(
        "rank ", rank, ": no rendezvous store at MASTER_ADDR:MASTER_PORT = ", target,
        " after ", absl::FormatDuration(timeout), " (rank 0 serves it; is it running, and is "
        "the port reachable from here?)"));
  }
  r.store = std::make_unique<rpc::GrpcStore>(channel, env.token);
  return r;
}

}  // namespace accel::worker
