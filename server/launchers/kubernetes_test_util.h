// Test helpers for the kubernetes launcher: a gang as JobManager builds one for a launcher that
// places ranks elsewhere.
#pragma once

#include <string>

#include "server/core/gang_runner.h"

namespace accel::server {

inline constexpr char kTestToken[] = "s3cret-attempt-token-0123456789";

inline GangLaunch TestGang(int nodes, int ranks_per_node, const std::string& device) {
  GangLaunch g;
  g.job_id = "job-7";
  g.attempt = 2;
  g.shape.nodes = nodes;
  g.shape.ranks_per_node = ranks_per_node;
  g.shape.device = device;
  g.worker_argv = {"/usr/bin/accel-worker", "--log-level", "info"};
  // What JobManager's local env carries that the launcher must replace or drop.
  g.shared_env = {"ACCEL_JOB_ID=job-7",          "ACCEL_ATTEMPT=2",
                  "ACCEL_COORDINATOR=acceld.accel.svc:7070", "OMP_NUM_THREADS=4",
                  "MASTER_ADDR=127.0.0.1",       "ACCEL_WORKER_TOKEN=leaked-if-seen",
                  "RANK=0",                      "NOT A VARIABLE"};
  g.token = kTestToken;
  g.log_dir = "/var/lib/accel/logs/job-7/attempt-2";
  return g;
}

}  // namespace accel::server
