#include "engine/comm/reduce.h"

#include <cstdint>
#include <vector>

#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::comm {
namespace {

TEST(SumIntoTest, F32IsPlainAddition) {
  std::vector<float> a = {1.5f, -2.f, 1e30f, 0.1f};
  std::vector<float> b = {2.25f, 2.f, -1e30f, 0.2f};
  std::vector<float> out(4);
  SumInto(DType::kF32, a.data(), b.data(), out.data(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], a[i] + b[i]) << i;
}

// The array path (blocks of 512, vectorised conversions) must agree bit for bit with one
// widening, one f32 add and one rounding per element, including across block boundaries.
void CheckSixteenBit(DType dtype, uint16_t (*from_float)(float), float (*to_float)(uint16_t)) {
  testing::TestRng rng(7);
  const size_t n = 1500;
  std::vector<uint16_t> a(n), b(n), out(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = from_float(rng.Uniform(-4.f, 4.f));
    b[i] = from_float(rng.Uniform(-4.f, 4.f));
  }
  SumInto(dtype, a.data(), b.data(), out.data(), n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[i], from_float(to_float(a[i]) + to_float(b[i]))) << i;
  }
  // Exact aliasing: out == a.
  std::vector<uint16_t> acc = a;
  SumInto(dtype, acc.data(), b.data(), acc.data(), n);
  EXPECT_EQ(acc, out);
}

TEST(SumIntoTest, Bf16RoundsOncePerAdd) {
  CheckSixteenBit(DType::kBF16, static_cast<uint16_t (*)(float)>(&FloatToBf16),
                  static_cast<float (*)(uint16_t)>(&Bf16ToFloat));
}

TEST(SumIntoTest, F16RoundsOncePerAdd) {
  CheckSixteenBit(DType::kF16, static_cast<uint16_t (*)(float)>(&FloatToF16),
                  static_cast<float (*)(uint16_t)>(&F16ToFloat));
}

TEST(SumIntoTest, Bf16KeepsTheF32SumBeforeRounding) {
  // Near 256 bf16 steps by 2: the exact f32 sum 257 is a tie and rounds to even (256), while
  // 257.5 rounds up to 258.
  uint16_t a[2] = {FloatToBf16(256.f), FloatToBf16(256.f)};
  uint16_t b[2] = {FloatToBf16(1.f), FloatToBf16(1.5f)};
  uint16_t out[2];
  SumInto(DType::kBF16, a, b, out, 2);
  EXPECT_EQ(Bf16ToFloat(out[0]), 256.f);
  EXPECT_EQ(Bf16ToFloat(out[1]), 258.f);
}

}  // namespace
}  // namespace accel::comm
