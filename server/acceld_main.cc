// acceld: the accel coordinator daemon. Takes jobs over gRPC (accel.v1.Coordinator), runs each
// as a gang of accel-worker processes, and keeps every job, event and checkpoint record in
// SQLite under --state-dir. SIGTERM / SIGINT: stop the workers (SIGTERM, grace, SIGKILL) and
// exit; unfinished jobs resume on the next start.
#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "CLI/CLI.hpp"
#include "engine/base/logging.h"
#include "rpc/channel.h"
#include "server/acceld.h"

namespace {

// accel-worker next to this binary (an install), else ../worker/accel-worker (the build tree).
std::string DefaultWorkerBin() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "accel-worker";
  const std::filesystem::path dir = self.parent_path();
  for (const std::filesystem::path& p :
       {dir / "accel-worker", dir.parent_path() / "worker" / "accel-worker"}) {
    if (std::filesystem::exists(p)) return p.string();
  }
  return (dir / "accel-worker").string();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"acceld: the accel coordinator daemon"};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  accel::server::AcceldOptions o;
  o.state_dir = accel::rpc::DefaultStateDir();
  o.worker_bin = DefaultWorkerBin();
  o.cpu_slots = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double grace_s = 10, heartbeat_s = 60;
  std::string log_level = "info";
  std::string finished_ttl = "0";
  app.add_option("--listen", o.listen, "TCP host:port (port 0: any free port; \"\" = none)")
      ->capture_default_str();
  app.add_option("--unix-socket", o.unix_socket, "also listen on this unix socket (mode 0600)");
  app.add_option("--state-dir", o.state_dir, "jobs, events, checkpoints (SQLite), token, logs")
      ->capture_default_str();
  app.add_option("--cpu-slots", o.cpu_slots, "CPU slots to schedule (one rank each)")
      ->capture_default_str();
  app.add_option("--gpus", o.gpus,
                 "GPUs to schedule as device kind cuda: -1 finds them through the CUDA runtime; "
                 "N >= 0 declares N (indices 0..N-1) without looking")
      ->capture_default_str();
  app.add_option("--token-file", o.token_file, "client token file (default <state-dir>/token; "
                                               "created 0600 when absent)");
  app.add_option("--data-root", o.data_roots,
                 "a directory every path a job names must resolve under (repeatable); without "
                 "it any path (docs/rpc.md, \"What acceld reads on a client's behalf\")");
  app.add_option("--worker-bin", o.worker_bin, "the accel-worker executable")->capture_default_str();
  app.add_option("--tls-cert", o.tls_cert, "PEM certificate chain: serve TLS on --listen");
  app.add_option("--tls-key", o.tls_key, "PEM private key for --tls-cert");
  app.add_option("--address-file", o.address_file, "write the bound address here once serving");
  app.add_option("--stop-grace", grace_s, "seconds between SIGTERM and SIGKILL when a gang stops "
                                          "(a job's stop_grace_s wins)")
      ->capture_default_str();
  app.add_option("--heartbeat-timeout", heartbeat_s,
                 "seconds a rank may stay silent (a job's heartbeat_timeout_s wins)")
      ->capture_default_str();
  app.add_option("--keep-finished-jobs", o.retention.keep_finished,
                 "keep at most this many ended jobs, forgetting the earliest ended (0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--finished-job-ttl", finished_ttl,
                 "forget ended jobs this long after they ended, e.g. 7d, 12h, 30m (0: never)")
      ->capture_default_str();
  app.add_option("--launcher", o.launcher,
                 "who starts a job's ranks when its job file names none: local | slurm | "
                 "kubernetes")
      ->capture_default_str();
  app.add_option("--enable-launcher", o.launchers,
                 "also accept jobs for this launcher (resources.launcher); repeatable")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--advertise", o.advertise,
                 "host:port that workers on other machines dial (cluster launchers); default "
                 "--listen's when it is not loopback");
  app.add_option("--worker-tls-ca", o.worker_tls_ca,
                 "with --tls-cert: the CA file cluster workers check acceld against (default "
                 "--tls-cert)");
  app.add_option("--slurm-partition", o.slurm.partition, "sbatch --partition (a job's "
                                                          "resources.slurm.partition wins)");
  app.add_option("--slurm-account", o.slurm.account, "sbatch --account");
  app.add_option("--slurm-time", o.slurm.time, "sbatch --time, e.g. 04:00:00");
  app.add_option("--slurm-constraint", o.slurm.constraint, "sbatch --constraint");
  accel::server::KubernetesOptions& k = o.kubernetes;
  app.add_option("--kube-api", k.api_url, "the API server (default https://"
                                          "$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT)");
  app.add_option("--kube-token-file", k.token_file, "bearer token for the API server")
      ->capture_default_str();
  app.add_option("--kube-ca-file", k.ca_file, "CA bundle for the API server's certificate")
      ->capture_default_str();
  app.add_option("--kube-namespace", k.kube_namespace,
                 "namespace of the workers' Jobs (default: the service account's)");
  app.add_option("--kube-image", k.image, "the worker image (accel-worker at --worker-bin)");
  app.add_option("--kube-pvc", k.pvc, "PersistentVolumeClaim with the shared filesystem");
  app.add_option("--kube-mount", k.mount_path, "where --kube-pvc is mounted in the pods")
      ->capture_default_str();
  app.add_option("--kube-service-account", k.service_account, "the worker pods' service account");
  app.add_option("--kube-image-pull-policy", k.image_pull_policy,
                 "Always | IfNotPresent | Never");
  app.add_option("--kube-master-port", k.master_port, "MASTER_PORT on pod 0")
      ->capture_default_str();
  app.add_option("--http-listen", o.http_listen,
                 "serve /metrics (Prometheus), the web dashboard and /healthz on this host:port "
                 "(e.g. 127.0.0.1:9090; the client token is required but for /healthz)");
  app.add_option("--http-address-file", o.http_address_file,
                 "write the HTTP side's host:port here once serving");
  app.add_option("--log-level", log_level, "trace | debug | info | warn | error")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (!accel::SetLogLevel(log_level)) {
    std::fprintf(stderr, "acceld: unknown --log-level %s\n", log_level.c_str());
    return 2;
  }
  absl::StatusOr<absl::Duration> ttl =
      accel::server::ParseRetentionDuration(finished_ttl, "--finished-job-ttl");
  if (!ttl.ok()) {
    std::fprintf(stderr, "acceld: %s\n", std::string(ttl.status().message()).c_str());
    return 2;
  }
  o.retention.finished_ttl = *ttl;
  o.stop_grace = absl::Seconds(grace_s);
  o.heartbeat_timeout = absl::Seconds(heartbeat_s);

  // Every thread inherits this mask, so the signals arrive only at sigwait below. Workers get
  // a clean mask (Supervisor).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  absl::StatusOr<std::unique_ptr<accel::server::Acceld>> daemon =
      accel::server::Acceld::Start(o);
  if (!daemon.ok()) {
    std::fprintf(stderr, "acceld: error: %s\n", std::string(daemon.status().message()).c_str());
    // Input that cannot work (a taken state directory or socket, bad flags) is 2, as for flags.
    const absl::StatusCode code = daemon.status().code();
    return code == absl::StatusCode::kFailedPrecondition ||
                   code == absl::StatusCode::kInvalidArgument
               ? 2
               : 1;
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  ACCEL_LOG(info, "acceld: signal {}: stopping the workers and exiting", sig);
  (*daemon)->Shutdown();
  daemon->reset();
  return 0;
}
