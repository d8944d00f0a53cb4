#include "server/launchers/kubernetes_manifests.h"

#include <cstdint>
#include <fstream>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace accel::server {
namespace {

using nlohmann::json;

// A Job name of at most this many characters leaves room for "-<index>" (up to 10 digits)
// in the pods' hostnames, which must be labels (63).
constexpr size_t kMaxJobName = 52;

// Variables the launcher sets itself (or Kubernetes does), never taken from shared_env.
const std::set<std::string>& LauncherOwnedVars() {
  static const std::set<std::string> vars = {
      "ACCEL_WORKER_TOKEN", "ACCEL_NODES", "ACCEL_RANKS_PER_NODE", "MASTER_ADDR", "MASTER_PORT",
      "RANK", "LOCAL_RANK", "GROUP_RANK", "JOB_COMPLETION_INDEX", "CUDA_VISIBLE_DEVICES"};
  return vars;
}

uint32_t Fnv1a(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

// Lower case, [a-z0-9-] only, no leading or trailing '-'.
std::string LabelChars(const std::string& s) {
  std::string out;
  for (char c : absl::AsciiStrToLower(s)) out.push_back(absl::ascii_isalnum(c) ? c : '-');
  const size_t b = out.find_first_not_of('-');
  if (b == std::string::npos) return "";
  return out.substr(b, out.find_last_not_of('-') - b + 1);
}

json Labels(const GangLaunch& gang, const KubernetesNames& names) {
  return {{"app.kubernetes.io/name", "accel-worker"},
          {"app.kubernetes.io/managed-by", "acceld"},
          {kLabelJob, KubernetesLabelValue(gang.job_id)},
          {kLabelAttempt, std::to_string(gang.attempt)},
          {kLabelGang, names.job}};
}

json Metadata(const std::string& name, const std::string& ns, const json& labels) {
  return {{"name", name}, {"namespace", ns}, {"labels", labels}};
}

// The shared variables, then the launcher's own.
json ContainerEnv(const GangLaunch& gang, const KubernetesOptions& o,
                  const KubernetesNames& names) {
  json env = json::array();
  for (const std::string& kv : gang.shared_env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string key = kv.substr(0, eq);
    if (LauncherOwnedVars().count(key) != 0) continue;
    env.push_back({{"name", key}, {"value", kv.substr(eq + 1)}});
  }
  env.push_back({{"name", "ACCEL_NODES"}, {"value", std::to_string(gang.shape.nodes)}});
  env.push_back(
      {{"name", "ACCEL_RANKS_PER_NODE"}, {"value", std::to_string(gang.shape.ranks_per_node)}});
  env.push_back({{"name", "MASTER_ADDR"}, {"value", names.master_addr}});
  env.push_back({{"name", "MASTER_PORT"}, {"value", std::to_string(o.master_port)}});
  env.push_back({{"name", "ACCEL_WORKER_TOKEN"},
                 {"valueFrom", {{"secretKeyRef", {{"name", names.secret}, {"key", "token"}}}}}});
  return env;
}

std::string CpuRequest(const GangLaunch& gang, const KubernetesOptions& o) {
  if (!o.cpu.empty()) return o.cpu;
  int threads = 1;
  for (const std::string& kv : gang.shared_env) {
    int t = 0;
    if (kv.rfind("OMP_NUM_THREADS=", 0) == 0 && absl::SimpleAtoi(kv.substr(16), &t) && t > 0) {
      threads = t;
    }
  }
  return std::to_string(gang.shape.ranks_per_node * threads);
}

json Container(const GangLaunch& gang, const KubernetesOptions& o, const KubernetesNames& names) {
  json command = gang.worker_argv;
  if (gang.shape.ranks_per_node > 1) {
    command.push_back("--nproc-per-node");
    command.push_back(std::to_string(gang.shape.ranks_per_node));
  }
  json requests = {{"cpu", CpuRequest(gang, o)}};
  if (!o.memory.empty()) requests["memory"] = o.memory;
  json resources = {{"requests", requests}};
  if (gang.shape.device == "cuda") {
    // Extended resources are set in limits (requests default to them).
    resources["limits"] = {{"nvidia.com/gpu", std::to_string(gang.shape.ranks_per_node)}};
  }
  json c = {{"name", kWorkerContainer},
            {"image", o.image},
            {"command", command},
            {"env", ContainerEnv(gang, o, names)},
            {"ports", json::array({{{"name", "rendezvous"}, {"containerPort", o.master_port}}})},
            {"resources", resources}};
  if (!o.image_pull_policy.empty()) c["imagePullPolicy"] = o.image_pull_policy;
  if (!o.pvc.empty()) {
    c["volumeMounts"] = json::array({{{"name", "shared"}, {"mountPath", o.mount_path}}});
  }
  return c;
}

}  // namespace

std::string KubernetesLabelValue(const std::string& s) {
  std::string v = LabelChars(s);
  if (v.size() <= 63) return v;
  v = v.substr(0, 54);
  while (!v.empty() && v.back() == '-') v.pop_back();
  return absl::StrCat(v, "-", absl::StrFormat("%08x", Fnv1a(s)));
}

bool IsDns1123Label(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-')) return false;
  }
  return s.front() != '-' && s.back() != '-';
}

KubernetesNames AttemptNames(const std::string& job_id, int attempt,
                             const std::string& kube_namespace) {
  const std::string suffix = absl::StrCat("-a", attempt);
  std::string id = LabelChars(job_id);
  if (id.empty()) id = "job";
  std::string name = absl::StrCat("accel-", id, suffix);
  if (name.size() > kMaxJobName) {
    // Two long ids that share a prefix stay apart by the hash of the whole id.
    const std::string hash = absl::StrFormat("-%08x", Fnv1a(job_id));
    const size_t keep = kMaxJobName - (6 + hash.size() + suffix.size());
    std::string head = id.substr(0, keep);
    while (!head.empty() && head.back() == '-') head.pop_back();
    name = absl::StrCat("accel-", head, hash, suffix);
  }
  KubernetesNames n;
  n.job = name;
  n.service = name;
  n.secret = absl::StrCat(name, "-token");
  n.master_addr = absl::StrCat(name, "-0.", name, ".", kube_namespace, ".svc");
  return n;
}

absl::StatusOr<KubernetesOptions> ResolveKubernetesOptions(
    const KubernetesOptions& base, const std::map<std::string, std::string>& settings,
    const std::string& namespace_file) {
  // The string settings, by job-file key.
  static const std::map<std::string, std::string KubernetesOptions::*> kFields = {
      {"namespace", &KubernetesOptions::kube_namespace},
      {"image", &KubernetesOptions::image},
      {"pvc", &KubernetesOptions::pvc},
      {"mount", &KubernetesOptions::mount_path},
      {"service_account", &KubernetesOptions::service_account},
      {"image_pull_policy", &KubernetesOptions::image_pull_policy},
      {"cpu", &KubernetesOptions::cpu},
      {"memory", &KubernetesOptions::memory}};
  KubernetesOptions o = base;
  for (const auto& [key, value] : settings) {
    if (auto field = kFields.find(key); field != kFields.end()) {
      o.*(field->second) = value;
    } else if (key == "master_port") {
      if (!absl::SimpleAtoi(value, &o.master_port)) o.master_port = -1;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "resources.kubernetes.", key, ": unknown key (namespace, image, pvc, mount, "
          "service_account, image_pull_policy, cpu, memory, master_port)"));
    }
  }
  auto where = [&](const std::string& key, const std::string& flag) {
    return settings.count(key) != 0 ? absl::StrCat("resources.kubernetes.", key) : flag;
  };
  if (o.kube_namespace.empty()) {
    std::ifstream in(namespace_file);
    std::string ns;
    if (in && std::getline(in, ns)) o.kube_namespace = std::string(absl::StripAsciiWhitespace(ns));
    if (o.kube_namespace.empty()) o.kube_namespace = "default";
  }
  if (!IsDns1123Label(o.kube_namespace)) {
    return absl::InvalidArgumentError(absl::StrCat(where("namespace", "--kube-namespace"), ": '",
                                                   o.kube_namespace,
                                                   "' is not a DNS-1123 label"));
  }
  if (o.image.empty()) {
    return absl::InvalidArgumentError(
        "the kubernetes launcher needs a worker image: --kube-image or resources.kubernetes.image");
  }
  if (o.master_port < 1 || o.master_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(where("master_port", "--kube-master-port"), ": not a port in 1..65535"));
  }
  if (!o.pvc.empty() && (o.mount_path.empty() || o.mount_path.front() != '/')) {
    return absl::InvalidArgumentError(absl::StrCat(where("mount", "--kube-mount"), ": '",
                                                   o.mount_path, "' is not an absolute path"));
  }
  if (!o.image_pull_policy.empty() && o.image_pull_policy != "Always" &&
      o.image_pull_policy != "IfNotPresent" && o.image_pull_policy != "Never") {
    return absl::InvalidArgumentError(
        absl::StrCat(where("image_pull_policy", "--kube-image-pull-policy"), ": '",
                     o.image_pull_policy, "' is not Always, IfNotPresent or Never"));
  }
  return o;
}

absl::StatusOr<KubernetesManifests> RenderKubernetesAttempt(const GangLaunch& gang,
                                                            const KubernetesOptions& o) {
  if (gang.worker_argv.empty()) return absl::InvalidArgumentError("empty worker command line");
  if (gang.token.empty()) return absl::InvalidArgumentError("the attempt has no worker token");
  if (gang.shape.nodes < 1 || gang.shape.ranks_per_node < 1) {
    return absl::InvalidArgumentError(absl::StrCat("bad gang shape: ", gang.shape.nodes,
                                                   " nodes x ", gang.shape.ranks_per_node,
                                                   " ranks"));
  }
  KubernetesManifests m;
  m.names = AttemptNames(gang.job_id, gang.attempt, o.kube_namespace);
  const json labels = Labels(gang, m.names);
  const json selector = {{kLabelGang, m.names.job}};

  m.secret = {{"apiVersion", "v1"},
              {"kind", "Secret"},
              {"metadata", Metadata(m.names.secret, o.kube_namespace, labels)},
              {"type", "Opaque"},
              {"data", {{"token", absl::Base64Escape(gang.token)}}}};

  m.service = {
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata", Metadata(m.names.service, o.kube_namespace, labels)},
      {"spec",
       {{"clusterIP", "None"},
        {"selector", selector},
        // Rendezvous starts before any pod is Ready: publish their records at once.
        {"publishNotReadyAddresses", true},
        {"ports", json::array({{{"name", "rendezvous"}, {"port", o.master_port}}})}}}};

  json pod_spec = {{"restartPolicy", "Never"},
                   {"subdomain", m.names.service},
                   {"automountServiceAccountToken", false},
                   {"enableServiceLinks", false},
                   {"terminationGracePeriodSeconds",
                    absl::ToInt64Seconds(o.termination_grace)},
                   {"containers", json::array({Container(gang, o, m.names)})}};
  if (!o.service_account.empty()) pod_spec["serviceAccountName"] = o.service_account;
  if (!o.pvc.empty()) {
    pod_spec["volumes"] =
        json::array({{{"name", "shared"}, {"persistentVolumeClaim", {{"claimName", o.pvc}}}}});
  }
  m.job = {{"apiVersion", "batch/v1"},
           {"kind", "Job"},
           {"metadata", Metadata(m.names.job, o.kube_namespace, labels)},
           {"spec",
            {{"completionMode", "Indexed"},
             {"completions", gang.shape.nodes},
             {"parallelism", gang.shape.nodes},
             // acceld restarts the whole gang itself (max_restarts, from a checkpoint).
             {"backoffLimit", 0},
             {"template", {{"metadata", {{"labels", labels}}}, {"spec", pod_spec}}}}}};
  return m;
}

}  // namespace accel::server
