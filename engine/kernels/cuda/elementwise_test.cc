// GELU and the residual add against kernels::ref; backward accumulates into nonzero gradients.
#include <cstdint>
#include <vector>

#include "engine/kernels/cuda/kernels.h"
#include "engine/kernels/cuda/test_util.h"
#include "engine/kernels/elementwise.h"
#include "engine/testing/matchers.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::kernels::cuda {
namespace {

using ::accel::cuda::testing::DeviceArray;
using ::accel::cuda::testing::DeviceOk;
using ::accel::testing::AllClose;
using ::accel::testing::TestRng;

TEST(CudaElementwiseTest, GeluMatchesRef) {
  ACCEL_SKIP_WITHOUT_GPU();
  for (int64_t n : {1, 255, 100001}) {
    SCOPED_TRACE(n);
    TestRng rng(n);
    const std::vector<float> x = rng.NormalVector(n, 0.0f, 3.0f), dout = rng.NormalVector(n);
    std::vector<float> out(n), dinp = rng.NormalVector(n);
    ref::GeluForward(out.data(), x.data(), n);
    DeviceArray<float> d_x(x), d_out(n), d_dout(dout), d_dinp(dinp);
    ASSERT_TRUE(GeluForward(d_out.get(), d_x.get(), n, nullptr).ok());
    ASSERT_TRUE(GeluBackward(d_dinp.get(), d_x.get(), d_dout.get(), n, nullptr).ok());
    ref::GeluBackward(dinp.data(), x.data(), dout.data(), n);
    ASSERT_TRUE(DeviceOk());
    EXPECT_TRUE(AllClose(d_out.Download(), out, 1e-6, 1e-5));
    EXPECT_TRUE(AllClose(d_dinp.Download(), dinp, 1e-6, 1e-5));
  }
}

TEST(CudaElementwiseTest, ResidualMatchesRefExactly) {
  ACCEL_SKIP_WITHOUT_GPU();
  const int64_t n = 70001;
  TestRng rng(3);
  const std::vector<float> a = rng.NormalVector(n), b = rng.NormalVector(n), d = rng.NormalVector(n);
  std::vector<float> out(n), da = rng.NormalVector(n), db = rng.NormalVector(n);
  DeviceArray<float> d_a(a), d_b(b), d_d(d), d_out(n), d_da(da), d_db(db);
  ASSERT_TRUE(ResidualForward(d_out.get(), d_a.get(), d_b.get(), n, nullptr).ok());
  ASSERT_TRUE(ResidualBackward(d_da.get(), d_db.get(), d_d.get(), n, nullptr).ok());
  ref::ResidualForward(out.data(), a.data(), b.data(), n);
  ref::ResidualBackward(da.data(), db.data(), d.data(), n);
  ASSERT_TRUE(DeviceOk());
  EXPECT_EQ(d_out.Download(), out);
  EXPECT_EQ(d_da.Download(), da);
  EXPECT_EQ(d_db.Download(), db);
  // In place (out aliases a), as the header allows.
  ASSERT_TRUE(ResidualForward(d_a.get(), d_a.get(), d_b.get(), n, nullptr).ok());
  EXPECT_EQ(d_a.Download(), out);
  EXPECT_EQ(GeluForward(nullptr, nullptr, -5, nullptr).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace accel::kernels::cuda
