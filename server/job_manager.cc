#include "server/job_manager.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "server/checkpoint_dirs.h"

namespace accel::server {

std::string RandomToken() {
  unsigned char bytes[32];
  bool ok = false;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ok = read(fd, bytes, sizeof(bytes)) == static_cast<ssize_t>(sizeof(bytes));
    close(fd);
  }
  if (!ok) {
    std::random_device rd;
    for (unsigned char& b : bytes) b = static_cast<unsigned char>(rd());
  }
  std::string hex;
  for (unsigned char b : bytes) absl::StrAppendFormat(&hex, "%02x", b);
  return hex;
}

namespace {

std::string StateIdOf(StateStore* store) {
  if (store == nullptr) return "";
  absl::StatusOr<std::string> id = store->StateId();
  if (!id.ok()) ACCEL_LOG(error, "state id: {}", std::string(id.status().message()));
  return id.value_or("");
}

}  // namespace

JobManager::JobManager(ManagerOptions options, JobRegistry* registry, EventLog* events,
                       StateStore* store, GangRunner* runner, Clock* clock, Clock* wall_clock)
    : options_(std::move(options)),
      registry_(registry),
      events_(events),
      store_(store),
      runner_(runner),
      clock_(clock),
      wall_clock_(wall_clock != nullptr ? wall_clock : clock),
      state_id_(StateIdOf(store)),
      scheduler_(options_.total_slots),
      gpu_scheduler_(static_cast<int>(options_.gpus.size())),
      coordinator_address_(options_.coordinator_address),
      master_addr_(options_.master_addr),
      master_port_(options_.master_port) {
  launchers_["local"] = runner_;
}

void JobManager::AddLauncher(const std::string& name, GangRunner* runner) {
  launchers_[name] = runner;
}

void JobManager::SetClusterAddress(const std::string& address, std::vector<std::string> env) {
  absl::MutexLock lock(&mu_);
  cluster_address_ = address;
  cluster_env_ = std::move(env);
}

namespace {
std::string NoLauncher(const JobRecord& job) {
  return absl::StrCat("resources.launcher: this acceld has no ", job.knobs.launcher,
                      " launcher (acceld --launcher ", job.knobs.launcher, " enables it)");
}
}  // namespace

GangRunner* JobManager::RunnerFor(const JobRecord& job) const {
  auto it = launchers_.find(job.knobs.launcher);
  return it == launchers_.end() ? nullptr : it->second;
}

absl::Status JobManager::Enqueue(const JobRecord& job) {
  if (RunnerFor(job) == nullptr) {
    return absl::FailedPreconditionError(NoLauncher(job));
  }
  if (IsRemote(job)) {
    remote_ready_.push_back(job.id);
    return absl::OkStatus();
  }
  Scheduler* pool = Pool(job.knobs.device);
  if (pool == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "resources.device: this acceld has no ", DeviceKindName(job.knobs.device), " slots any more"));
  }
  return pool->Enqueue(job.id, job.slots, job.priority, job.number);
}

void JobManager::SetWorkerAddress(const std::string& coordinator, const std::string& master_addr,
                                  int master_port) {
  absl::MutexLock lock(&mu_);
  coordinator_address_ = coordinator;
  master_addr_ = master_addr;
  master_port_ = master_port;
}

JobManager::~JobManager() {
  {
    absl::MutexLock lock(&mu_);
    loop_stop_ = true;
  }
  if (loop_.joinable()) loop_.join();
}

absl::StatusOr<JobRecord> JobManager::Delete(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  return DeleteLocked(job_id);
}

absl::StatusOr<JobRecord> JobManager::DeleteLocked(const std::string& job_id) {
  ACCEL_ASSIGN_OR_RETURN(const JobRecord current, registry_->Get(job_id));
  if (IsTerminal(current.state) && gangs_.count(job_id) != 0) {
    // Ended jobs have no gang; a gang still finishing means its ending is not written yet.
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " is still stopping its workers; delete it once it ended"));
  }
  ACCEL_ASSIGN_OR_RETURN(JobRecord job, registry_->Delete(job_id));
  events_->Forget(job_id);
  if (!options_.log_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::path(options_.log_dir) / job_id, ec);
    if (ec) ACCEL_LOG(warn, "deleted {} but not its logs: {}", job_id, ec.message());
  }
  return job;
}

void JobManager::SweepRetention() {
  if (!options_.retention.enabled()) return;
  const int64_t now = clock_->NowMicros();
  if (last_sweep_us_ >= 0 &&
      now - last_sweep_us_ < absl::ToInt64Microseconds(options_.retention.sweep_interval)) {
    return;
  }
  last_sweep_us_ = now;
  for (const std::string& id :
       ExpiredJobs(registry_->List(), options_.retention, wall_clock_->NowMicros())) {
    absl::StatusOr<JobRecord> gone = DeleteLocked(id);
    if (gone.ok()) {
      ACCEL_LOG(info, "retention: forgot {} (ended {})", id, JobStateName(gone->state));
    } else {
      Log(gone.status(), "retention");
    }
  }
}

void JobManager::Log(const absl::Status& s, const char* what) {
  if (!s.ok()) ACCEL_LOG(error, "{}: {}", what, std::string(s.message()));
}

absl::StatusOr<JobRecord> JobManager::Submit(const JobRecord& job) {
  absl::MutexLock lock(&mu_);
  if (shutting_down_) return absl::UnavailableError("acceld is shutting down");
  if (RunnerFor(job) == nullptr) {
    return absl::InvalidArgumentError(NoLauncher(job));
  }
  ACCEL_RETURN_IF_ERROR(CheckCheckpointDirFree(Env::Default(), job.knobs.checkpoint_dir,
                                               registry_->List(), state_id_));
  if (IsRemote(job)) {  // the cluster has the machines; its scheduler queues the job
    if (absl::Status s = RunnerFor(job)->CheckSettings(job.knobs.launcher_settings); !s.ok()) {
      return absl::InvalidArgumentError(s.message());
    }
    ACCEL_ASSIGN_OR_RETURN(JobRecord created, registry_->Create(job));
    remote_ready_.push_back(created.id);
    return created;
  }
  const std::string device = DeviceKindName(job.knobs.device);
  Scheduler* pool = Pool(job.knobs.device);
  if (pool == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resources.device: ", device, job.knobs.device == DeviceKind::kCuda
            ? " needs GPUs, but this acceld found none (no CUDA device; acceld --gpus N declares "
              "them)"
            : " is not a device kind this acceld schedules (cpu or cuda)"));
  }
  if (job.slots < 1 || job.slots > pool->total_slots()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resources.num_processes: the job needs ", job.slots, " ", device,
        " slots but this acceld has ", pool->total_slots(),
        job.knobs.device == DeviceKind::kCuda ? " (GPUs)" : " (acceld --cpu-slots)"));
  }
  ACCEL_ASSIGN_OR_RETURN(JobRecord created, registry_->Create(job));
  ACCEL_RETURN_IF_ERROR(pool->Enqueue(created.id, created.slots, created.priority, created.number));
  return created;
}

absl::StatusOr<JobRecord> JobManager::Cancel(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  ACCEL_ASSIGN_OR_RETURN(JobRecord job, registry_->Get(job_id));
  if (job.state == JobState::kCancelled) return job;
  if (IsTerminal(job.state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " already ended ", JobStateName(job.state)));
  }
  auto it = gangs_.find(job_id);
  if (it == gangs_.end()) {
    // Queued (first time or waiting to restart): nothing runs.
    Unschedule(job_id);
    return registry_->Transition(job_id, JobState::kCancelled, "cancelled by the user");
  }
  StopGang(it->second, StopReason::kCancel, "");
  return registry_->Get(job_id);
}

void JobManager::StopGang(Gang& gang, StopReason reason, const std::string& error) {
  // A cancel or shutdown overrides a failure already being handled: the user's intent wins.
  if (gang.stop == StopReason::kNone || reason == StopReason::kCancel ||
      reason == StopReason::kShutdown) {
    gang.stop = reason;
  }
  if (gang.first_error.empty() && !error.empty()) gang.first_error = error;
  gang.runner->Stop(gang.job_id, gang.attempt, gang.grace);
}

Scheduler* JobManager::Pool(DeviceKind device) {
  if (device == DeviceKind::kCpu) return &scheduler_;
  if (gpu_scheduler_.total_slots() > 0) return &gpu_scheduler_;
  return nullptr;
}

void JobManager::Unschedule(const std::string& job_id) {
  for (Scheduler* s : {&scheduler_, &gpu_scheduler_}) {
    s->Release(job_id);
    s->Remove(job_id);
  }
  remote_ready_.erase(std::remove(remote_ready_.begin(), remote_ready_.end(), job_id),
                      remote_ready_.end());
}

std::vector<std::string> JobManager::RankEnv(const JobRecord& job, int attempt, int rank,
                                             const std::string& token, int threads,
                                             const std::string& cuda_device) const {
  std::vector<std::pair<std::string, std::string>> vars = {
      {"RANK", std::to_string(rank)},
      {"LOCAL_RANK", std::to_string(rank)},
      {"GROUP_RANK", "0"},
      {"WORLD_SIZE", std::to_string(job.slots)},
      {"LOCAL_WORLD_SIZE", std::to_string(job.slots)},
      {"TORCHELASTIC_RUN_ID", job.id},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(job.restarts_used)},
      {"TORCHELASTIC_MAX_RESTARTS", std::to_string(job.max_restarts)},
      {"OMP_NUM_THREADS", std::to_string(threads)},
      {"ACCEL_JOB_ID", job.id},
      {"ACCEL_ATTEMPT", std::to_string(attempt)},
      {"ACCEL_STATE_ID", state_id_},
      {"ACCEL_COORDINATOR", coordinator_address_},
      {"ACCEL_WORKER_TOKEN", token},
  };
  // torchrun's MASTER_ADDR/MASTER_PORT name acceld's TCP port (the rendezvous goes through its
  // store); an acceld on a unix socket alone has none, and a worker refuses MASTER_PORT=0, so
  // they are left out (the worker's defaults stand in, unused under acceld).
  if (master_port_ > 0) {
    vars.emplace_back("MASTER_ADDR", master_addr_);
    vars.emplace_back("MASTER_PORT", std::to_string(master_port_));
  }
  // The rank sees only its own GPU, as device 0.
  if (!cuda_device.empty()) vars.emplace_back("CUDA_VISIBLE_DEVICES", cuda_device);
  std::vector<std::string> env;
  for (const std::string& kv : options_.base_env) {
    const std::string key = kv.substr(0, kv.find('='));
    bool overridden = false;
    for (const auto& [k, v] : vars) overridden = overridden || k == key;
    if (!overridden) env.push_back(kv);
  }
  for (const auto& [k, v] : vars) env.push_back(absl::StrCat(k, "=", v));
  return env;
}

void JobManager::DescribeForCluster(const JobRecord& job, const Gang& gang,
                                    GangLaunch& launch) const {
  launch.shape.nodes = std::max(1, job.knobs.nodes);
  launch.shape.ranks_per_node = std::max(1, job.slots / launch.shape.nodes);
  launch.shape.device = DeviceKindName(job.knobs.device);
  launch.worker_argv.push_back(options_.worker_bin);
  for (const std::string& a : options_.worker_args) launch.worker_argv.push_back(a);
  // Only the job's own variables travel (acceld's environment means nothing on a compute
  // node). Rank, world and node come from the cluster's variables in the worker
  // (worker/launch_env.h); rendezvous goes through acceld's store, so no MASTER_ADDR; the
  // token travels apart (a Secret, a 0600 file).
  const std::vector<std::pair<std::string, std::string>> vars = {
      {"TORCHELASTIC_RUN_ID", job.id},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(job.restarts_used)},
      {"TORCHELASTIC_MAX_RESTARTS", std::to_string(job.max_restarts)},
      {"OMP_NUM_THREADS", std::to_string(job.knobs.threads)},
      {"ACCEL_JOB_ID", job.id},
      {"ACCEL_ATTEMPT", std::to_string(gang.attempt)},
      {"ACCEL_STATE_ID", state_id_},
      {"ACCEL_COORDINATOR", cluster_address_.empty() ? coordinator_address_ : cluster_address_},
      {"ACCEL_NODES", std::to_string(launch.shape.nodes)},
      {"ACCEL_RANKS_PER_NODE", std::to_string(launch.shape.ranks_per_node)},
  };
  for (const auto& [k, v] : vars) launch.shared_env.push_back(absl::StrCat(k, "=", v));
  for (const std::string& kv : cluster_env_) launch.shared_env.push_back(kv);
  launch.token = gang.token;
  launch.log_dir = absl::StrCat(options_.log_dir, "/", job.id, "/attempt-", gang.attempt);
  launch.settings = job.knobs.launcher_settings;
}

void JobManager::StartAttempt(const JobRecord& job, const std::string& message) {
  const int attempt = job.attempt + 1;
  absl::StatusOr<JobRecord> started = registry_->Transition(
      job.id, JobState::kStarting, absl::StrCat(message, "attempt ", attempt, " on ", job.slots,
                                                " ", DeviceKindName(job.knobs.device), " slots"),
      [&](JobRecord& j) { j.attempt = attempt; });
  if (!started.ok()) {
    Log(started.status(), "start attempt");
    return;
  }
  const JobKnobs& knobs = job.knobs;
  Gang gang;
  gang.job_id = job.id;
  gang.attempt = attempt;
  gang.token = options_.new_token ? options_.new_token() : RandomToken();
  gang.ranks.resize(job.slots);
  gang.kv = std::make_shared<comm::InMemoryStore>();
  gang.heartbeat_timeout = knobs.heartbeat_timeout_s > 0 ? absl::Seconds(knobs.heartbeat_timeout_s)
                                                         : options_.heartbeat_timeout;
  gang.grace = knobs.stop_grace_s > 0 ? absl::Seconds(knobs.stop_grace_s) : options_.stop_grace;
  gang.start_us = wall_clock_->NowMicros();
  gang.can_checkpoint = !knobs.checkpoint_dir.empty();
  gang.runner = RunnerFor(job);
  const int64_t now = clock_->NowMicros();
  for (RankState& r : gang.ranks) r.last_seen_us = now;
  Log(store_->PutAttempt({job.id, attempt, gang.start_us, 0, ""}), "store attempt");

  // A cuda gang's rank r runs on the GPU of its r-th slot.
  std::vector<std::string> cuda_devices(job.slots);
  if (knobs.device == DeviceKind::kCuda) {
    auto placed = gpu_scheduler_.allocations().find(job.id);
    for (int rank = 0; placed != gpu_scheduler_.allocations().end() && rank < job.slots &&
                       rank < static_cast<int>(placed->second.size());
         ++rank) {
      cuda_devices[rank] = std::to_string(options_.gpus[placed->second[rank]].index);
    }
  }
  GangLaunch launch;
  launch.job_id = job.id;
  launch.attempt = attempt;
  for (int rank = 0; rank < job.slots; ++rank) {
    RankLaunch r;
    r.rank = rank;
    r.argv.push_back(options_.worker_bin);
    for (const std::string& a : options_.worker_args) r.argv.push_back(a);
    r.env = RankEnv(*started, attempt, rank, gang.token, knobs.threads, cuda_devices[rank]);
    r.log_path = absl::StrCat(options_.log_dir, "/", job.id, "/attempt-", attempt, "/rank-", rank,
                              ".log");
    launch.ranks.push_back(std::move(r));
  }
  if (IsRemote(job)) DescribeForCluster(*started, gang, launch);
  absl::StatusOr<std::string> launched =
      gang.runner != nullptr
          ? gang.runner->Launch(launch)
          : absl::FailedPreconditionError(NoLauncher(job));
  absl::Status s = launched.status();
  if (!s.ok()) {
    Log(store_->PutAttempt({job.id, attempt, gang.start_us, wall_clock_->NowMicros(),
                            absl::StrCat("failed: ", s.message())}),
        "store attempt");
    EndJob(job.id, JobState::kFailed, absl::StrCat("cannot start the workers: ", s.message()),
           absl::StrCat("cannot start the workers: ", s.message()));
    return;
  }
  gang.placement = *launched;
  if (!gang.placement.empty()) {
    Log(store_->PutAttempt({job.id, attempt, gang.start_us, 0, "", gang.placement}),
        "store attempt");
    Log(registry_->Update(job.id, [&](JobRecord& j) { j.placement = gang.placement; }),
        "store placement");
    Notice(job.id, attempt, absl::StrCat("attempt ", attempt, " placed as ", gang.placement));
  }
  tokens_[gang.token] = WorkerIdentity{job.id, attempt};
  gangs_[job.id] = std::move(gang);
}

}  // namespace accel::server
