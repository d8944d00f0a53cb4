// CheckMemoryPlan's refusal and its advice (worker/memory_check.h), against the planner itself.
#include "worker/memory_check.h"

#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "engine/base/env.h"
#include "engine/config/batch_bounds.h"
#include "engine/config/planned_run.h"
#include "engine/plan/memory_plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::worker {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kSlack = int64_t{64} << 20;  // what a suggestion must leave free

// Issue 28: the advice counted the micro-batch down one value at a time, planning each; at the
// largest micro-batch submit accepts (2^20) that was a million plans. It now searches, and the
// value it names is the largest that fits: one more would not.
TEST(MemoryCheckTest, AHugeMicroBatchIsRefusedNamingTheLargestThatFits) {
  config::TrainOptions o;
  o.model = "gpt2-tiny";
  o.data = "/unused";
  o.batch = config::kMaxMicroBatch;
  o.seq = 64;
  o.activation_checkpointing = true;  // nothing else to suggest: only the micro-batch
  ProcessMemory machine;
  machine.rss_anon = 0;
  machine.mem_available = int64_t{1} << 30;
  const absl::Status s = CheckMemoryPlan({.options = &o}, machine);
  ASSERT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  const std::string msg(s.message());
  const size_t at = msg.find("micro-batch ");
  ASSERT_NE(at, std::string::npos) << msg;
  int64_t suggested = 0;
  const std::string digits = msg.substr(at + 12, msg.find_first_not_of("0123456789", at + 12) -
                                                      (at + 12));
  ASSERT_TRUE(absl::SimpleAtoi(digits, &suggested)) << msg;
  auto ram = [&](int64_t batch) {
    config::TrainOptions b = o;
    b.batch = batch;
    auto model = config::ModelConfigOf(Env::Default(), b);
    auto plan = accel::plan::PlanMemory(*model, config::PlannedRunOf(b), {});
    EXPECT_TRUE(plan.ok()) << plan.status();
    return plan.ok() ? plan->MachineRamBytes() : int64_t{0};
  };
  EXPECT_LE(ram(suggested) + kSlack, machine.mem_available) << msg;
  EXPECT_GT(ram(suggested + 1) + kSlack, machine.mem_available) << msg;
}

// Submit bounds them, but the worker's own door (ValidateTrainOptions) names them too.
TEST(MemoryCheckTest, BatchAndAccumulationAboveTheirBoundsAreRefusedBeforePlanning) {
  config::TrainOptions o;
  o.model = "gpt2-tiny";
  o.data = "/unused";
  o.grad_accum = 2000000000;
  EXPECT_THAT(std::string(CheckMemoryPlan({.options = &o}, ProcessMemory{}).message()),
              HasSubstr("--grad-accum (job key train.grad_accum) must be at most 1048576"));
  o.grad_accum = 1;
  o.batch = 2000000000;
  EXPECT_THAT(std::string(CheckMemoryPlan({.options = &o}, ProcessMemory{}).message()),
              HasSubstr("--batch (job key train.micro_batch) must be at most 1048576"));
}

}  // namespace
}  // namespace accel::worker
