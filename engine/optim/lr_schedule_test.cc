#include "engine/optim/lr_schedule.h"

#include <cmath>
#include <utility>

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

// Expected values are what DeepSpeed's own schedulers (deepspeed/runtime/lr_schedules.py, run
// with a stub optimizer whose lr is 2.0) set before each optimizer step, stepping the scheduler
// after each step as DeepSpeed's engine does.
LrSchedule DeepSpeed(DeepSpeedLr::Type type, int64_t warmup, bool log, int64_t total = 1) {
  LrSchedule s;
  s.base_lr = 2.0f;
  DeepSpeedLr d;
  d.type = type;
  d.log_warmup = log;
  d.warmup_steps = warmup;
  d.total_steps = total;
  d.min_lr = 0.1;
  d.max_lr = 1.0;
  s.deepspeed = d;
  return s;
}

TEST(DeepSpeedLrTest, WarmupLRLogStartsAtMinAndReachesMaxAtTheWarmupStep) {
  LrSchedule s = DeepSpeed(DeepSpeedLr::Type::kWarmupLR, 10, /*log=*/true);
  const double want[] = {0.1, 0.1, 0.37092699609758306, 0.5294091292476961, 0.641853992195166,
                         0.7290730039024168, 0.8003361253452792, 0.8605882360128311,
                         0.912780988292749, 0.9588182584953923, 1.0, 1.0, 1.0};
  for (int k = 0; k < 13; ++k) EXPECT_NEAR(s.LrAt(k), want[k], 1e-6) << "step " << k;
}

TEST(DeepSpeedLrTest, WarmupLRLinear) {
  LrSchedule s = DeepSpeed(DeepSpeedLr::Type::kWarmupLR, 4, /*log=*/false);
  const double want[] = {0.1, 0.1, 0.325, 0.55, 0.775, 1.0};
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(s.LrAt(k), want[k], 1e-6) << "step " << k;
  // DeepSpeed warms up over at least 2 iterations.
  LrSchedule one = DeepSpeed(DeepSpeedLr::Type::kWarmupLR, 1, false);
  EXPECT_NEAR(one.LrAt(2), 0.1 + 0.9 * 0.5, 1e-6);
}

TEST(DeepSpeedLrTest, WarmupDecayLRDecaysLinearlyToMinAtTotal) {
  LrSchedule s = DeepSpeed(DeepSpeedLr::Type::kWarmupDecayLR, 10, true, 100);
  s.deepspeed->min_lr = 0.0;
  const std::pair<int, double> want[] = {{0, 0.0},  {1, 0.0},   {10, 1.0},
                                         {11, 1.0}, {56, 0.5},  {100, 0.011111111111111112},
                                         {101, 0.0}, {149, 0.0}};
  for (auto [k, lr] : want) EXPECT_NEAR(s.LrAt(k), lr, 1e-6) << "step " << k;
}

TEST(DeepSpeedLrTest, WarmupCosineLRScalesTheOptimizerLr) {
  LrSchedule s = DeepSpeed(DeepSpeedLr::Type::kWarmupCosineLR, 10, true, 110);
  s.deepspeed->warmup_min_ratio = 0.1;
  const std::pair<int, double> want[] = {
      {0, 0.0},      {1, 0.2},     {2, 0.7418539921951661}, {10, 2.0},
      {11, 1.999506609709695}, {60, 1.0001}, {110, 0.0002}, {111, 0.0006933902903049731},
      {114, 0.008084510155653573}};
  for (auto [k, lr] : want) EXPECT_NEAR(s.LrAt(k), lr, 2e-6) << "step " << k;
}

}  // namespace
}  // namespace accel::optim
