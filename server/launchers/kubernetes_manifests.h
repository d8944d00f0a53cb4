// The Kubernetes objects of one job attempt, rendered as JSON (pure functions, no I/O): a Secret
// with the attempt's worker token, a headless Service that gives the attempt's pods DNS names
// for rendezvous, and an Indexed Job with one pod per node. Pod i (JOB_COMPLETION_INDEX = i)
// runs ranks i*K .. i*K+K-1 (K = ranks per node; `accel-worker --nproc-per-node K` when K > 1)
// and resolves pod 0 as <job>-0.<service>.<namespace>.svc (MASTER_ADDR).
// KubernetesLauncher (server/launchers/kubernetes_launcher.h) submits these to the API server.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "server/core/gang_runner.h"

namespace accel::server {

// acceld's flags for the kubernetes launcher (the flag name is beside each field). A job file
// overrides some per job through resources.kubernetes.<key> (GangLaunch::settings; the key is
// given as `setting`).
struct KubernetesOptions {
  // --kube-api: the API server's URL. Empty: https://$KUBERNETES_SERVICE_HOST:
  // $KUBERNETES_SERVICE_PORT (acceld running in a pod). http:// is accepted (kubectl proxy,
  // tests).
  std::string api_url;
  // --kube-token-file: the bearer token, re-read for every request (projected service-account
  // tokens rotate). Empty: no Authorization header.
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  // --kube-ca-file: the CA bundle that verifies the API server's certificate. Empty: the
  // system's CA store.
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  // --kube-namespace (setting "namespace"). Empty: the service account's namespace file, else
  // "default" (ResolveKubernetesOptions).
  std::string kube_namespace;
  // --kube-image (setting "image"): the worker image; accel-worker at worker_argv[0] inside it.
  std::string image;
  // --kube-pvc (setting "pvc"): the PersistentVolumeClaim holding the shared filesystem (data,
  // checkpoints, logs), mounted at `mount_path` in every pod. Empty: no volume (the image or
  // the nodes provide the shared filesystem at the same path as on acceld).
  std::string pvc;
  // --kube-mount (setting "mount"): where the claim is mounted; must be the path acceld sees
  // the same filesystem at, since job files name paths as acceld sees them.
  std::string mount_path = "/var/lib/accel";
  // --kube-service-account (setting "service_account"): the pods' service account. Workers
  // need no API access, so the token is never mounted into them.
  std::string service_account;
  // --kube-image-pull-policy (setting "image_pull_policy"): Always, IfNotPresent, Never or "".
  std::string image_pull_policy;
  // Setting "cpu" / "memory": requests per pod. cpu empty: K * OMP_NUM_THREADS (or K).
  std::string cpu;
  std::string memory;
  // --kube-master-port (setting "master_port"): MASTER_PORT, on pod 0.
  int master_port = 29500;
  // Pods get this long between SIGTERM and SIGKILL when the attempt is stopped.
  absl::Duration termination_grace = absl::Seconds(30);
  // Every API call gives up after this long (connect, send, and receive each).
  absl::Duration request_timeout = absl::Seconds(10);
  // How often Poll reads the attempts' Jobs and pods (Poll runs every control-loop tick).
  absl::Duration poll_interval = absl::Seconds(2);
};

// The effective options for one attempt: `base` with the job's settings applied, the namespace
// defaulted, and everything checked (InvalidArgument naming resources.kubernetes.<key> or the
// flag: an unknown key, no image, a namespace that is not a DNS-1123 label, a bad port).
// `namespace_file` is where the service account's namespace is read from when none is given.
[[nodiscard]] absl::StatusOr<KubernetesOptions> ResolveKubernetesOptions(
    const KubernetesOptions& base, const std::map<std::string, std::string>& settings,
    const std::string& namespace_file =
        "/var/run/secrets/kubernetes.io/serviceaccount/namespace");

// An RFC 1123 label: 1..63 of [a-z0-9-], starting and ending alphanumeric.
bool IsDns1123Label(const std::string& s);

// The names of an attempt's objects (all DNS-1123 labels, Service starting with a letter).
struct KubernetesNames {
  std::string job;      // the Job and the Service: "accel-<job id>-a<attempt>", <= 52 chars so
                        // that every pod hostname <job>-<index> is a label too
  std::string service;  // == job
  std::string secret;   // "<job>-token"
  std::string master_addr;  // pod 0's DNS name: <job>-0.<service>.<namespace>.svc
};
KubernetesNames AttemptNames(const std::string& job_id, int attempt,
                             const std::string& kube_namespace);

// A label value for `s` (job ids): [a-z0-9-], at most 63 characters (a long one is cut and
// ends in a hash of the whole).
std::string KubernetesLabelValue(const std::string& s);

// Labels on every object and pod of the attempt (the Service selects pods by kLabelGang).
inline constexpr char kLabelJob[] = "accel.dev/job";
inline constexpr char kLabelAttempt[] = "accel.dev/attempt";
inline constexpr char kLabelGang[] = "accel.dev/gang";
// The container in each pod.
inline constexpr char kWorkerContainer[] = "worker";

struct KubernetesManifests {
  KubernetesNames names;
  nlohmann::json secret;   // v1 Secret, the token under data.token (base64)
  nlohmann::json service;  // v1 Service, headless
  nlohmann::json job;      // batch/v1 Job, Indexed
};

// Renders an attempt's objects. `options` must be resolved. InvalidArgument for a gang with
// no worker command, no token, or a shape with nodes or ranks_per_node < 1.
[[nodiscard]] absl::StatusOr<KubernetesManifests> RenderKubernetesAttempt(
    const GangLaunch& gang, const KubernetesOptions& options);

}  // namespace accel::server
