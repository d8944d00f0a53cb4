// KubernetesLauncher: the GangRunner that places an attempt's ranks as an Indexed Job (one pod
// per node, K ranks per pod) with a headless Service for rendezvous and a Secret holding the
// attempt token (server/launchers/kubernetes_manifests.h renders them), through the API server's REST API
// (server/launchers/kubernetes_api.h). acceld's service account needs create/get/list/watch/delete on
// jobs (batch), services and secrets, and get/list on pods and pods/log
// (deploy/kubernetes/rbac.yaml).
//
//   Launch   sweeps Jobs left for the same job id by an earlier acceld (attempts it no longer
//            tracks), then creates the Secret, the Service and the Job: all or none (what was
//            created is deleted again on error). Returns "kubernetes job <ns>/<name>".
//   Poll     every `poll_interval` (it is called every tick): GETs each attempt's Job and its
//            pods by label. A Failed pod i ends ranks i*K .. i*K+K-1 with its container's exit
//            code (code > 128 without a reported signal is taken as signal code-128, as the
//            container runtime encodes it; an OOMKilled container is SIGKILL; a pod that failed
//            without a terminated container, e.g. evicted, is exit code -1), with the last log
//            lines from pods/log; a Succeeded pod ends its ranks with 0; a Job that is Complete
//            ends every remaining rank with 0; a Job that is gone or Failed without a failed
//            pod ends the rest with -1. Once every rank has ended, the three objects are
//            deleted. Log lines are not streamed: workers' output is in the pods' logs
//            (kubectl logs) and their reports reach acceld over the worker API as always.
//   Pending  until every pod of the attempt has been seen Running (or ended): Kubernetes may
//            queue pods for a long time (no GPU free), and JobManager holds the registration
//            deadline meanwhile.
//   Stop     DELETEs the Job (propagationPolicy Background: Kubernetes sends the pods SIGTERM and
//            SIGKILL after their terminationGracePeriodSeconds, KubernetesOptions::
//            termination_grace; Stop's own grace cannot reach a Job's pods), the Service and the
//            Secret; the next Poll reports the remaining ranks killed (SIGTERM, or SIGKILL for a
//            zero grace). A delete that fails is retried every poll and the ranks are reported
//            only once the Job is deleted.
//   RequestCheckpoint  a no-op: the API cannot signal a container (exec needs a streaming
//            protocol). JobManager stops the gang after its grace period, as for a rank that
//            does not checkpoint; the job resumes from its latest periodic checkpoint.
//
// API errors are logged; in Launch they are returned (naming the object and the HTTP code).
// Every call has KubernetesOptions::request_timeout. Thread-compatible: JobManager calls it from
// its control loop only.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/env.h"
#include "server/core/gang_runner.h"
#include "server/launchers/kubernetes_api.h"
#include "server/launchers/kubernetes_manifests.h"

namespace accel::server {

// One API permission the launcher uses, as an RBAC rule names it.
struct KubernetesPermission {
  std::string api_group;  // "" (core) or "batch"
  std::string resource;   // "jobs", "pods/log", ...
  std::string verb;       // "create", "get", "list", "delete"
};
// Every call KubernetesLauncher makes (deploy/kubernetes/rbac.yaml must grant them all; its
// test checks).
std::vector<KubernetesPermission> KubernetesLauncherPermissions();

class KubernetesLauncher final : public GangRunner {
 public:
  // `options` are acceld's flags (an empty api_url becomes InClusterApiUrl()); the job's
  // settings are applied per attempt. InvalidArgument for a bad or missing API URL. Does not
  // own clock (the poll interval).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<KubernetesLauncher>> Create(
      KubernetesOptions options, Clock* clock);
  // Leaves the attempts running (acceld's shutdown stops them through JobManager first).
  ~KubernetesLauncher() override;

  [[nodiscard]] absl::StatusOr<std::string> Launch(const GangLaunch& gang) override;
  bool Pending(const std::string& job_id, int attempt) const override;
  void Stop(const std::string& job_id, int attempt, absl::Duration grace) override;
  void RequestCheckpoint(const std::string& job_id, int attempt) override {}
  PollResult Poll() override;
  int live() const override;
  // ResolveKubernetesOptions of acceld's options with the job's settings (an image is needed).
  [[nodiscard]] absl::Status CheckSettings(
      const std::map<std::string, std::string>& settings) const override;

 private:
  struct Attempt {
    std::string job_id;
    int attempt = 0;
    std::string ns;
    KubernetesNames names;
    int nodes = 1;
    int ranks_per_node = 1;
    std::vector<bool> ended;    // by rank: already reported
    std::vector<bool> running;  // by pod index: seen Running or ended
    bool stopping = false;      // Stop called
    bool deleted = false;       // the Job is gone (Stop's delete succeeded)
    int stop_signal = 0;
  };
  using Key = std::pair<std::string, int>;  // job id, attempt

  KubernetesLauncher(KubernetesOptions options, std::unique_ptr<KubernetesApi> api, Clock* clock);
  // Deletes the Job, Service and Secret; OK when each is deleted or already gone.
  absl::Status DeleteObjects(const std::string& ns, const KubernetesNames& names);
  // Deletes Jobs labelled with the job id that no tracked attempt owns.
  void SweepOrphans(const std::string& job_id, const std::string& ns);
  // Reads the Job and pods of `a`, appending the ranks that ended.
  void Refresh(Attempt& a, std::vector<RankExit>& exits);
  void End(Attempt& a, int rank, int exit_code, int signal, const std::string& tail,
           std::vector<RankExit>& exits);
  std::string LogTail(const Attempt& a, const std::string& pod);

  const KubernetesOptions options_;
  std::unique_ptr<KubernetesApi> api_;
  Clock* const clock_;
  std::map<Key, Attempt> attempts_;
  int64_t next_poll_us_ = 0;
};

}  // namespace accel::server
