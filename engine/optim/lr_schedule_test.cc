#include "engine/optim/lr_schedule.h"

#include <cmath>

#include "gtest/gtest.h"

namespace accel::optim {
namespace {

TEST(LrScheduleTest, WarmupIsLinearFromOneStep) {
  LrSchedule s{ScheduleKind::kCosine, 1.0f, 0.0f, 4, 100};
  EXPECT_FLOAT_EQ(s.LrAt(0), 0.25f);
  EXPECT_FLOAT_EQ(s.LrAt(3), 1.0f);
  EXPECT_FLOAT_EQ(s.LrAt(4), 1.0f);  // first post-warmup step: progress 0
}

TEST(LrScheduleTest, ConstantStaysPut) {
  LrSchedule s{ScheduleKind::kConstant, 0.5f, 0.0f, 0, 10};
  for (int i = 0; i < 20; ++i) EXPECT_FLOAT_EQ(s.LrAt(i), 0.5f);
}

TEST(LrScheduleTest, LinearAndCosineReachMinAtTheEnd) {
  LrSchedule lin{ScheduleKind::kLinear, 1.0f, 0.1f, 10, 110};
  EXPECT_NEAR(lin.LrAt(60), 0.55f, 1e-6);
  EXPECT_NEAR(lin.LrAt(110), 0.1f, 1e-6);
  EXPECT_NEAR(lin.LrAt(500), 0.1f, 1e-6);  // clamped past the end
  LrSchedule cos{ScheduleKind::kCosine, 1.0f, 0.1f, 10, 110};
  EXPECT_NEAR(cos.LrAt(60), 0.55f, 1e-6);  // halfway: cos(pi/2) = 0
  EXPECT_NEAR(cos.LrAt(35), 0.1f + 0.9f * 0.5f * (1 + std::cos(M_PI * 0.25)), 1e-6);
  EXPECT_NEAR(cos.LrAt(110), 0.1f, 1e-6);
}

TEST(LrScheduleTest, ParsesNames) {
  EXPECT_EQ(*ParseScheduleKind("cosine"), ScheduleKind::kCosine);
  EXPECT_EQ(*ParseScheduleKind("linear"), ScheduleKind::kLinear);
  EXPECT_EQ(ScheduleKindName(*ParseScheduleKind("constant")), "constant");
  auto bad = ParseScheduleKind("step");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("'step'"), std::string::npos);
}

}  // namespace
}  // namespace accel::optim
