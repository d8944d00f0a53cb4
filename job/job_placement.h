// Where a job's ranks run (the job file's resources.launcher, resources.nodes and the launcher's
// settings), checked at the door: acceld repeats these checks at submit, after it has filled in
// its default launcher, so a job it accepts can be placed.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "accel/v1/job.pb.h"

namespace accel::job {

inline constexpr const char* kLauncherLocal = "local";
inline constexpr const char* kLauncherSlurm = "slurm";
inline constexpr const char* kLauncherKubernetes = "kubernetes";

// The keys of resources.slurm and resources.kubernetes; each overrides acceld's flag of the
// same meaning (--slurm-partition, --kube-image, ...).
const std::vector<std::string>& SlurmSettingKeys();       // partition, account, time, constraint
// namespace, image, pvc, mount, service_account, image_pull_policy, cpu, memory, master_port
const std::vector<std::string>& KubernetesSettingKeys();

// The machines a job spans: resources.nodes, at least 1.
int NodesOf(const accel::v1::ResourceSpec& r);

// InvalidArgument naming the key when: the launcher is not local, slurm or kubernetes (empty is
// fine: acceld's default); nodes is negative, over 65536 or does not divide num_processes; the
// local launcher is asked for more than one node; settings are given for a launcher the job
// does not use, or a value is not what the cluster accepts (a Slurm time limit, a Kubernetes
// name or cpu / memory quantity: job/cluster_values.h; no value may hold whitespace or quotes,
// since it goes into a batch script or a manifest).
[[nodiscard]] absl::Status ValidatePlacement(const accel::v1::ResourceSpec& r, int num_processes);

}  // namespace accel::job
