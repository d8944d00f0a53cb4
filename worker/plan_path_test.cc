// A daemon rank from its Assignment to a constructed trainer: acceld lowered the job once at
// submit, the rank lowers nothing and obtains the model's config once, from the plan, never
// from config.json (issue 29: "a rank logs one lowering and one model-config read").
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "job/job_file.h"
#include "job/job_lowering.h"
#include "job/plan_proto.h"
#include "worker/job_spec.h"
#include "worker/memory_check.h"

namespace accel::worker {
namespace {

std::string FreshDir() {
  const std::string name =
      ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                              ("accel_worker_" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

TEST(PlanPathTest, ARankTrainsItsPlanWithOneModelReadAndNoLowering) {
  const std::string dir = FreshDir();
  absl::StatusOr<model::ModelConfig> tiny = model::ModelPreset("gpt2-tiny");
  ASSERT_TRUE(tiny.ok());
  WriteFile(dir + "/config.json", model::ModelConfigToJson(*tiny));
  WriteFile(dir + "/data.txt", std::string(4096, 'a') + "In the beginning");
  accel::v1::JobSpec spec = job::DefaultJobSpec();
  spec.mutable_model()->clear_preset();
  spec.mutable_model()->set_config(dir + "/config.json");
  spec.mutable_data()->set_path(dir + "/data.txt");
  spec.mutable_train()->set_steps(1);
  spec.mutable_train()->set_micro_batch(1);
  spec.mutable_train()->set_seq_len(8);
  spec.mutable_resources()->set_num_processes(1);

  // acceld at submit (services.cc, convert.cc): one lowering, into the typed plan.
  const int64_t before_submit = config::LoweringsInProcess();
  absl::StatusOr<config::LoweredJob> lowered = job::LowerJobSpec(spec);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  absl::StatusOr<accel::v1::TrainingPlan> plan = job::TrainingPlanOfSpec(spec, *lowered);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(config::LoweringsInProcess(), before_submit + 1);
  accel::v1::Assignment assignment;
  assignment.set_world_size(1);
  *assignment.mutable_spec() = spec;
  *assignment.mutable_plan() = *plan;
  // The rank cannot read config.json even if it tried.
  std::filesystem::remove(dir + "/config.json");

  const int64_t lowerings = config::LoweringsInProcess();
  const int64_t reads = config::ModelConfigReads();
  absl::StatusOr<JobRun> run = JobRunFromAssignment(assignment);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->plan_version, job::kTrainingPlanVersion);
  ASSERT_TRUE(run->train.resolved_model.has_value());
  ProcessMemory roomy;
  roomy.mem_available = int64_t{64} << 30;
  ASSERT_TRUE(CheckMemoryPlan({.options = &run->train}, roomy).ok());
  absl::StatusOr<std::unique_ptr<train::Trainer>> trainer = train::Trainer::Create(run->train);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  EXPECT_EQ((*trainer)->layout().config().Describe(), tiny->Describe());
  EXPECT_EQ(config::LoweringsInProcess(), lowerings) << "the rank lowered the job again";
  EXPECT_EQ(config::ModelConfigReads(), reads + 1) << "the rank's one read is its plan's model";
}

TEST(PlanPathTest, AnAssignmentWithoutAPlanIsRefusedNotLowered) {
  accel::v1::Assignment assignment;
  assignment.set_world_size(1);
  *assignment.mutable_spec() = job::DefaultJobSpec();
  const int64_t lowerings = config::LoweringsInProcess();
  absl::StatusOr<JobRun> run = JobRunFromAssignment(assignment);
  EXPECT_TRUE(absl::IsInvalidArgument(run.status())) << run.status();
  EXPECT_THAT(std::string(run.status().message()),
              ::testing::HasSubstr("the assignment carries no training plan"));
  EXPECT_EQ(config::LoweringsInProcess(), lowerings);
}

}  // namespace
}  // namespace accel::worker
