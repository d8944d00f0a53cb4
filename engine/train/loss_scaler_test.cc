#include "engine/train/loss_scaler.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::train {
namespace {

TEST(LossScalerTest, DisabledSkipsOnlyNonFinite) {
  LossScaler s;
  EXPECT_FALSE(s.enabled());
  EXPECT_EQ(s.scale(), 1.0);
  EXPECT_FALSE(s.Update(true));
  EXPECT_TRUE(s.Update(false));
  EXPECT_EQ(s.scale(), 1.0);
}

TEST(LossScalerTest, HysteresisThenHalvingThenGrowth) {
  LossScaler s({/*initial_scale_power=*/4, /*window=*/3, /*hysteresis=*/2, /*min_scale=*/2});
  EXPECT_EQ(s.scale(), 16.0);
  EXPECT_TRUE(s.Update(false));  // absorbed by hysteresis
  EXPECT_EQ(s.scale(), 16.0);
  EXPECT_TRUE(s.Update(false));  // second overflow halves
  EXPECT_EQ(s.scale(), 8.0);
  EXPECT_TRUE(s.Update(false));  // every further overflow halves
  EXPECT_EQ(s.scale(), 4.0);
  EXPECT_TRUE(s.Update(false));
  EXPECT_TRUE(s.Update(false));
  EXPECT_EQ(s.scale(), 2.0);  // floored at min_scale
  EXPECT_EQ(s.overflows(), 5);
  EXPECT_FALSE(s.Update(true));
  EXPECT_FALSE(s.Update(true));
  EXPECT_EQ(s.scale(), 2.0);
  EXPECT_FALSE(s.Update(true));  // third clean step in a row doubles
  EXPECT_EQ(s.scale(), 4.0);
  // The hysteresis budget is back after growth: one overflow is absorbed again.
  EXPECT_TRUE(s.Update(false));
  EXPECT_EQ(s.scale(), 4.0);
}

TEST(LossScalerTest, OverflowResetsTheCleanWindow) {
  LossScaler s({2, 2, 1, 1});
  EXPECT_FALSE(s.Update(true));
  EXPECT_TRUE(s.Update(false));  // hysteresis 1: halves at once, window restarts
  EXPECT_EQ(s.scale(), 2.0);
  EXPECT_FALSE(s.Update(true));
  EXPECT_EQ(s.scale(), 2.0);
  EXPECT_FALSE(s.Update(true));
  EXPECT_EQ(s.scale(), 4.0);
}

TEST(LossScalerTest, JsonRoundTripAndDataLoss) {
  LossScaler a({5, 10, 2, 1});
  a.Update(false);
  a.Update(false);
  a.Update(true);
  LossScaler b({5, 10, 2, 1});
  ASSERT_TRUE(b.FromJson(a.ToJson()).ok());
  EXPECT_EQ(b.scale(), a.scale());
  EXPECT_EQ(b.overflows(), a.overflows());
  EXPECT_EQ(b.ToJson(), a.ToJson());
  EXPECT_EQ(b.FromJson("[1]").code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(b.FromJson(R"({"scale":1})").message()),
              ::testing::HasSubstr("good_steps"));
  EXPECT_EQ(b.FromJson(R"({"scale":0,"good_steps":0,"hysteresis_left":1,"overflows":0})").code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace accel::train
