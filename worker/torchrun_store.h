// Rendezvous for a gang started the torchrun way (torchrun, srun, a Kubernetes indexed job, or
// by hand): worker/launch_env.h finds rank 0's address and port (MASTER_ADDR, the Slurm node
// list, an Accelerate config's main_process_ip) and this rank. Rank 0 serves
// the key-value store (rpc::StoreServer) on MASTER_PORT, and every rank, rank 0 included, uses
// it through rpc::GrpcStore — the same client daemon workers use against acceld. The store only
// bootstraps the communicators; gloo's own connections go rank to rank.
//
// Rank 0 binds MASTER_ADDR:MASTER_PORT when MASTER_ADDR is a loopback name (localhost,
// 127.x.x.x, ::1), otherwise 0.0.0.0:MASTER_PORT (a host name in MASTER_ADDR often resolves to
// 127.0.1.1 on the host itself, which other hosts cannot reach). ACCEL_RDZV_TOKEN, when set (to
// the same value on every rank), is required on every store call.
//
// The address each rank's gloo device listens on (NetworkRendezvous::local_address) is
// 127.0.0.1 for a loopback MASTER_ADDR, else this host's address on the route to MASTER_ADDR
// (what the kernel picks for a UDP socket connected there), so ranks on other hosts can reach it.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/comm/store.h"
#include "rpc/store_server.h"

namespace accel::worker {

struct TorchrunEnv {
  std::string master_addr;  // LaunchEnv::master_addr
  int master_port = 0;      // LaunchEnv::master_port
  std::string token;  // ACCEL_RDZV_TOKEN
};

struct NetworkRendezvous {
  std::unique_ptr<rpc::StoreServer> server;  // rank 0 only; serves until destroyed
  std::unique_ptr<comm::Store> store;
  std::string local_address;  // for comm::GlooOptions::hostname
};

// Rank 0 starts the server (Unavailable naming the address when the port is taken); every
// rank then waits up to `timeout` for the server to answer (Unavailable naming MASTER_ADDR,
// MASTER_PORT and the rank otherwise) and gets a store client. Keep the result alive until the
// communicators exist (rank 0: until training ends, since later ranks may still connect).
[[nodiscard]] absl::StatusOr<NetworkRendezvous> StartTorchrunRendezvous(const TorchrunEnv& env,
                                                                        int rank,
                                                                        absl::Duration timeout);

}  // namespace accel::worker
