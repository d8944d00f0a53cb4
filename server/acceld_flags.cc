#include "server/acceld_flags.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <ostream>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/base/logging.h"
#include "rpc/channel.h"
#include "job/cluster_values.h"
#include "job/job_file.h"

namespace accel::server {
namespace {

namespace fs = std::filesystem;

// accel-worker next to this binary (an install), else ../worker/accel-worker (the build tree).
std::string DefaultWorkerBin() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "accel-worker";
  const fs::path dir = self.parent_path();
  for (const fs::path& p : {dir / "accel-worker", dir.parent_path() / "worker" / "accel-worker"}) {
    if (fs::exists(p)) return p.string();
  }
  return (dir / "accel-worker").string();
}

absl::Status IntIn(const char* flag, int v, int min, int max, const char* meaning) {
  if (v >= min && v <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(flag, ": must be an integer from ", min, " to ", max, meaning, ", got ", v));
}

// Seconds: finite and in [min, max] (nan fails every comparison, so it is refused too).
absl::Status SecondsIn(const char* flag, double v, double min, double max) {
  if (v >= min && v <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(flag, ": must be a number of seconds from ", min, " to ", max, ", got ", v));
}

// A file acceld writes once serving: its folder must be there (and writable) now.
absl::Status WritableFolderOf(const char* flag, const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, " is a folder, not a file"));
  }
  const fs::path parent = fs::path(path).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  if (!fs::is_directory(folder, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": the folder ", folder, " of ", path, " does not exist"));
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": the folder ", folder, " of ", path, " is not writable"));
  }
  return absl::OkStatus();
}

// A host:port to listen on ("" = none where the flag allows it): port 0 (any free port) to
// 65535 in digits. gRPC and the kernel would wrap 99999 into another port without a word.
absl::Status ListenAddressIn(const char* flag, const std::string& address) {
  if (address.empty()) return absl::OkStatus();
  const size_t colon = address.rfind(':');
  const std::string port =
      colon == std::string::npos ? std::string() : address.substr(colon + 1);
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port) digits = digits && c >= '0' && c <= '9';
  if (colon == 0 || !digits || std::stoi(port) > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": must be host:port with a port from 0 (any free port) to 65535, got '", address,
        "'"));
  }
  return absl::OkStatus();
}

struct RawValues {
  double grace_s = 10;
  double heartbeat_s = 60;
  std::string log_level = "info";
  std::string finished_ttl = "0";
};

absl::Status Check(const RawValues& raw, AcceldOptions& o) {
  if (!SetLogLevel(raw.log_level)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--log-level: must be trace, debug, info, warn or error, got ", raw.log_level));
  }
  for (absl::Status s : {
           IntIn("--cpu-slots", o.cpu_slots, 0, kMaxCpuSlots,
                 " (0: no CPU jobs; only with GPUs or a cluster launcher)"),
           IntIn("--gpus", o.gpus, -1, kMaxGpus, " (-1: find them through CUDA)"),
           SecondsIn("--heartbeat-timeout", raw.heartbeat_s, job::kMinHeartbeatTimeoutS,
                     kMaxHeartbeatTimeoutS),
           SecondsIn("--stop-grace", raw.grace_s, 0, kMaxStopGraceS),
           WritableFolderOf("--address-file", o.address_file),
           WritableFolderOf("--http-address-file", o.http_address_file),
           ListenAddressIn("--listen", o.listen),
           ListenAddressIn("--http-listen", o.http_listen),
       }) {
    if (!s.ok()) return s;
  }
  if (!o.slurm.time.empty()) {
    if (absl::Status s = job::CheckSlurmTime(o.slurm.time); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--slurm-time: ", s.message()));
    }
  }
  absl::StatusOr<absl::Duration> ttl =
      ParseRetentionDuration(raw.finished_ttl, "--finished-job-ttl");
  if (!ttl.ok()) return ttl.status();
  o.retention.finished_ttl = *ttl;
  o.stop_grace = absl::Seconds(raw.grace_s);
  o.heartbeat_timeout = absl::Seconds(raw.heartbeat_s);
  return absl::OkStatus();
}

}  // namespace

int ParseAcceldFlags(const std::vector<std::string>& args, AcceldOptions* options,
                     std::ostream& out, std::ostream& err) {
  CLI::App app{"acceld: the accel coordinator daemon"};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  AcceldOptions& o = *options;
  o.state_dir = rpc::DefaultStateDir();
  o.worker_bin = DefaultWorkerBin();
  o.cpu_slots = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  RawValues raw;
  app.add_option("--listen", o.listen, "TCP host:port (port 0: any free port; \"\" = none)")
      ->capture_default_str();
  app.add_option("--unix-socket", o.unix_socket, "also listen on this unix socket (mode 0600)");
  app.add_option("--state-dir", o.state_dir, "jobs, events, checkpoints (SQLite), token, logs")
      ->capture_default_str();
  app.add_option("--cpu-slots", o.cpu_slots,
                 "CPU slots to schedule (one rank each); 0: no CPU jobs, only with GPUs or a "
                 "cluster launcher")
      ->capture_default_str();
  app.add_option("--gpus", o.gpus,
                 "GPUs to schedule as device kind cuda: -1 finds them through the CUDA runtime; "
                 "N >= 0 declares N (indices 0..N-1) without looking")
      ->capture_default_str();
  app.add_option("--token-file", o.token_file,
                 "client token file (default <state-dir>/token; "
                 "created 0600 when absent)");
  app.add_option("--data-root", o.data_roots,
                 "a directory every path a job names must resolve under (repeatable); without "
                 "it any path (docs/rpc.md, \"What acceld reads on a client's behalf\")");
  app.add_option("--worker-bin", o.worker_bin, "the accel-worker executable")
      ->capture_default_str();
  app.add_option("--tls-cert", o.tls_cert, "PEM certificate chain: serve TLS on --listen");
  app.add_option("--tls-key", o.tls_key, "PEM private key for --tls-cert");
  app.add_option("--address-file", o.address_file,
                 "write the bound address here once serving (its folder must exist)");
  app.add_option("--stop-grace", raw.grace_s,
                 "seconds between SIGTERM and SIGKILL when a gang stops, 0 to 3600 (a job's "
                 "stop_grace_s wins)")
      ->capture_default_str();
  app.add_option("--heartbeat-timeout", raw.heartbeat_s,
                 "seconds a rank may stay silent, 4 to 604800 (a job's heartbeat_timeout_s wins)")
      ->capture_default_str();
  app.add_option("--keep-finished-jobs", o.retention.keep_finished,
                 "keep at most this many ended jobs, forgetting the earliest ended (0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--finished-job-ttl", raw.finished_ttl,
                 "forget ended jobs this long after they ended, e.g. 7d, 12h, 30m (0: never)")
      ->capture_default_str();
  app.add_option("--launcher", o.launcher,
                 "who starts a job's ranks when its job file names none: local | slurm | "
                 "kubernetes (slurm: needs $SLURM_CONF or /etc/slurm/slurm.conf)")
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
  app.add_option("--slurm-partition", o.slurm.partition,
                 "sbatch --partition (a job's "
                 "resources.slurm.partition wins)");
  app.add_option("--slurm-account", o.slurm.account, "sbatch --account");
  app.add_option("--slurm-time", o.slurm.time, "sbatch --time, e.g. 04:00:00");
  app.add_option("--slurm-constraint", o.slurm.constraint, "sbatch --constraint");
  KubernetesOptions& k = o.kubernetes;
  app.add_option("--kube-api", k.api_url,
                 "the API server (default https://"
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
  app.add_option("--kube-image-pull-policy", k.image_pull_policy, "Always | IfNotPresent | Never");
  app.add_option("--kube-master-port", k.master_port, "MASTER_PORT on pod 0")
      ->capture_default_str();
  app.add_option("--http-listen", o.http_listen,
                 "serve /metrics (Prometheus), the web dashboard and /healthz on this host:port "
                 "(e.g. 127.0.0.1:9090; the client token is required but for /healthz)");
  app.add_option("--http-address-file", o.http_address_file,
                 "write the HTTP side's host:port here once serving (its folder must exist)");
  app.add_option("--log-level", raw.log_level, "trace | debug | info | warn | error")
      ->capture_default_str();

  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 pops from the back
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err) == 0 ? 0 : 2;
  }
  if (absl::Status s = Check(raw, o); !s.ok()) {
    err << "acceld: " << s.message() << "\n";
    return 2;
  }
  return kStartAcceld;
}

}  // namespace accel::server
