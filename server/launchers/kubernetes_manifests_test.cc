// The rendered objects against golden files (ACCEL_UPDATE_GOLDEN=1 rewrites them), then read
// back as Kubernetes objects: required fields, DNS-1123 names, and the references between them
// (selector -> pod labels, subdomain -> Service, secretKeyRef -> Secret, claim -> volume).
#include "server/launchers/kubernetes_manifests.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/launchers/kubernetes_test_util.h"
#include "server/core/test_util.h"

namespace accel::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

KubernetesOptions BaseOptions() {
  KubernetesOptions o;
  o.kube_namespace = "accel";
  o.image = "registry.example/accel-worker:0.1";
  o.pvc = "accel-shared";
  o.mount_path = "/var/lib/accel";
  return o;
}

KubernetesManifests RenderOrDie(const GangLaunch& gang, const KubernetesOptions& base) {
  absl::StatusOr<KubernetesOptions> o = ResolveKubernetesOptions(base, gang.settings, "/nonexistent");
  EXPECT_TRUE(o.ok()) << o.status();
  absl::StatusOr<KubernetesManifests> m = RenderKubernetesAttempt(gang, *o);
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

json AsList(const KubernetesManifests& m) {
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", {m.secret, m.service, m.job}}};
}

void CheckGolden(const std::string& name, const json& rendered) {
  const std::string path =
      std::string(ACCEL_SOURCE_DIR) + "/server/launchers/testdata/kubernetes/" + name + ".json";
  const std::string text = rendered.dump(2) + "\n";
  const char* update = std::getenv("ACCEL_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << text;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path << " (ACCEL_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(text, want.str()) << "rendered manifests differ from " << path
                              << " (ACCEL_UPDATE_GOLDEN=1 rewrites it after a deliberate change)";
}

// What the API server insists on for every object, and the name rules.
void CheckObject(const json& o, const std::string& api_version, const std::string& kind) {
  SCOPED_TRACE(kind);
  EXPECT_EQ(o.value("apiVersion", ""), api_version);
  EXPECT_EQ(o.value("kind", ""), kind);
  ASSERT_TRUE(o.contains("metadata"));
  const std::string name = o["metadata"].value("name", "");
  EXPECT_TRUE(IsDns1123Label(name)) << name;
  EXPECT_TRUE(IsDns1123Label(o["metadata"].value("namespace", "")));
  for (const auto& [k, v] : o["metadata"]["labels"].items()) {
    ASSERT_TRUE(v.is_string()) << k;
    EXPECT_LE(v.get<std::string>().size(), 63u) << k;
  }
}

const json* FindEnv(const json& container, const std::string& name) {
  for (const json& e : container["env"]) {
    if (e["name"] == name) return &e;
  }
  return nullptr;
}

void CheckConsistent(const KubernetesManifests& m, const GangLaunch& gang) {
  CheckObject(m.secret, "v1", "Secret");
  CheckObject(m.service, "v1", "Service");
  CheckObject(m.job, "batch/v1", "Job");
  // The Service: headless, a DNS-1035 label (starts with a letter), selecting the pods.
  const json& svc = m.service["spec"];
  EXPECT_EQ(svc["clusterIP"], "None");
  EXPECT_TRUE(std::isalpha(m.names.service[0]));
  const json& job = m.job["spec"];
  const json& pod_labels = job["template"]["metadata"]["labels"];
  for (const auto& [k, v] : svc["selector"].items()) EXPECT_EQ(pod_labels[k], v) << k;
  // The Job: Indexed, one pod per node, no retries of its own.
  EXPECT_EQ(job["completionMode"], "Indexed");
  EXPECT_EQ(job["completions"], gang.shape.nodes);
  EXPECT_EQ(job["parallelism"], gang.shape.nodes);
  EXPECT_EQ(job["backoffLimit"], 0);
  const json& pod = job["template"]["spec"];
  EXPECT_EQ(pod["restartPolicy"], "Never");
  EXPECT_EQ(pod["subdomain"], m.service["metadata"]["name"]);
  // Every pod hostname <job>-<index> is a label, and pod 0's is MASTER_ADDR's first part.
  const std::string last_pod = m.names.job + "-" + std::to_string(gang.shape.nodes - 1);
  EXPECT_TRUE(IsDns1123Label(last_pod)) << last_pod;
  ASSERT_EQ(pod["containers"].size(), 1u);
  const json& c = pod["containers"][0];
  EXPECT_EQ(c["name"], kWorkerContainer);
  EXPECT_EQ(c["command"][0], gang.worker_argv[0]);
  const json* master = FindEnv(c, "MASTER_ADDR");
  ASSERT_NE(master, nullptr);
  EXPECT_EQ((*master)["value"],
            m.names.job + "-0." + m.names.service + "." +
                m.job["metadata"]["namespace"].get<std::string>() + ".svc");
  ASSERT_NE(FindEnv(c, "MASTER_PORT"), nullptr);
  EXPECT_EQ((*FindEnv(c, "ACCEL_NODES"))["value"], std::to_string(gang.shape.nodes));
  EXPECT_EQ((*FindEnv(c, "ACCEL_RANKS_PER_NODE"))["value"],
            std::to_string(gang.shape.ranks_per_node));
  EXPECT_EQ(FindEnv(c, "RANK"), nullptr);
  // The token: a secretKeyRef to a key the Secret has, and nowhere else.
  const json* token = FindEnv(c, "ACCEL_WORKER_TOKEN");
  ASSERT_NE(token, nullptr);
  EXPECT_FALSE(token->contains("value"));
  const json& ref = (*token)["valueFrom"]["secretKeyRef"];
  EXPECT_EQ(ref["name"], m.secret["metadata"]["name"]);
  std::string decoded;
  ASSERT_TRUE(absl::Base64Unescape(m.secret["data"][ref["key"].get<std::string>()].get<std::string>(),
                                   &decoded));
  EXPECT_EQ(decoded, gang.token);
  for (const json* o : {&m.job, &m.service}) {
    EXPECT_THAT(o->dump(), ::testing::Not(HasSubstr(gang.token)));
    EXPECT_THAT(o->dump(), ::testing::Not(HasSubstr(absl::Base64Escape(gang.token))));
    EXPECT_THAT(o->dump(), ::testing::Not(HasSubstr("leaked-if-seen")));
  }
  // Every volume mount names a volume of the pod.
  for (const json& mount : c.value("volumeMounts", json::array())) {
    bool found = false;
    for (const json& v : pod.value("volumes", json::array())) found |= v["name"] == mount["name"];
    EXPECT_TRUE(found) << mount.dump();
  }
}

TEST(KubernetesManifests, CpuGangMatchesGolden) {
  const GangLaunch gang = TestGang(2, 1, "cpu");
  const KubernetesManifests m = RenderOrDie(gang, BaseOptions());
  CheckConsistent(m, gang);
  const json& c = m.job["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["command"], json(gang.worker_argv));  // one rank per pod: no --nproc-per-node
  EXPECT_EQ(c["resources"]["requests"]["cpu"], "4");  // OMP_NUM_THREADS x 1 rank
  EXPECT_FALSE(c["resources"].contains("limits"));
  EXPECT_EQ(c["volumeMounts"][0]["mountPath"], "/var/lib/accel");
  EXPECT_EQ(m.job["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
            "accel-shared");
  EXPECT_EQ(m.names.job, "accel-job-7-a2");
  CheckGolden("cpu_2x1", AsList(m));
}

TEST(KubernetesManifests, CudaGangWithJobSettingsMatchesGolden) {
  GangLaunch gang = TestGang(2, 4, "cuda");
  gang.settings = {{"namespace", "train"}, {"image", "registry.example/accel-worker:cuda"},
                   {"service_account", "accel-worker"}, {"memory", "64Gi"},
                   {"image_pull_policy", "IfNotPresent"}};
  const KubernetesManifests m = RenderOrDie(gang, BaseOptions());
  CheckConsistent(m, gang);
  const json& pod = m.job["spec"]["template"]["spec"];
  const json& c = pod["containers"][0];
  EXPECT_EQ(m.job["metadata"]["namespace"], "train");
  EXPECT_EQ(c["image"], "registry.example/accel-worker:cuda");
  EXPECT_EQ(pod["serviceAccountName"], "accel-worker");
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"], "4");
  EXPECT_EQ(c["resources"]["requests"]["cpu"], "16");
  const json& cmd = c["command"];
  ASSERT_GE(cmd.size(), 2u);
  EXPECT_EQ(cmd[cmd.size() - 2], "--nproc-per-node");
  EXPECT_EQ(cmd[cmd.size() - 1], "4");
  CheckGolden("cuda_2x4", AsList(m));
}

TEST(KubernetesManifests, LongJobIdsGiveDistinctValidNames) {
  const std::string prefix(70, 'x');
  const KubernetesNames a = AttemptNames("My_Job." + prefix + "-a", 12, "ns");
  const KubernetesNames b = AttemptNames("My_Job." + prefix + "-b", 12, "ns");
  EXPECT_NE(a.job, b.job);
  for (const KubernetesNames* n : {&a, &b}) {
    EXPECT_LE(n->job.size(), 52u) << n->job;
    EXPECT_TRUE(IsDns1123Label(n->job)) << n->job;
    EXPECT_TRUE(IsDns1123Label(n->secret)) << n->secret;
    EXPECT_TRUE(IsDns1123Label(n->job + "-4294967295"));
    EXPECT_THAT(n->job, ::testing::EndsWith("-a12"));
  }
  EXPECT_EQ(KubernetesLabelValue("Job_" + prefix).size(), 63u);
  EXPECT_TRUE(IsDns1123Label(KubernetesLabelValue("--" + prefix + "--")));
}

TEST(KubernetesManifests, Dns1123Labels) {
  EXPECT_TRUE(IsDns1123Label("a"));
  EXPECT_TRUE(IsDns1123Label("accel-job-1-a1"));
  EXPECT_FALSE(IsDns1123Label(""));
  EXPECT_FALSE(IsDns1123Label("-a"));
  EXPECT_FALSE(IsDns1123Label("a-"));
  EXPECT_FALSE(IsDns1123Label("A"));
  EXPECT_FALSE(IsDns1123Label("a.b"));
  EXPECT_FALSE(IsDns1123Label(std::string(64, 'a')));
}

TEST(KubernetesManifests, ResolveAppliesSettingsAndNamesBadKeys) {
  KubernetesOptions base = BaseOptions();
  auto r = ResolveKubernetesOptions(base, {{"cpu", "3"}, {"master_port", "4000"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cpu, "3");
  EXPECT_EQ(r->master_port, 4000);

  r = ResolveKubernetesOptions(base, {{"nodes_selector", "x"}});
  EXPECT_TRUE(absl::IsInvalidArgument(r.status()));
  EXPECT_THAT(r.status().message(), HasSubstr("resources.kubernetes.nodes_selector"));
  r = ResolveKubernetesOptions(base, {{"namespace", "Bad_NS"}});
  EXPECT_THAT(r.status().message(), HasSubstr("resources.kubernetes.namespace"));
  r = ResolveKubernetesOptions(base, {{"master_port", "http"}});
  EXPECT_THAT(r.status().message(), HasSubstr("resources.kubernetes.master_port"));
  r = ResolveKubernetesOptions(base, {{"mount", "relative/dir"}});
  EXPECT_THAT(r.status().message(), HasSubstr("resources.kubernetes.mount"));
  r = ResolveKubernetesOptions(base, {{"image_pull_policy", "Sometimes"}});
  EXPECT_TRUE(absl::IsInvalidArgument(r.status()));
  base.image.clear();
  r = ResolveKubernetesOptions(base, {});
  EXPECT_THAT(r.status().message(), HasSubstr("--kube-image"));
}

TEST(KubernetesManifests, NamespaceDefaultsToTheServiceAccountsThenDefault) {
  KubernetesOptions base = BaseOptions();
  base.kube_namespace.clear();
  const std::string file = FreshTestDir() + "/namespace";
  std::ofstream(file) << "ml-team\n";
  auto r = ResolveKubernetesOptions(base, {}, file);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kube_namespace, "ml-team");
  r = ResolveKubernetesOptions(base, {}, file + ".missing");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kube_namespace, "default");
}

TEST(KubernetesManifests, RenderRejectsBadGangs) {
  const KubernetesOptions o = BaseOptions();
  GangLaunch g = TestGang(1, 1, "cpu");
  g.worker_argv.clear();
  EXPECT_TRUE(absl::IsInvalidArgument(RenderKubernetesAttempt(g, o).status()));
  g = TestGang(1, 1, "cpu");
  g.token.clear();
  EXPECT_TRUE(absl::IsInvalidArgument(RenderKubernetesAttempt(g, o).status()));
  g = TestGang(0, 1, "cpu");
  EXPECT_TRUE(absl::IsInvalidArgument(RenderKubernetesAttempt(g, o).status()));
}

}  // namespace
}  // namespace accel::server
