// deploy/kubernetes/*.yaml parsed (yaml-cpp) and cross-checked: every object well formed, the
// Deployment's references (service account, claims, volumes, the flags' claim and paths) exist,
// the Service reaches the Deployment's port, and the Role grants every call the kubernetes
// launcher makes. The example job files name launcher settings acceld accepts.
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/launchers/kubernetes_launcher.h"
#include "server/launchers/kubernetes_manifests.h"
#include "yaml-cpp/yaml.h"

namespace accel::server {
namespace {

namespace fs = std::filesystem;

const fs::path kDeploy = fs::path(ACCEL_SOURCE_DIR) / "deploy";

class DeployManifests : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& entry : fs::directory_iterator(kDeploy / "kubernetes")) {
      if (entry.path().extension() != ".yaml") continue;
      std::vector<YAML::Node> docs;
      try {
        docs = YAML::LoadAllFromFile(entry.path().string());
      } catch (const YAML::Exception& e) {
        FAIL() << entry.path() << ": " << e.what();
      }
      for (const YAML::Node& d : docs) {
        if (!d.IsMap()) continue;
        ASSERT_TRUE(d["kind"] && d["metadata"] && d["metadata"]["name"]) << entry.path();
        objects_[d["kind"].as<std::string>() + "/" + d["metadata"]["name"].as<std::string>()] = d;
        files_[d["kind"].as<std::string>() + "/" + d["metadata"]["name"].as<std::string>()] =
            entry.path().filename().string();
      }
    }
    ASSERT_TRUE(objects_.count("Deployment/acceld")) << "no Deployment acceld";
    deployment_ = objects_["Deployment/acceld"];
    const YAML::Node c = deployment_["spec"]["template"]["spec"]["containers"][0];
    ASSERT_TRUE(c) << "the Deployment has no container";
    container_ = c;
    for (const YAML::Node& a : container_["args"]) {
      const std::string arg = a.as<std::string>();
      const size_t eq = arg.find('=');
      ASSERT_TRUE(arg.rfind("--", 0) == 0 && eq != std::string::npos)
          << "write acceld's args as --flag=value: " << arg;
      args_[arg.substr(2, eq - 2)] = arg.substr(eq + 1);
    }
  }

  bool Has(const std::string& kind, const std::string& name) {
    return objects_.count(kind + "/" + name) != 0;
  }
  // The mount path of the container's volume backed by `claim`, or "".
  std::string MountOfClaim(const std::string& claim) {
    for (const YAML::Node& v : deployment_["spec"]["template"]["spec"]["volumes"]) {
      if (!v["persistentVolumeClaim"] ||
          v["persistentVolumeClaim"]["claimName"].as<std::string>() != claim) {
        continue;
      }
      for (const YAML::Node& m : container_["volumeMounts"]) {
        if (m["name"].as<std::string>() == v["name"].as<std::string>()) {
          return m["mountPath"].as<std::string>();
        }
      }
    }
    return "";
  }
  std::string AccessMode(const std::string& claim) {
    return objects_["PersistentVolumeClaim/" + claim]["spec"]["accessModes"][0].as<std::string>();
  }

  std::map<std::string, YAML::Node> objects_;
  std::map<std::string, std::string> files_;
  YAML::Node deployment_, container_;
  std::map<std::string, std::string> args_;
};

TEST_F(DeployManifests, ObjectsAreWellFormed) {
  for (const auto& [key, o] : objects_) {
    SCOPED_TRACE(files_[key] + ": " + key);
    EXPECT_TRUE(o["apiVersion"] && !o["apiVersion"].as<std::string>().empty());
    const std::string name = o["metadata"]["name"].as<std::string>();
    EXPECT_TRUE(IsDns1123Label(name)) << name;
    if (o["kind"].as<std::string>() != "Namespace") {
      ASSERT_TRUE(o["metadata"]["namespace"]) << "namespaced objects name their namespace";
      EXPECT_TRUE(Has("Namespace", o["metadata"]["namespace"].as<std::string>()));
    }
  }
  for (const char* want : {"ServiceAccount/acceld", "Role/acceld-launcher",
                           "RoleBinding/acceld-launcher", "Service/acceld"}) {
    EXPECT_TRUE(objects_.count(want)) << "missing " << want;
  }
}

TEST_F(DeployManifests, DeploymentIsOneRecreatedReplicaWhoseReferencesExist) {
  const YAML::Node spec = deployment_["spec"];
  EXPECT_EQ(spec["replicas"].as<int>(), 1);
  EXPECT_EQ(spec["strategy"]["type"].as<std::string>(), "Recreate");
  const YAML::Node pod = spec["template"]["spec"];
  for (const auto& kv : spec["selector"]["matchLabels"]) {
    EXPECT_EQ(spec["template"]["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(),
              kv.second.as<std::string>());
  }
  EXPECT_TRUE(Has("ServiceAccount", pod["serviceAccountName"].as<std::string>()));
  std::set<std::string> volumes;
  for (const YAML::Node& v : pod["volumes"]) {
    volumes.insert(v["name"].as<std::string>());
    if (v["persistentVolumeClaim"]) {
      const std::string claim = v["persistentVolumeClaim"]["claimName"].as<std::string>();
      EXPECT_TRUE(Has("PersistentVolumeClaim", claim)) << claim;
    }
  }
  for (const YAML::Node& m : container_["volumeMounts"]) {
    EXPECT_TRUE(volumes.count(m["name"].as<std::string>())) << m["name"].as<std::string>();
  }
}

TEST_F(DeployManifests, AcceldFlagsMatchTheVolumesAndPassTheLaunchersChecks) {
  EXPECT_EQ(args_["launcher"], "kubernetes");
  // The state directory: acceld's own claim (one writer).
  const std::string state_claim = "accel-state";
  EXPECT_EQ(MountOfClaim(state_claim), args_["state-dir"]);
  EXPECT_EQ(AccessMode(state_claim), "ReadWriteOnce");
  // The shared filesystem: the claim the worker pods get, mounted where acceld sees it too.
  const std::string shared = args_["kube-pvc"];
  ASSERT_TRUE(Has("PersistentVolumeClaim", shared)) << "--kube-pvc=" << shared;
  EXPECT_EQ(AccessMode(shared), "ReadWriteMany");
  EXPECT_EQ(MountOfClaim(shared), args_["kube-mount"]);
  EXPECT_EQ(args_["kube-namespace"], deployment_["metadata"]["namespace"].as<std::string>());
  KubernetesOptions o;
  o.kube_namespace = args_["kube-namespace"];
  o.image = args_["kube-image"];
  o.pvc = shared;
  o.mount_path = args_["kube-mount"];
  absl::StatusOr<KubernetesOptions> r = ResolveKubernetesOptions(o, {});
  EXPECT_TRUE(r.ok()) << r.status();
}

TEST_F(DeployManifests, ServiceReachesAcceldsPort) {
  const YAML::Node svc = objects_["Service/acceld"];
  const YAML::Node pod_labels = deployment_["spec"]["template"]["metadata"]["labels"];
  for (const auto& kv : svc["spec"]["selector"]) {
    EXPECT_EQ(pod_labels[kv.first.as<std::string>()].as<std::string>(),
              kv.second.as<std::string>());
  }
  const std::string listen = args_["listen"];
  const std::string listen_port = listen.substr(listen.rfind(':') + 1);
  const YAML::Node port = svc["spec"]["ports"][0];
  bool target_found = false;
  for (const YAML::Node& p : container_["ports"]) {
    if (p["name"].as<std::string>() == port["targetPort"].as<std::string>()) {
      target_found = true;
      EXPECT_EQ(p["containerPort"].as<std::string>(), listen_port);
    }
  }
  EXPECT_TRUE(target_found) << "the Service's targetPort names no container port";
  // Workers are told to reach acceld at the Service's cluster DNS name.
  EXPECT_EQ(args_["advertise"], "acceld." + svc["metadata"]["namespace"].as<std::string>() +
                                    ".svc:" + port["port"].as<std::string>());
}

TEST_F(DeployManifests, RoleGrantsEveryCallTheLauncherMakes) {
  const YAML::Node binding = objects_["RoleBinding/acceld-launcher"];
  const std::string role = binding["roleRef"]["name"].as<std::string>();
  ASSERT_TRUE(Has("Role", role));
  const YAML::Node subject = binding["subjects"][0];
  EXPECT_EQ(subject["kind"].as<std::string>(), "ServiceAccount");
  EXPECT_EQ(subject["name"].as<std::string>(),
            deployment_["spec"]["template"]["spec"]["serviceAccountName"].as<std::string>());
  std::set<std::string> granted;  // group|resource|verb
  for (const YAML::Node& rule : objects_["Role/" + role]["rules"]) {
    for (const YAML::Node& g : rule["apiGroups"]) {
      for (const YAML::Node& r : rule["resources"]) {
        for (const YAML::Node& v : rule["verbs"]) {
          granted.insert(g.as<std::string>() + "|" + r.as<std::string>() + "|" +
                         v.as<std::string>());
        }
      }
    }
  }
  const std::vector<KubernetesPermission> used = KubernetesLauncherPermissions();
  EXPECT_GE(used.size(), 8u);
  for (const KubernetesPermission& p : used) {
    EXPECT_TRUE(granted.count(p.api_group + "|" + p.resource + "|" + p.verb))
        << "rbac.yaml does not grant " << p.verb << " on " << p.resource << " ("
        << (p.api_group.empty() ? "core" : p.api_group) << ")";
  }
}

// The example job files: their launcher, a node count that divides the ranks, and (kubernetes)
// settings that ResolveKubernetesOptions accepts.
TEST(DeployJobFiles, NameTheirLauncherAndValidSettings) {
  std::vector<std::pair<fs::path, std::string>> files = {{kDeploy / "slurm" / "job.yaml", "slurm"}};
  for (const auto& e : fs::directory_iterator(kDeploy / "kubernetes" / "jobs")) {
    files.emplace_back(e.path(), "kubernetes");
  }
  ASSERT_GE(files.size(), 2u);
  for (const auto& [path, launcher] : files) {
    SCOPED_TRACE(path.string());
    const YAML::Node job = YAML::LoadFile(path.string());
    const YAML::Node res = job["resources"];
    ASSERT_TRUE(res.IsMap());
    EXPECT_EQ(res["launcher"].as<std::string>(), launcher);
    const int nodes = res["nodes"].as<int>(), ranks = res["num_processes"].as<int>();
    EXPECT_GE(nodes, 2);
    EXPECT_EQ(ranks % nodes, 0);
    if (launcher != "kubernetes") continue;
    std::map<std::string, std::string> settings;
    for (const auto& kv : res["kubernetes"]) {
      settings[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
    KubernetesOptions base;
    base.kube_namespace = "accel";
    absl::StatusOr<KubernetesOptions> r = ResolveKubernetesOptions(base, settings);
    EXPECT_TRUE(r.ok()) << r.status();
  }
}

}  // namespace
}  // namespace accel::server
