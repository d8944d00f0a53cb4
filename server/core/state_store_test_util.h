// Records the StateStore tests build (state_store_test.cc, state_store_damage_test.cc).
#pragma once

#include <cstdint>
#include <string>

#include "server/core/state_store.h"

namespace accel::server {

inline JobRecord SampleJob() {
  JobRecord j;
  j.id = "job-7";
  j.number = 7;
  j.name = "tiny";
  j.spec_json = R"({"name":"tiny"})";
  j.slots = 2;
  j.priority = 3;
  j.max_restarts = 1;
  j.state = JobState::kRunning;
  j.attempt = 2;
  j.restarts_used = 1;
  j.error = "rank 1 exited with code 1";
  j.submit_us = 10;
  j.start_us = 20;
  j.last_step = 41;
  j.plan_json = R"({"strategy":"full_shard"})";
  j.training_plan = std::string("\x08\x01\x00plan", 7);  // bytes, a NUL among them
  j.knobs.device = DeviceKind::kCuda;
  j.knobs.threads = 3;
  j.knobs.heartbeat_timeout_s = 7.5;
  j.knobs.stop_grace_s = 2;
  j.knobs.checkpoint_dir = "/ckpt";
  return j;
}

inline Event MakeEvent(const std::string& job, int64_t seq, EventKind kind, const std::string& body) {
  Event e;
  e.job_id = job;
  e.seq = seq;
  e.time_us = 100 + seq;
  e.attempt = 1;
  e.rank = 0;
  e.kind = kind;
  e.body_json = body;
  return e;
}

}  // namespace accel::server
