// GangLifecycle (gang_lifecycle.h): starting an attempt. The job's STARTING state and the
// attempt's row are written first, then the gang (and its token) enters the WorkerTable, then
// the launcher starts the ranks: a crash at any point leaves a STARTING job with an open attempt,
// which Recover restarts without using a restart, as before the split.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/core/gang_lifecycle.h"  // IWYU pragma: associated

namespace accel::server {

std::vector<std::string> GangLifecycle::RankEnv(const JobRecord& job, int attempt, int rank,
                                                const std::string& token,
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
      {"OMP_NUM_THREADS", std::to_string(job.knobs.threads)},
      {"ACCEL_JOB_ID", job.id},
      {"ACCEL_ATTEMPT", std::to_string(attempt)},
      {"ACCEL_STATE_ID", state_id_},
      {"ACCEL_COORDINATOR", state_->coordinator_address},
      {"ACCEL_WORKER_TOKEN", token},
  };
  // torchrun's MASTER_ADDR/MASTER_PORT name acceld's TCP port (the rendezvous goes through its
  // store); an acceld on a unix socket alone has none, and a worker refuses MASTER_PORT=0, so
  // they are left out (the worker's defaults stand in, unused under acceld).
  if (state_->master_port > 0) {
    vars.emplace_back("MASTER_ADDR", state_->master_addr);
    vars.emplace_back("MASTER_PORT", std::to_string(state_->master_port));
  }
  // The rank sees only its own GPU, as device 0.
  if (!cuda_device.empty()) vars.emplace_back("CUDA_VISIBLE_DEVICES", cuda_device);
  std::vector<std::string> env;
  for (const std::string& kv : options_->base_env) {
    const std::string key = kv.substr(0, kv.find('='));
    bool overridden = false;
    for (const auto& [k, v] : vars) overridden = overridden || k == key;
    if (!overridden) env.push_back(kv);
  }
  for (const auto& [k, v] : vars) env.push_back(absl::StrCat(k, "=", v));
  return env;
}

void GangLifecycle::DescribeForCluster(const JobRecord& job, const Gang& gang,
                                       GangLaunch& launch) const {
  launch.shape.nodes = std::max(1, job.knobs.nodes);
  launch.shape.ranks_per_node = std::max(1, job.slots / launch.shape.nodes);
  launch.shape.device = DeviceKindName(job.knobs.device);
  launch.worker_argv.push_back(options_->worker_bin);
  for (const std::string& a : options_->worker_args) launch.worker_argv.push_back(a);
  // Only the job's own variables travel (acceld's environment means nothing on a compute
  // node). Rank, world and node come from the cluster's variables in the worker
  // (worker/launch_env.h); rendezvous goes through acceld's store, so no MASTER_ADDR; the
  // token travels apart (a Secret, a 0600 file).
  const std::string coordinator =
      state_->cluster_address.empty() ? state_->coordinator_address : state_->cluster_address;
  const std::vector<std::pair<std::string, std::string>> vars = {
      {"TORCHELASTIC_RUN_ID", job.id},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(job.restarts_used)},
      {"TORCHELASTIC_MAX_RESTARTS", std::to_string(job.max_restarts)},
      {"OMP_NUM_THREADS", std::to_string(job.knobs.threads)},
      {"ACCEL_JOB_ID", job.id},
      {"ACCEL_ATTEMPT", std::to_string(gang.attempt)},
      {"ACCEL_STATE_ID", state_id_},
      {"ACCEL_COORDINATOR", coordinator},
      {"ACCEL_NODES", std::to_string(launch.shape.nodes)},
      {"ACCEL_RANKS_PER_NODE", std::to_string(launch.shape.ranks_per_node)},
  };
  for (const auto& [k, v] : vars) launch.shared_env.push_back(absl::StrCat(k, "=", v));
  for (const std::string& kv : state_->cluster_env) launch.shared_env.push_back(kv);
  launch.token = gang.token;
  launch.log_dir = absl::StrCat(options_->log_dir, "/", job.id, "/attempt-", gang.attempt);
  launch.settings = job.knobs.launcher_settings;
}

void GangLifecycle::StartAttempt(const JobRecord& job, const std::string& message) {
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
  gang.token = options_->new_token ? options_->new_token() : RandomToken();
  gang.ranks.resize(job.slots);
  gang.kv = std::make_shared<comm::InMemoryStore>();
  gang.heartbeat_timeout = knobs.heartbeat_timeout_s > 0 ? absl::Seconds(knobs.heartbeat_timeout_s)
                                                         : options_->heartbeat_timeout;
  gang.grace = knobs.stop_grace_s > 0 ? absl::Seconds(knobs.stop_grace_s) : options_->stop_grace;
  gang.start_us = wall_clock_->NowMicros();
  gang.can_checkpoint = !knobs.checkpoint_dir.empty();
  const int64_t now = clock_->NowMicros();
  for (RankState& r : gang.ranks) r.last_seen_us = now;
  Log(store_->PutAttempt({job.id, attempt, gang.start_us, 0, ""}), "store attempt");

  GangLaunch launch;
  launch.job_id = job.id;
  launch.attempt = attempt;
  {
    absl::MutexLock lock(&state_->mu);
    gang.runner = state_->placement.RunnerFor(job);
    const std::vector<std::string> cuda_devices = state_->placement.CudaDevices(job);
    for (int rank = 0; rank < job.slots; ++rank) {
      RankLaunch r;
      r.rank = rank;
      r.argv.push_back(options_->worker_bin);
      for (const std::string& a : options_->worker_args) r.argv.push_back(a);
      r.env = RankEnv(*started, attempt, rank, gang.token, cuda_devices[rank]);
      r.log_path = absl::StrCat(options_->log_dir, "/", job.id, "/attempt-", attempt, "/rank-",
                                rank, ".log");
      launch.ranks.push_back(std::move(r));
    }
    if (Placement::IsRemote(job)) DescribeForCluster(*started, gang, launch);
    // The token is valid before any rank can present it.
    if (gang.runner != nullptr) state_->workers.Add(gang);
  }
  absl::StatusOr<std::string> launched =
      gang.runner != nullptr ? gang.runner->Launch(launch)
                             : absl::FailedPreconditionError(NoLauncher(job));
  if (!launched.ok()) {
    if (gang.runner != nullptr) {
      absl::MutexLock lock(&state_->mu);
      state_->workers.Take(job.id);
    }
    const absl::Status& s = launched.status();
    Log(store_->PutAttempt({job.id, attempt, gang.start_us, wall_clock_->NowMicros(),
                            absl::StrCat("failed: ", s.message())}),
        "store attempt");
    EndJob(job.id, JobState::kFailed, absl::StrCat("cannot start the workers: ", s.message()),
           absl::StrCat("cannot start the workers: ", s.message()));
    return;
  }
  if (launched->empty()) return;
  {
    absl::MutexLock lock(&state_->mu);
    if (Gang* live = state_->workers.Find(job.id); live != nullptr) live->placement = *launched;
  }
  Log(store_->PutAttempt({job.id, attempt, gang.start_us, 0, "", *launched}), "store attempt");
  Log(registry_->Update(job.id, [&](JobRecord& j) { j.placement = *launched; }),
      "store placement");
  Notice(job.id, attempt, absl::StrCat("attempt ", attempt, " placed as ", *launched));
}

}  // namespace accel::server
