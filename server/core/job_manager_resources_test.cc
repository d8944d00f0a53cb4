// JobManager: cuda jobs get GPUs from a pool of their own (or are refused naming
// resources.device), and worker calls of an ended attempt are rejected.
#include <string>
#include <vector>

#include "server/core/job_manager.h"
#include "server/core/job_manager_test_fixture.h"

namespace accel::server {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::FakeRunner;
using testing::JobManagerTest;

std::string EnvValue(const std::vector<std::string>& env, const std::string& key) {
  for (const std::string& kv : env) {
    if (kv.rfind(key + "=", 0) == 0) return kv.substr(key.size() + 1);
  }
  return "<unset>";
}

TEST_F(JobManagerTest, CudaJobsGetOneGpuPerRankFromAPoolOfTheirOwn) {
  Open(/*slots=*/2, /*gpus=*/2);
  JobRecord cuda = Job(2);
  cuda.spec_json = R"({"resources":{"num_processes":2,"device":"cuda"}})";
  cuda.knobs.device = DeviceKind::kCuda;
  auto a = manager_->Submit(cuda);
  ASSERT_TRUE(a.ok()) << a.status();
  auto cpu = manager_->Submit(Job(2));  // the CPU pool is separate: it starts alongside
  JobRecord one = Job(1);
  one.spec_json = R"({"resources":{"num_processes":1,"device":"cuda"}})";
  one.knobs.device = DeviceKind::kCuda;
  auto waiting = manager_->Submit(one);  // no GPU left: queued, never partially placed
  manager_->Tick();
  ASSERT_EQ(runner_->launches.size(), 2u);
  const bool cuda_first = runner_->launches[0].job_id == a->id;
  const GangLaunch& g = runner_->launches[cuda_first ? 0 : 1];
  const GangLaunch& c = runner_->launches[cuda_first ? 1 : 0];
  ASSERT_EQ(g.job_id, a->id);
  ASSERT_EQ(c.job_id, cpu->id);
  EXPECT_EQ(EnvValue(g.ranks[0].env, "CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(EnvValue(g.ranks[1].env, "CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(EnvValue(g.ranks[1].env, "LOCAL_RANK"), "1");
  EXPECT_EQ(EnvValue(c.ranks[0].env, "CUDA_VISIBLE_DEVICES"), "<unset>");
  EXPECT_EQ(State(waiting->id), JobState::kQueued);
  ClusterView v = manager_->Cluster();
  ASSERT_EQ(v.pools.size(), 2u);
  EXPECT_EQ(v.pools[1].device, "cuda");
  EXPECT_EQ(v.pools[1].total_slots, 2);
  EXPECT_EQ(v.pools[1].free_slots, 0);
  EXPECT_THAT(v.pools[1].names, ElementsAre("gpu-0", "gpu-1"));
  EXPECT_EQ(v.pools[1].memory_bytes[0], 80LL << 30);
  EXPECT_EQ(v.allocation_device[a->id], "cuda");
  EXPECT_EQ(v.allocation_device[cpu->id], "cpu");
  EXPECT_THAT(v.queue, ElementsAre(waiting->id));
  // When the cuda gang ends, the waiting job gets GPU 0.
  RegisterAll(a->id);
  runner_->Exit(a->id, 1, 0, 0);
  runner_->Exit(a->id, 1, 1, 0);
  manager_->Tick();
  ASSERT_EQ(runner_->launches.size(), 3u);
  EXPECT_EQ(runner_->launches[2].job_id, waiting->id);
  EXPECT_EQ(EnvValue(runner_->launches[2].ranks[0].env, "CUDA_VISIBLE_DEVICES"), "0");
  // More GPUs than exist: refused at submit.
  JobRecord big = Job(3);
  big.spec_json = R"({"resources":{"num_processes":3,"device":"cuda"}})";
  big.knobs.device = DeviceKind::kCuda;
  EXPECT_THAT(std::string(manager_->Submit(big).status().message()),
              HasSubstr("resources.num_processes: the job needs 3 cuda slots but this acceld has 2"));
}

TEST_F(JobManagerTest, CudaJobsAreRefusedWithoutGpusNamingResourcesDevice) {
  JobRecord cuda = Job(1);
  cuda.spec_json = R"({"resources":{"num_processes":1,"device":"cuda"}})";
  cuda.knobs.device = DeviceKind::kCuda;
  auto s = manager_->Submit(cuda);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("resources.device: cuda needs GPUs"));
  EXPECT_TRUE(registry_->List().empty());
}

TEST_F(JobManagerTest, WorkerCallsOfAnEndedAttemptAreRejected) {
  auto job = manager_->Submit(Job(1, /*max_restarts=*/1));
  manager_->Tick();
  auto who = *manager_->AuthenticateWorker("tok1");
  ASSERT_TRUE(manager_->Register(who, 0, 1).ok());
  EXPECT_EQ(manager_->Register(who, 0, 1).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(manager_->Register(who, 1, 1).status().code(), absl::StatusCode::kInvalidArgument);
  runner_->Exit(job->id, 1, 0, 1);
  manager_->Tick();  // attempt 2 starts
  EXPECT_EQ(manager_->Report(who, 0, {}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(manager_->Kv(who).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace accel::server
