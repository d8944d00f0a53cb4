#include "engine/checkpoint/inspect.h"

#include <string>

#include "engine/checkpoint/checkpoint_test_util.h"
#include "engine/testing/mem_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel::checkpoint {
namespace {

using namespace ::accel::checkpoint::testing;  // NOLINT: the helpers of this test family
using ::testing::HasSubstr;

class InspectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(SaveAll(&env_, "/ckpt", layout_, State(layout_.num_params(), 1), 10, 2).ok());
    ASSERT_TRUE(SaveAll(&env_, "/ckpt", layout_, State(layout_.num_params(), 2), 20, 4).ok());
    ASSERT_TRUE(WriteRankFile(&env_, "/ckpt", 30, 0, {}).ok());  // a save that never committed
  }
  accel::testing::MemEnv env_;
  model::ModelLayout layout_ = SmallLayout();
};

TEST_F(InspectTest, ListsStepsAndVerifiesChecksums) {
  auto report = InspectCheckpoints(&env_, "/ckpt", /*verify=*/true);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok());
  EXPECT_EQ(report->latest, "step_20");
  ASSERT_EQ(report->steps.size(), 3u);
  const StepReport& s10 = report->steps[0];
  EXPECT_EQ(s10.name, "step_10");
  EXPECT_TRUE(s10.complete);
  EXPECT_FALSE(s10.latest);
  EXPECT_EQ(s10.world_size, 2);
  EXPECT_EQ(s10.strategy, "full_shard");
  EXPECT_EQ(s10.num_params, layout_.num_params());
  EXPECT_TRUE(s10.verified);
  EXPECT_EQ(s10.files.size(), 3u);
  EXPECT_GT(s10.bytes, 12u * layout_.num_params());
  EXPECT_TRUE(report->steps[1].latest);
  EXPECT_EQ(report->steps[1].world_size, 4);
  EXPECT_EQ(report->steps[2].name, "step_30.tmp");
  EXPECT_FALSE(report->steps[2].complete);

  const std::string text = InspectReportToText(*report);
  EXPECT_THAT(text, HasSubstr("latest: step_20"));
  EXPECT_THAT(text, HasSubstr("ok, checksums verified"));
  EXPECT_THAT(text, HasSubstr("uncommitted"));

  const auto json = nlohmann::json::parse(InspectReportToJson(*report));
  EXPECT_EQ(json["latest"], "step_20");
  EXPECT_EQ(json["ok"], true);
  EXPECT_EQ(json["steps"][1]["world_size"], 4);
  EXPECT_EQ(json["steps"][1]["verified"], true);
  EXPECT_EQ(json["steps"][1]["files"].size(), 5u);
}

TEST_F(InspectTest, ReportsACorruptBlockOnlyWhenVerifying) {
  const std::string path = "/ckpt/step_10/rank_1.bin";
  std::string bytes = *ReadFileToString(&env_, path);
  bytes[bytes.size() - 100] ^= 0x40;  // inside the data, away from the table and footer
  ASSERT_TRUE(OverwriteFile(&env_, path, bytes).ok());

  auto quick = InspectCheckpoints(&env_, "/ckpt", /*verify=*/false);
  ASSERT_TRUE(quick.ok());
  EXPECT_TRUE(quick->ok());
  EXPECT_FALSE(quick->steps[0].verified);

  auto report = InspectCheckpoints(&env_, "/ckpt", /*verify=*/true);
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->ok());
  EXPECT_EQ(report->steps[0].status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(report->steps[0].status.message(), HasSubstr(path));
  EXPECT_THAT(report->steps[0].status.message(), HasSubstr("offset"));
  EXPECT_TRUE(report->steps[1].verified);
  const auto json = nlohmann::json::parse(InspectReportToJson(*report));
  EXPECT_EQ(json["ok"], false);
  EXPECT_EQ(json["steps"][0]["error_code"], "DATA_LOSS");
}

TEST_F(InspectTest, AcceptsAStepDirectoryAndRejectsAMissingOne) {
  auto report = InspectCheckpoints(&env_, "/ckpt/step_20", /*verify=*/true);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->steps.size(), 1u);
  EXPECT_EQ(report->steps[0].step, 20);
  EXPECT_TRUE(report->steps[0].verified);
  EXPECT_TRUE(report->ok());
  EXPECT_EQ(InspectCheckpoints(&env_, "/nothing", true).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(InspectTest, ABrokenLatestPointerIsReported) {
  ASSERT_TRUE(OverwriteFile(&env_, "/ckpt/latest", "step_99\n").ok());
  auto report = InspectCheckpoints(&env_, "/ckpt", /*verify=*/false);
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->ok());
  EXPECT_THAT(InspectReportToText(*report), HasSubstr("latest: BROKEN"));
}

}  // namespace
}  // namespace accel::checkpoint
