#include "engine/optim/clip.h"

#include "gtest/gtest.h"

namespace accel::optim {
namespace {

TEST(ClipTest, ScalesOnlyAboveTheThreshold) {
  EXPECT_EQ(ClipScale(0.5, 1.0f), 1.0f);
  EXPECT_FLOAT_EQ(ClipScale(4.0, 1.0f), 1.0f / (4.0f + 1e-6f));
  EXPECT_FLOAT_EQ(ClipScale(2.0, 0.5f), 0.5f / (2.0f + 1e-6f));
}

TEST(ClipTest, ZeroTurnsClippingOff) {
  EXPECT_EQ(ClipScale(1e9, 0.0f), 1.0f);
  EXPECT_EQ(ClipScale(1e9, -1.0f), 1.0f);
}

}  // namespace
}  // namespace accel::optim
