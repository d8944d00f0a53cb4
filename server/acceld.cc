#include "server/acceld.h"

#include <grpcpp/health_check_service_interface.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "rpc/credential_files.h"
#include "job/job_file.h"
#include "server/services/convert.h"
#include "server/core/gpus.h"
#include "server/services/token_file.h"
#include "server/core/wall_clock.h"

extern char** environ;

namespace accel::server {
namespace {

// One acceld per state directory: an exclusive flock on <dir>/lock, held for the daemon's
// life and taken before anything in the directory is opened. The holder's pid is in the file,
// so a second acceld can say who has it.
absl::StatusOr<std::shared_ptr<void>> LockStateDir(const std::string& dir) {
  const std::string path = dir + "/lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("--state-dir: cannot open ", path, ": ", std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {0};
    const ssize_t n = ::pread(fd, pid, sizeof(pid) - 1, 0);
    ::close(fd);
    const std::string holder(pid, n > 0 ? static_cast<size_t>(n) : 0);
    return absl::FailedPreconditionError(absl::StrCat(
        "--state-dir ", dir, " is in use by acceld pid ",
        holder.empty() ? std::string("?") : std::string(absl::StripAsciiWhitespace(holder)),
        " (", path, "); stop it or give another --state-dir"));
  }
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    ACCEL_LOG(warn, "cannot record this pid in {}: {}", path, std::strerror(errno));
  }
  return std::shared_ptr<void>(nullptr, [fd](void*) { ::close(fd); });
}

// A unix socket path is only ever replaced when it is a socket nobody serves: a regular file
// there is refused, and a live socket means another daemon.
absl::Status ClearUnixSocket(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return absl::OkStatus();  // nothing there
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--unix-socket: ", path, " exists and is not a socket; refusing to replace it"));
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  const bool live =
      fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  if (fd >= 0) ::close(fd);
  if (live) {
    return absl::FailedPreconditionError(
        absl::StrCat("--unix-socket: ", path, " is served by another process"));
  }
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return absl::OkStatus();
}

// Writes "<address>\n" to `path` through a rename, so a reader waiting for the file never sees
// half of it (--address-file, --http-address-file).
std::error_code WriteAddressFile(const std::string& path, const std::string& address) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << address << "\n";
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return ec;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Acceld>> Acceld::Start(AcceldOptions o) {
  if (o.state_dir.empty()) return absl::InvalidArgumentError("--state-dir is required");
  if (o.listen.empty() && o.unix_socket.empty()) {
    return absl::InvalidArgumentError("give --listen or --unix-socket");
  }
  if (o.worker_bin.empty() || access(o.worker_bin.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("--worker-bin: no executable accel-worker at '",
                                            o.worker_bin, "'"));
  }
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  // The TLS files are read at the door, before the state directory is locked: a FIFO, a
  // device or a text file is refused naming it (rpc/credential_files.h) instead of blocking
  // or surfacing later as a failed listen.
  grpc::SslServerCredentialsOptions::PemKeyCertPair tls_pair;
  if (!o.tls_cert.empty()) {
    ACCEL_ASSIGN_OR_RETURN(tls_pair.cert_chain,
                           rpc::ReadPemFile(Env::Default(), o.tls_cert, "--tls-cert",
                                            rpc::PemKind::kCertificate));
    ACCEL_ASSIGN_OR_RETURN(tls_pair.private_key,
                           rpc::ReadPemFile(Env::Default(), o.tls_key, "--tls-key",
                                            rpc::PemKind::kPrivateKey));
  }
  if (o.cpu_slots < 0) o.cpu_slots = std::max(1u, std::thread::hardware_concurrency());
  const auto enabled = [&o](const std::string& launcher) {
    return o.launcher == launcher ||
           std::find(o.launchers.begin(), o.launchers.end(), launcher) != o.launchers.end();
  };
  // Before anything is opened: sbatch without a config asks DNS for a controller.
  if (enabled("slurm")) {
    ACCEL_RETURN_IF_ERROR(SlurmLauncher::FindConfig(std::getenv("SLURM_CONF")).status());
  }
  // Zero CPU slots: a GPU host that runs only GPU jobs, or a login node whose jobs all go to a
  // cluster. With neither, no job could ever run.
  const std::vector<GpuDevice> gpus = DiscoverGpus(o.gpus);
  if (o.cpu_slots == 0 && gpus.empty() && !enabled("slurm") && !enabled("kubernetes")) {
    return absl::InvalidArgumentError(
        "--cpu-slots 0: no CPU slots, no GPUs (none found; --gpus N declares them) and no "
        "cluster launcher: this acceld could run no job; give --cpu-slots 1 or more");
  }
  if (o.token_file.empty()) o.token_file = o.state_dir + "/token";
  ACCEL_ASSIGN_OR_RETURN(const std::vector<std::string> data_roots, rpc::DataRoots(o.data_roots));
  // Workers speak plaintext gRPC: with TLS on the TCP port they reach acceld through a private
  // unix socket (the given one, else <state_dir>/acceld.sock).
  const bool tls = !o.tls_cert.empty() && !o.listen.empty();
  if (tls && o.unix_socket.empty()) o.unix_socket = o.state_dir + "/acceld.sock";
  if (o.unix_socket.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        o.unix_socket, ": longer than a unix socket path may be (",
        sizeof(sockaddr_un::sun_path) - 1, " bytes); use a shorter --unix-socket or --state-dir"));
  }

  std::unique_ptr<Acceld> d(new Acceld());
  std::error_code ec;
  std::filesystem::create_directories(o.state_dir, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("--state-dir: cannot create ", o.state_dir, ": ",
                                               ec.message()));
  }
  chmod(o.state_dir.c_str(), 0700);
  ACCEL_ASSIGN_OR_RETURN(d->state_lock_, LockStateDir(o.state_dir));
  ACCEL_ASSIGN_OR_RETURN(d->token_, EnsureTokenFile(o.token_file));
  // Jobs stored before typed plans get theirs here, lowered once (server/services/convert.h).
  ACCEL_ASSIGN_OR_RETURN(d->store_,
                         StateStore::Open(o.state_dir + "/state.db", AcceldPlanHooks()));
  // Timestamps users read are wall time; deadlines and heartbeats use the steady clock.
  d->events_ = std::make_unique<EventLog>(d->store_.get(), WallClock::Default());
  ACCEL_ASSIGN_OR_RETURN(d->registry_, JobRegistry::Load(d->store_.get(), d->events_.get(),
                                                         WallClock::Default()));
  d->supervisor_ = std::make_unique<Supervisor>(Env::Default());

  // The gRPC server first: workers need its address in their environment.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int tcp_port = 0;
  if (!o.listen.empty()) {
    std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
    if (!o.tls_cert.empty()) {
      grpc::SslServerCredentialsOptions ssl;
      ssl.pem_key_cert_pairs.push_back(tls_pair);
      creds = grpc::SslServerCredentials(ssl);
    }
    builder.AddListeningPort(o.listen, creds, &tcp_port);
  }
  if (!o.unix_socket.empty()) {
    ACCEL_RETURN_IF_ERROR(ClearUnixSocket(o.unix_socket));
    builder.AddListeningPort(absl::StrCat("unix:", o.unix_socket),
                             grpc::InsecureServerCredentials());
  }
  builder.SetMaxReceiveMessageSize(64 << 20);
  // gRPC sets SO_REUSEPORT by default: a second daemon on the same port would bind it too and
  // the kernel would split clients between them. A taken port must fail at start instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> timing;
  timing.push_back(d->rpc_metrics_.InterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(timing));

  // The manager launches nothing before Start(); it learns the bound address before that.
  ManagerOptions mo;
  mo.total_slots = o.cpu_slots;
  mo.gpus = gpus;
  mo.worker_bin = o.worker_bin;
  mo.worker_args = o.worker_args;
  mo.log_dir = o.state_dir + "/logs";
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) mo.base_env.emplace_back(*e);
  mo.heartbeat_timeout = o.heartbeat_timeout;
  mo.stop_grace = o.stop_grace;
  mo.heartbeat_interval = o.heartbeat_interval;
  mo.retention = o.retention;
  mo.default_launcher = o.launcher;
  d->manager_ = std::make_unique<JobManager>(mo, d->registry_.get(), d->events_.get(),
                                             d->store_.get(), d->supervisor_.get(),
                                             Env::Default(), WallClock::Default());
  ServiceDeps deps;
  deps.client_token = d->token_;
  deps.manager = d->manager_.get();
  deps.registry = d->registry_.get();
  deps.events = d->events_.get();
  deps.store = d->store_.get();
  deps.version = kAcceldVersion;
  deps.data_roots = data_roots;
  d->coordinator_ = std::make_unique<CoordinatorService>(deps);
  d->worker_service_ = std::make_unique<WorkerServiceImpl>(deps);
  builder.RegisterService(d->coordinator_.get());
  builder.RegisterService(d->worker_service_.get());
  const mode_t old_umask = umask(0077);  // the unix socket is created 0600
  d->server_ = builder.BuildAndStart();
  umask(old_umask);
  if (d->server_ == nullptr || (!o.listen.empty() && tcp_port == 0)) {
    // gRPC says no more than that it failed; with TLS the files it could not use are the
    // other cause (a PEM block that does not parse, a key that does not match the certificate).
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", o.listen.empty() ? o.unix_socket : o.listen, " (address in use?",
        tls ? absl::StrCat(" or the certificate ", o.tls_cert, " and key ", o.tls_key,
                           " could not be loaded: see gRPC's message above")
            : "",
        ")"));
  }
  if (!o.unix_socket.empty()) chmod(o.unix_socket.c_str(), 0600);
  std::string host = o.listen.substr(0, o.listen.rfind(':'));
  if (host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::") host = "127.0.0.1";
  d->address_ = o.listen.empty() ? absl::StrCat("unix:", o.unix_socket)
                                 : absl::StrCat(host, ":", tcp_port);
  d->worker_address_ = tls ? absl::StrCat("unix:", o.unix_socket) : d->address_;
  d->manager_->SetWorkerAddress(d->worker_address_, host, tcp_port);
  ACCEL_RETURN_IF_ERROR(d->AddClusterLaunchers(o, host, tcp_port));
  d->options_ = o;

  // A job whose stored spec no longer parses as a JobSpec would be relaunched until its restarts
  // ran out, each worker failing on the same bytes: it fails once, here, saying why. (Rows the
  // store itself finds damaged — types, checksums, JSON — come back FAILED already.)
  for (const JobRecord& job : d->registry_->List()) {
    if (IsTerminal(job.state)) continue;
    absl::StatusOr<accel::v1::JobSpec> spec = job::JobSpecFromJson(job.spec_json);
    if (spec.ok()) continue;
    const std::string why =
        absl::StrCat("stored record damaged: ", o.state_dir, "/state.db, table jobs (", job.id,
                     "): acceld restarted and ", spec.status().message());
    ACCEL_LOG(error, "{}", why);
    ACCEL_RETURN_IF_ERROR(
        d->registry_->Transition(job.id, JobState::kFailed, why, [&](JobRecord& j) {
          j.error = why;
        }).status());
  }
  ACCEL_RETURN_IF_ERROR(d->FollowTelemetry());
  ACCEL_RETURN_IF_ERROR(d->manager_->Recover());
  ACCEL_RETURN_IF_ERROR(d->StartHttp());
  d->manager_->Start();
  d->server_->GetHealthCheckService()->SetServingStatus(true);
  if (!o.address_file.empty()) {
    if (std::error_code failed = WriteAddressFile(o.address_file, d->address_)) {
      return absl::UnavailableError(absl::StrCat("--address-file: cannot write ", o.address_file,
                                                 ": ", failed.message()));
    }
  }
  if (!o.http_address_file.empty() && d->http_ != nullptr) {
    if (std::error_code failed = WriteAddressFile(o.http_address_file, d->http_->address())) {
      return absl::UnavailableError(absl::StrCat("--http-address-file: cannot write ",
                                                 o.http_address_file, ": ", failed.message()));
    }
  }
  ACCEL_LOG(info, "acceld serving on {}{} with {} cpu slots and {} GPUs, state in {}",
            d->address_,
            o.unix_socket.empty() || o.listen.empty() ? "" : absl::StrCat(" and unix:", o.unix_socket),
            o.cpu_slots, mo.gpus.size(), o.state_dir);
  return d;
}

absl::Status Acceld::AddClusterLaunchers(const AcceldOptions& o, const std::string& host,
                                         int tcp_port) {
  std::vector<std::string> names = o.launchers;
  names.push_back(o.launcher);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  bool remote = false;
  for (const std::string& name : names) {
    if (name != "local" && name != "slurm" && name != "kubernetes") {
      return absl::InvalidArgumentError(
          absl::StrCat("--launcher: '", name, "' is not local, slurm or kubernetes"));
    }
    remote = remote || name != "local";
  }
  if (!remote) return absl::OkStatus();
  // Workers on other machines dial acceld over TCP: an address they can reach, asked for.
  std::string address = o.advertise;
  if (address.empty()) {
    // `host` is --listen's, a wildcard already read as 127.0.0.1: not an address to hand out.
    const bool local_only = host == "localhost" || absl::StartsWith(host, "127.") ||
                            host == "[::1]" || host == "::1";
    if (o.listen.empty() || local_only) {
      return absl::InvalidArgumentError(
          "--advertise: a cluster launcher's workers run on other machines; give the host:port "
          "they dial (acceld listens on --listen, loopback unless asked)");
    }
    address = absl::StrCat(host, ":", tcp_port);
  }
  std::vector<std::string> cluster_env;
  if (!o.tls_cert.empty()) {
    const std::string ca = o.worker_tls_ca.empty() ? o.tls_cert : o.worker_tls_ca;
    std::error_code ec;
    const std::string absolute = std::filesystem::absolute(ca, ec).string();
    cluster_env.push_back("ACCEL_TLS_CA=" + (ec ? ca : absolute));
  }
  manager_->SetClusterAddress(address, cluster_env);
  for (const std::string& name : names) {
    if (name == "slurm") {
      cluster_launchers_.push_back(std::make_unique<SlurmLauncher>(o.slurm, Env::Default()));
    } else if (name == "kubernetes") {
      absl::StatusOr<std::unique_ptr<KubernetesLauncher>> k8s =
          KubernetesLauncher::Create(o.kubernetes, Env::Default());
      if (!k8s.ok()) return k8s.status();
      cluster_launchers_.push_back(std::move(*k8s));
    } else {
      continue;
    }
    manager_->AddLauncher(name, cluster_launchers_.back().get());
  }
  ACCEL_LOG(info, "launchers: {} (default {}); cluster workers dial {}", absl::StrJoin(names, ", "),
            o.launcher, address);
  return absl::OkStatus();
}

void Acceld::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (server_) server_->GetHealthCheckService()->SetServingStatus(false);
  // Workers first (they may still be reporting), then the servers; open watches end after 2 s.
  if (manager_) manager_->Shutdown();
  if (http_) http_->Stop();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

Acceld::~Acceld() { Shutdown(); }

}  // namespace accel::server
