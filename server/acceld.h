// Acceld: the daemon put together — state directory, SQLite store, event log, registry,
// supervisor, job manager, and the gRPC server (Coordinator, WorkerService, grpc.health.v1).
// acceld_main.cc wraps it with flags and signals; tests run it in-process.
//
// State directory layout: state.db (+ -wal, -shm), token (0600, unless --token-file points
// elsewhere), logs/<job>/attempt-<n>/rank-<r>.log.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/core/event_log.h"
#include "server/http/http_server.h"
#include "server/http/job_telemetry.h"
#include "server/core/job_manager.h"
#include "server/core/job_registry.h"
#include "server/core/retention.h"
#include "server/services/rpc_metrics.h"
#include "server/services/services.h"
#include "server/core/state_store.h"
#include "server/launchers/kubernetes_launcher.h"
#include "server/launchers/slurm_launcher.h"
#include "server/launchers/supervisor.h"

namespace accel::server {

inline constexpr char kAcceldVersion[] = "accel 0.1.0";

struct AcceldOptions {
  std::string listen = "127.0.0.1:7070";  // host:port; port 0 picks a free one; "" = no TCP
  std::string unix_socket;                // also listen here (mode 0600)
  std::string state_dir;                  // required
  int cpu_slots = -1;  // -1: the number of cores; 0: none (only with GPUs or a cluster launcher)
  int gpus = -1;                          // -1: found through CUDA; N >= 0: N declared GPUs
  std::string token_file;                 // default <state_dir>/token
  std::string worker_bin;                 // accel-worker
  std::vector<std::string> worker_args;
  // PEM files; TLS on the TCP port when both are given. Workers then use the unix socket
  // (unix_socket, or <state_dir>/acceld.sock when that is empty).
  std::string tls_cert, tls_key;
  std::string address_file;               // written with the bound address once serving
  absl::Duration stop_grace = absl::Seconds(10);
  absl::Duration heartbeat_timeout = absl::Seconds(60);
  absl::Duration heartbeat_interval = absl::Seconds(2);
  // Ended jobs acceld forgets by itself (--keep-finished-jobs, --finished-job-ttl).
  RetentionPolicy retention{.keep_finished = 1000};
  // Launchers (docs/deploy.md): the default of jobs that name none, and the others enabled
  // besides local. A cluster launcher needs an address its nodes can dial: `advertise`
  // (host:port), else --listen's when that is neither loopback nor a wildcard.
  std::string launcher = "local";
  std::vector<std::string> launchers;
  std::string advertise;
  // With --tls-cert, cluster workers dial the TLS port and check acceld against this PEM CA
  // bundle (a path on the shared filesystem; default: --tls-cert itself, for a self-signed one).
  std::string worker_tls_ca;
  SlurmOptions slurm;
  KubernetesOptions kubernetes;
  // host:port of the HTTP side (/metrics, the dashboard, /healthz); "" = none. Port 0 picks one.
  std::string http_listen;
  std::string http_address_file;  // written with "host:port" of the HTTP side once serving
  // --data-root (repeatable): the directories every path a job names must resolve under;
  // empty: any path (docs/rpc.md, "What acceld reads on a client's behalf").
  std::vector<std::string> data_roots;
};

class Acceld {
 public:
  // Opens the state, recovers unfinished jobs and starts serving. Errors name the flag or file.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Acceld>> Start(AcceldOptions options);
  ~Acceld();

  // The address local clients use: "127.0.0.1:<port>" (TLS when certificates were given) or
  // "unix:<path>".
  const std::string& address() const { return address_; }
  // The address workers get (ACCEL_COORDINATOR): address(), or with TLS the plaintext unix
  // socket.
  const std::string& worker_address() const { return worker_address_; }
  const std::string& client_token() const { return token_; }
  // "host:port" of the HTTP side as bound; "" without --http-listen.
  std::string http_address() const { return http_ ? http_->address() : ""; }
  JobManager& manager() { return *manager_; }
  // The parts the HTTP side reads (server/http/dashboard.h).
  JobRegistry& registry() const { return *registry_; }
  EventLog& events() const { return *events_; }
  StateStore& store() const { return *store_; }
  // Health NOT_SERVING, stop accepting calls, stop every gang (SIGTERM, grace, SIGKILL). Job
  // states stay, so the next start resumes them. Idempotent.
  void Shutdown();

 private:
  // The state directory's lock (held for the daemon's life; released last).
  std::shared_ptr<void> state_lock_;
  Acceld() = default;
  // Makes the cluster launchers o.launcher and o.launchers name and tells the manager where
  // their workers dial. InvalidArgument naming the flag.
  // `host`: --listen's host as local clients dial it (a wildcard read as 127.0.0.1).
  absl::Status AddClusterLaunchers(const AcceldOptions& o, const std::string& host, int tcp_port);
  // With --http-listen: follows every job's events into telemetry_ (replaying those of
  // unfinished jobs from the store first). Before the manager starts, so nothing is missed.
  absl::Status FollowTelemetry();
  // With --http-listen: serves /metrics and the dashboard (acceld_http.cc).
  absl::Status StartHttp();

  AcceldOptions options_;
  std::string address_;
  std::string worker_address_;
  std::string token_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<EventLog> events_;
  std::unique_ptr<JobRegistry> registry_;
  std::unique_ptr<Supervisor> supervisor_;
  std::vector<std::unique_ptr<GangRunner>> cluster_launchers_;
  std::unique_ptr<JobManager> manager_;
  std::unique_ptr<CoordinatorService> coordinator_;
  std::unique_ptr<WorkerServiceImpl> worker_service_;
  std::unique_ptr<grpc::Server> server_;
  RpcMetrics rpc_metrics_;
  std::unique_ptr<JobTelemetry> telemetry_;
  std::unique_ptr<HttpServer> http_;
  bool shut_down_ = false;
};

}  // namespace accel::server
