// Samples longer than the communicator's deadline (engine/train/sample_heartbeat.h), over real
// gloo with a 1 s deadline: rank 0 takes 2.5 s over its sample (its on_sample sleeps, as a long
// decode or a slow event sink would) and the gang goes on, because the other ranks wait under
// rank 0's heartbeat. The control: the same 2.5 s spent outside a sample (in on_step) fails the
// gang on the deadline, so the deadline is real. A sample that fails on rank 0 fails the other
// ranks at once, with Aborted naming rank 0, not with a deadline; one that outlives its limit
// fails the gang (the wait has a deadline of its own).
#include <chrono>
#include <thread>

#include "engine/train/trainer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/sharding/gang.h"
#include "tests/sharding/gang_fixture.h"
#include "tests/sharding/rank_threads.h"

namespace accel::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kWorld = 2;
constexpr absl::Duration kDeadline = absl::Seconds(1);
constexpr auto kSlow = std::chrono::milliseconds(2500);

class SampleHeartbeatTest : public GangTest {
 protected:
  SampleHeartbeatTest() : GangTest(SmallModel("gpt2", "heartbeat")) {}

  train::TrainOptions Options() const {
    train::TrainOptions o = GangOptions(dir_, shard::Strategy::kFullShard, /*accum=*/1,
                                        /*batch=*/2);
    o.steps = 3;
    o.sample.every = 2;
    o.sample.prompt = "ab";
    o.sample.max_new_tokens = 4;
    o.sample.heartbeat_s = 0.1;
    return o;
  }

  // Trains Options() on kWorld ranks with a 1 s deadline; rank 0 calls the given hooks.
  std::vector<absl::Status> Run(
      const std::function<absl::Status(const train::StepMetrics&)>& rank0_on_step,
      const std::function<absl::Status(const train::SampleResult&)>& rank0_on_sample,
      double limit_s = 60) {
    train::TrainOptions options = Options();
    options.sample.limit_s = limit_s;
    return RunOnRanks(kWorld, options.shard, kDeadline,
                      [&](int rank, shard::ProcessGroups groups) -> absl::Status {
                        MemoryLedger ledger;
                        auto trainer = train::Trainer::Create(options, groups, Env::Default(),
                                                              &ledger);
                        if (!trainer.ok()) return trainer.status();
                        auto none_step = [](const train::StepMetrics&) {
                          return absl::OkStatus();
                        };
                        return (*trainer)->Train(rank == 0 ? rank0_on_step : none_step, nullptr,
                                                 nullptr, rank == 0 ? rank0_on_sample : nullptr);
                      });
  }
};

TEST_F(SampleHeartbeatTest, ASampleLongerThanTheDeadlineKeepsTheGang) {
  int samples = 0;
  std::vector<absl::Status> statuses = Run(
      [](const train::StepMetrics&) { return absl::OkStatus(); },
      [&](const train::SampleResult& s) {
        ++samples;
        EXPECT_FALSE(s.ids.empty());
        std::this_thread::sleep_for(kSlow);
        return absl::OkStatus();
      });
  for (int r = 0; r < kWorld; ++r) EXPECT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r];
  EXPECT_EQ(samples, 2);  // steps 2 and 3 (the last)
}

TEST_F(SampleHeartbeatTest, TheSameWaitOutsideASampleMeetsTheDeadline) {
  std::vector<absl::Status> statuses = Run(
      [](const train::StepMetrics& m) {
        if (m.step == 0) std::this_thread::sleep_for(kSlow);
        return absl::OkStatus();
      },
      [](const train::SampleResult&) { return absl::OkStatus(); });
  bool any_deadline = false;
  for (const absl::Status& s : statuses) {
    any_deadline |= absl::IsDeadlineExceeded(s) || absl::IsUnavailable(s);
  }
  EXPECT_TRUE(any_deadline) << statuses[0] << " / " << statuses[1];
}

TEST_F(SampleHeartbeatTest, ASampleThatFailsOnRankZeroFailsTheOthersAtOnce) {
  std::vector<absl::Status> statuses = Run(
      [](const train::StepMetrics&) { return absl::OkStatus(); },
      [](const train::SampleResult&) { return absl::InternalError("the event sink is gone"); });
  EXPECT_THAT(statuses[0].message(), HasSubstr("the event sink is gone"));
  EXPECT_TRUE(absl::IsAborted(statuses[1])) << statuses[1];
  EXPECT_THAT(std::string(statuses[1].message()), HasSubstr("rank 0 failed its sample"));
}

TEST_F(SampleHeartbeatTest, ASampleThatOutlivesItsLimitFailsTheGang) {
  std::vector<absl::Status> statuses = Run(
      [](const train::StepMetrics&) { return absl::OkStatus(); },
      [](const train::SampleResult&) {
        std::this_thread::sleep_for(kSlow);
        return absl::OkStatus();
      },
      /*limit_s=*/0.3);
  EXPECT_TRUE(absl::IsDeadlineExceeded(statuses[0])) << statuses[0];
  EXPECT_THAT(std::string(statuses[0].message()), HasSubstr("the sample ran for more than"));
  EXPECT_TRUE(absl::IsDeadlineExceeded(statuses[1]) || absl::IsUnavailable(statuses[1]))
      << statuses[1];
}

}  // namespace
}  // namespace accel::testing
