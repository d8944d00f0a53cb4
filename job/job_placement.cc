#include "job/job_placement.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "job/cluster_values.h"

namespace accel::job {
namespace {

constexpr int kMaxNodes = 65536;
constexpr size_t kMaxSettingBytes = 253;

absl::Status Invalid(const std::string& key, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(key, ": ", what));
}

// RFC 1123 names as Kubernetes checks them: a label (namespace) or a subdomain (objects).
bool IsDnsName(const std::string& v, bool subdomain) {
  if (v.empty() || v.size() > (subdomain ? 253u : 63u)) return false;
  auto alnum = [](char ch) { return std::islower(static_cast<unsigned char>(ch)) || std::isdigit(static_cast<unsigned char>(ch)); };
  if (!alnum(v.front()) || !alnum(v.back())) return false;
  for (char ch : v) {
    if (!alnum(ch) && ch != '-' && !(subdomain && ch == '.')) return false;
  }
  return true;
}

absl::Status CheckSetting(const std::string& key, const std::string& v) {
  if (v.empty()) return Invalid(key, "empty; leave the key out for acceld's default");
  if (v.size() > kMaxSettingBytes) {
    return Invalid(key, absl::StrCat(v.size(), " bytes; at most ", kMaxSettingBytes));
  }
  for (unsigned char ch : v) {
    if (ch <= 0x20 || ch >= 0x7f || ch == '"' || ch == '\'' || ch == '\\' || ch == '`' ||
        ch == '$') {
      return Invalid(key, "printable ASCII without whitespace, quotes, '\\', '`' or '$'");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSlurm(const std::string& key, const std::string& v) {
  if (absl::EndsWith(key, ".time")) {
    if (absl::Status s = CheckSlurmTime(v); !s.ok()) return Invalid(key, std::string(s.message()));
  }
  return absl::OkStatus();
}

absl::Status CheckKubernetes(const std::string& key, const std::string& v) {
  if (absl::EndsWith(key, ".namespace") && !IsDnsName(v, false)) {
    return Invalid(key, absl::StrCat("'", v, "' is not a Kubernetes namespace (lower-case "
                                          "letters, digits and '-', at most 63)"));
  }
  if ((absl::EndsWith(key, ".pvc") || absl::EndsWith(key, ".service_account")) &&
      !IsDnsName(v, true)) {
    return Invalid(key, absl::StrCat("'", v, "' is not a Kubernetes object name"));
  }
  int port = 0;
  if (absl::EndsWith(key, ".master_port") &&
      (!absl::SimpleAtoi(v, &port) || port < 1 || port > 65535)) {
    return Invalid(key, absl::StrCat("'", v, "' is not a port (1 to 65535)"));
  }
  for (const auto& [name, what] :
       {std::pair{".cpu", QuantityOf::kCpu}, std::pair{".memory", QuantityOf::kMemory}}) {
    if (!absl::EndsWith(key, name)) continue;
    if (absl::Status s = CheckKubernetesQuantity(v, what); !s.ok()) {
      return Invalid(key, std::string(s.message()));
    }
  }
  if (absl::EndsWith(key, ".mount") && v.front() != '/') {
    return Invalid(key, absl::StrCat("'", v, "' is not an absolute path"));
  }
  return absl::OkStatus();
}

absl::Status CheckSettings(const std::string& section,
                           const google::protobuf::Map<std::string, std::string>& settings,
                           const std::vector<std::string>& known,
                           absl::Status (*check)(const std::string&, const std::string&)) {
  for (const auto& [k, v] : settings) {
    const std::string key = absl::StrCat(section, ".", k);
    if (std::find(known.begin(), known.end(), k) == known.end()) {
      return Invalid(key, absl::StrCat("unknown key; known: ", absl::StrJoin(known, ", ")));
    }
    if (absl::Status s = CheckSetting(key, v); !s.ok()) return s;
    if (absl::Status s = check(key, v); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<std::string>& SlurmSettingKeys() {
  static const std::vector<std::string> keys = {"partition", "account", "time", "constraint"};
  return keys;
}

const std::vector<std::string>& KubernetesSettingKeys() {
  static const std::vector<std::string> keys = {
      "namespace", "image", "pvc", "mount", "service_account", "image_pull_policy", "cpu",
      "memory", "master_port"};
  return keys;
}

int NodesOf(const accel::v1::ResourceSpec& r) { return r.nodes() > 0 ? r.nodes() : 1; }

absl::Status ValidatePlacement(const accel::v1::ResourceSpec& r, int num_processes) {
  const std::string& launcher = r.launcher();
  if (!launcher.empty() && launcher != kLauncherLocal && launcher != kLauncherSlurm &&
      launcher != kLauncherKubernetes) {
    return Invalid("resources.launcher",
                   absl::StrCat("must be local, slurm or kubernetes, got '", launcher, "'"));
  }
  if (r.nodes() < 0 || r.nodes() > kMaxNodes) {
    return Invalid("resources.nodes",
                   absl::StrCat("must be an integer from 1 to ", kMaxNodes, ", got ", r.nodes()));
  }
  const int nodes = NodesOf(r);
  if (num_processes % nodes != 0) {
    return Invalid("resources.nodes", absl::StrCat(num_processes, " processes do not divide evenly "
                                                   "over ", nodes, " nodes (num_processes is the "
                                                   "total)"));
  }
  if (launcher == kLauncherLocal && nodes > 1) {
    return Invalid("resources.nodes",
                   absl::StrCat(nodes, " nodes need launcher slurm or kubernetes; the local "
                                       "launcher runs every rank on acceld's host"));
  }
  if (absl::Status s = CheckSettings("resources.slurm", r.slurm(), SlurmSettingKeys(), CheckSlurm);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckSettings("resources.kubernetes", r.kubernetes(),
                                     KubernetesSettingKeys(), CheckKubernetes);
      !s.ok()) {
    return s;
  }
  if (!launcher.empty() && launcher != kLauncherSlurm && !r.slurm().empty()) {
    return Invalid("resources.slurm", absl::StrCat("given, but the job's launcher is ", launcher));
  }
  if (!launcher.empty() && launcher != kLauncherKubernetes && !r.kubernetes().empty()) {
    return Invalid("resources.kubernetes",
                   absl::StrCat("given, but the job's launcher is ", launcher));
  }
  return absl::OkStatus();
}

}  // namespace accel::job
