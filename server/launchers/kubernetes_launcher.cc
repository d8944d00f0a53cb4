#include "server/launchers/kubernetes_launcher.h"

#include <signal.h>

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/base/logging.h"

namespace accel::server {
namespace {

using nlohmann::json;

constexpr int kLogTailLines = 8;
constexpr char kCompletionIndex[] = "batch.kubernetes.io/job-completion-index";

std::string CorePath(const std::string& ns, const std::string& kind) {
  return absl::StrCat("/api/v1/namespaces/", ns, "/", kind);
}
std::string JobsPath(const std::string& ns) {
  return absl::StrCat("/apis/batch/v1/namespaces/", ns, "/jobs");
}
std::string Named(const std::string& kind, const std::string& ns, const std::string& name) {
  return absl::StrCat(kind, " ", ns, "/", name);
}

const json kBackgroundDelete = {
    {"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", "Background"}};

// The API server's objects are read with these alone: a field that is missing or of another
// type reads as null / "" / no items, never as an exception.
const json& Field(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}
const json& Field(const json& j, const char* a, const char* b) { return Field(Field(j, a), b); }
std::string Str(const json& j, const char* key) {
  const json& v = Field(j, key);
  return v.is_string() ? v.get<std::string>() : "";
}
const json& Items(const json& j, const char* key) {
  static const json kEmpty = json::array();
  const json& v = Field(j, key);
  return v.is_array() ? v : kEmpty;
}

// The pod's completion index: a label since Kubernetes 1.28, an annotation before. -1: none.
int PodIndex(const json& pod) {
  for (const char* field : {"labels", "annotations"}) {
    int index = -1;
    const std::string v = Str(Field(pod, "metadata", field), kCompletionIndex);
    if (!v.empty() && absl::SimpleAtoi(v, &index)) return index;
  }
  return -1;
}

// The worker container's status in `pod` (null when absent).
const json& WorkerStatus(const json& pod) {
  static const json kNull;
  for (const json& c : Items(Field(pod, "status"), "containerStatuses")) {
    if (Str(c, "name") == kWorkerContainer) return c;
  }
  return kNull;
}

bool HasCondition(const json& job, const char* type) {
  for (const json& c : Items(Field(job, "status"), "conditions")) {
    if (Str(c, "type") == type && Str(c, "status") == "True") return true;
  }
  return false;
}

std::string ConditionMessage(const json& job, const char* type) {
  for (const json& c : Items(Field(job, "status"), "conditions")) {
    if (Str(c, "type") == type) return absl::StrCat(Str(c, "reason"), ": ", Str(c, "message"));
  }
  return "";
}

}  // namespace

std::vector<KubernetesPermission> KubernetesLauncherPermissions() {
  return {{"batch", "jobs", "create"},   {"batch", "jobs", "get"},  {"batch", "jobs", "list"},
          {"batch", "jobs", "delete"},   {"", "services", "create"}, {"", "services", "delete"},
          {"", "secrets", "create"},     {"", "secrets", "delete"},  {"", "pods", "list"},
          {"", "pods/log", "get"}};
}

absl::StatusOr<std::unique_ptr<KubernetesLauncher>> KubernetesLauncher::Create(
    KubernetesOptions options, Clock* clock) {
  if (options.api_url.empty()) options.api_url = InClusterApiUrl();
  if (options.api_url.empty()) {
    return absl::InvalidArgumentError(
        "the kubernetes launcher needs --kube-api (KUBERNETES_SERVICE_HOST is unset: acceld "
        "does not run in a pod)");
  }
  KubernetesApiOptions api_options;
  api_options.url = options.api_url;
  api_options.token_file = options.token_file;
  api_options.ca_file = options.ca_file;
  api_options.timeout = options.request_timeout;
  absl::StatusOr<std::unique_ptr<KubernetesApi>> api = KubernetesApi::Create(api_options);
  if (!api.ok()) return api.status();
  return std::unique_ptr<KubernetesLauncher>(
      new KubernetesLauncher(std::move(options), std::move(*api), clock));
}

KubernetesLauncher::KubernetesLauncher(KubernetesOptions options,
                                       std::unique_ptr<KubernetesApi> api, Clock* clock)
    : options_(std::move(options)), api_(std::move(api)), clock_(clock) {}

KubernetesLauncher::~KubernetesLauncher() = default;

absl::Status KubernetesLauncher::DeleteObjects(const std::string& ns,
                                               const KubernetesNames& names) {
  absl::Status first;
  auto del = [&](const std::string& path, const std::string& what) {
    if (path.back() == '/') return;  // no such object (a launch undone half way)
    absl::Status s = api_->Delete(path, kBackgroundDelete, what);
    if (!s.ok() && !absl::IsNotFound(s) && first.ok()) first = s;
  };
  del(absl::StrCat(JobsPath(ns), "/", names.job), Named("Job", ns, names.job));
  del(absl::StrCat(CorePath(ns, "services"), "/", names.service),
      Named("Service", ns, names.service));
  del(absl::StrCat(CorePath(ns, "secrets"), "/", names.secret), Named("Secret", ns, names.secret));
  return first;
}

void KubernetesLauncher::SweepOrphans(const std::string& job_id, const std::string& ns) {
  absl::StatusOr<json> list = api_->Get(
      absl::StrCat(JobsPath(ns), "?labelSelector=",
                   UrlQueryEscape(absl::StrCat(kLabelJob, "=", KubernetesLabelValue(job_id)))),
      absl::StrCat("Jobs of ", job_id, " in ", ns));
  if (!list.ok()) {
    ACCEL_LOG(warn, "{}", list.status().ToString());
    return;
  }
  for (const json& item : Items(*list, "items")) {
    const std::string name = Str(Field(item, "metadata"), "name");
    const std::string job_label = Str(Field(item, "metadata", "labels"), kLabelJob);
    bool tracked = false;
    for (const auto& [key, a] : attempts_) tracked = tracked || a.names.job == name;
    if (name.empty() || tracked) continue;
    KubernetesNames names;
    names.job = names.service = name;
    names.secret = absl::StrCat(name, "-token");
    ACCEL_LOG(warn, "{}: deleting kubernetes job {}/{} left by an earlier acceld (label {})",
              job_id, ns, name, job_label);
    absl::Status s = DeleteObjects(ns, names);
    if (!s.ok()) ACCEL_LOG(warn, "{}", s.ToString());
  }
}

absl::StatusOr<std::string> KubernetesLauncher::Launch(const GangLaunch& gang) {
  absl::StatusOr<KubernetesOptions> o = ResolveKubernetesOptions(options_, gang.settings);
  if (!o.ok()) return o.status();
  absl::StatusOr<KubernetesManifests> m = RenderKubernetesAttempt(gang, *o);
  if (!m.ok()) return m.status();
  const Key key(gang.job_id, gang.attempt);
  if (attempts_.count(key) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(gang.job_id, " attempt ", gang.attempt, " is already launched"));
  }
  const std::string& ns = o->kube_namespace;
  SweepOrphans(gang.job_id, ns);

  // All or none: the Secret first (the pods need it), the Job last (it starts the pods).
  KubernetesNames created;
  auto fail = [&](const absl::Status& s) {
    absl::Status undo = DeleteObjects(ns, created);
    if (!undo.ok()) ACCEL_LOG(warn, "undoing a failed launch: {}", undo.ToString());
    return s;
  };
  absl::StatusOr<json> r = api_->Post(CorePath(ns, "secrets"), m->secret,
                                      Named("Secret", ns, m->names.secret));
  if (!r.ok()) return r.status();
  created.secret = m->names.secret;
  r = api_->Post(CorePath(ns, "services"), m->service, Named("Service", ns, m->names.service));
  if (!r.ok()) return fail(r.status());
  created.service = m->names.service;
  r = api_->Post(JobsPath(ns), m->job, Named("Job", ns, m->names.job));
  if (!r.ok()) return fail(r.status());

  Attempt a;
  a.job_id = gang.job_id;
  a.attempt = gang.attempt;
  a.ns = ns;
  a.names = m->names;
  a.nodes = gang.shape.nodes;
  a.ranks_per_node = gang.shape.ranks_per_node;
  a.ended.assign(a.nodes * a.ranks_per_node, false);
  a.running.assign(a.nodes, false);
  attempts_[key] = std::move(a);
  next_poll_us_ = 0;  // look at it on the next tick
  const std::string name = absl::StrCat("kubernetes job ", ns, "/", m->names.job);
  ACCEL_LOG(info, "started {} attempt {}: {} ({} pods x {} ranks)", gang.job_id, gang.attempt,
            name, gang.shape.nodes, gang.shape.ranks_per_node);
  return name;
}

bool KubernetesLauncher::Pending(const std::string& job_id, int attempt) const {
  auto it = attempts_.find(Key(job_id, attempt));
  if (it == attempts_.end() || it->second.stopping) return false;
  const std::vector<bool>& running = it->second.running;
  return std::find(running.begin(), running.end(), false) != running.end();
}

void KubernetesLauncher::Stop(const std::string& job_id, int attempt, absl::Duration grace) {
  auto it = attempts_.find(Key(job_id, attempt));
  if (it == attempts_.end() || it->second.stopping) return;
  Attempt& a = it->second;
  a.stopping = true;
  a.stop_signal = grace > absl::ZeroDuration() ? SIGTERM : SIGKILL;
  absl::Status s = DeleteObjects(a.ns, a.names);
  a.deleted = s.ok();
  if (!s.ok()) ACCEL_LOG(warn, "stopping {} attempt {}: {} (retrying)", job_id, attempt,
                         s.ToString());
}

int KubernetesLauncher::live() const {
  int n = 0;
  for (const auto& [key, a] : attempts_) {
    n += static_cast<int>(std::count(a.ended.begin(), a.ended.end(), false));
  }
  return n;
}

void KubernetesLauncher::End(Attempt& a, int rank, int exit_code, int signal,
                             const std::string& tail, std::vector<RankExit>& exits) {
  if (rank < 0 || rank >= static_cast<int>(a.ended.size()) || a.ended[rank]) return;
  a.ended[rank] = true;
  RankExit e;
  e.job_id = a.job_id;
  e.attempt = a.attempt;
  e.rank = rank;
  e.exit_code = exit_code;
  e.signal = signal;
  e.log_tail = tail;
  ACCEL_LOG(info, "{} attempt {} rank {} ({}) {}", a.job_id, a.attempt, rank, a.names.job,
            e.Describe());
  exits.push_back(std::move(e));
}

std::string KubernetesLauncher::LogTail(const Attempt& a, const std::string& pod) {
  absl::StatusOr<std::string> log = api_->GetText(
      absl::StrCat(CorePath(a.ns, "pods"), "/", pod, "/log?container=", kWorkerContainer,
                   "&tailLines=", kLogTailLines, "&limitBytes=8192"),
      absl::StrCat("log of Pod ", a.ns, "/", pod));
  if (!log.ok()) return absl::StrCat("[no log: ", log.status().message(), "]\n");
  if (!log->empty() && log->back() != '\n') log->push_back('\n');
  return *log;
}

void KubernetesLauncher::Refresh(Attempt& a, std::vector<RankExit>& exits) {
  const std::string job_name = Named("Job", a.ns, a.names.job);
  absl::StatusOr<json> job = api_->Get(absl::StrCat(JobsPath(a.ns), "/", a.names.job), job_name);
  if (absl::IsNotFound(job.status())) {
    for (int r = 0; r < static_cast<int>(a.ended.size()); ++r) {
      End(a, r, -1, 0, absl::StrCat("[", job_name, " was deleted outside acceld]\n"), exits);
    }
    return;
  }
  if (!job.ok()) {
    ACCEL_LOG(warn, "{}", job.status().ToString());
    return;
  }
  absl::StatusOr<json> pods = api_->Get(
      absl::StrCat(CorePath(a.ns, "pods"), "?labelSelector=",
                   UrlQueryEscape(absl::StrCat(kLabelGang, "=", a.names.job))),
      absl::StrCat("Pods of ", job_name));
  if (!pods.ok()) {
    ACCEL_LOG(warn, "{}", pods.status().ToString());
    return;
  }
  const int k = a.ranks_per_node;
  for (const json& pod : Items(*pods, "items")) {
    const int index = PodIndex(pod);
    if (index < 0 || index >= a.nodes) continue;
    const json& status = Field(pod, "status");
    const std::string phase = Str(status, "phase");
    const std::string pod_name = Str(Field(pod, "metadata"), "name");
    if (a.ended[index * k]) {  // a pod's ranks end together: this one was reported
      a.running[index] = true;
      continue;
    }
    if (phase == "Running") a.running[index] = true;
    if (phase == "Succeeded") {
      a.running[index] = true;
      for (int r = index * k; r < (index + 1) * k; ++r) End(a, r, 0, 0, "", exits);
    }
    const json& state = Field(WorkerStatus(pod), "state");
    const json& waiting = Field(state, "waiting");
    const std::string waiting_reason = Str(waiting, "reason");
    // An image that can never start would keep the pod Pending for ever.
    const bool unstartable = waiting_reason == "InvalidImageName" ||
                             waiting_reason == "ErrImageNeverPull";
    if (phase != "Failed" && !unstartable) continue;
    a.running[index] = true;
    int code = -1, sig = 0;
    std::string why = absl::StrCat(Str(status, "reason"), " ", Str(status, "message"));
    if (unstartable) why = absl::StrCat(waiting_reason, ": ", Str(waiting, "message"));
    const json& terminated = Field(state, "terminated");
    if (Field(terminated, "exitCode").is_number_integer()) {
      code = Field(terminated, "exitCode").get<int>();
      sig = Field(terminated, "signal").is_number_integer() ? Field(terminated, "signal").get<int>()
                                                            : 0;
      if (sig == 0 && code > 128 && code <= 128 + 64) sig = code - 128;
      if (Str(terminated, "reason") == "OOMKilled") sig = SIGKILL;
      if (sig != 0) code = 0;
      why = absl::StrCat(Str(terminated, "reason"), " ", Str(terminated, "message"));
    }
    std::string tail = unstartable ? "" : LogTail(a, pod_name);
    absl::StrAppend(&tail, "[kubernetes: pod ", pod_name, " failed: ", why, "]\n");
    for (int r = index * k; r < (index + 1) * k; ++r) End(a, r, code, sig, tail, exits);
  }
  if (HasCondition(*job, "Complete")) {
    for (int r = 0; r < static_cast<int>(a.ended.size()); ++r) End(a, r, 0, 0, "", exits);
  } else if (HasCondition(*job, "Failed")) {
    const std::string tail =
        absl::StrCat("[kubernetes: ", job_name, " failed: ", ConditionMessage(*job, "Failed"),
                     "]\n");
    for (int r = 0; r < static_cast<int>(a.ended.size()); ++r) End(a, r, -1, 0, tail, exits);
  }
}

PollResult KubernetesLauncher::Poll() {
  PollResult out;
  const int64_t now = clock_->NowMicros();
  const bool look = now >= next_poll_us_;
  if (look) next_poll_us_ = now + absl::ToInt64Microseconds(options_.poll_interval);
  for (auto it = attempts_.begin(); it != attempts_.end();) {
    Attempt& a = it->second;
    if (look && a.stopping && !a.deleted) {
      absl::Status s = DeleteObjects(a.ns, a.names);
      a.deleted = s.ok();
      if (!s.ok()) ACCEL_LOG(warn, "stopping {}: {} (retrying)", a.names.job, s.ToString());
    }
    if (a.stopping && a.deleted) {
      for (int r = 0; r < static_cast<int>(a.ended.size()); ++r) {
        End(a, r, 0, a.stop_signal, "", out.exits);
      }
    } else if (look && !a.stopping) {
      Refresh(a, out.exits);
    }
    const bool done = std::find(a.ended.begin(), a.ended.end(), false) == a.ended.end();
    if (done && !a.deleted) {
      absl::Status s = DeleteObjects(a.ns, a.names);
      a.deleted = s.ok();
      if (!s.ok()) {
        // Kept (with no live ranks) so that the delete is retried.
        a.stopping = true;
        ACCEL_LOG(warn, "cleaning up {}: {} (retrying)", a.names.job, s.ToString());
      }
    }
    it = done && a.deleted ? attempts_.erase(it) : std::next(it);
  }
  return out;
}

absl::Status KubernetesLauncher::CheckSettings(
    const std::map<std::string, std::string>& settings) const {
  return ResolveKubernetesOptions(options_, settings).status();
}

}  // namespace accel::server
