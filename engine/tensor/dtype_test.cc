// dtype conversions against an independent reference written here with double arithmetic:
// decoding by ldexp, and f32 -> 16-bit rounding by scaling to the target's quantum and rounding
// with nearbyint (round half to even), including every tie between adjacent 16-bit values.
#include "engine/tensor/dtype.h"

#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Format {
  const char* name;
  int exp_bits;
  int mant_bits;
  uint16_t (*encode)(float);
  float (*decode)(uint16_t);
  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  uint16_t exp_all_ones() const {
    return static_cast<uint16_t>(((1 << exp_bits) - 1) << mant_bits);
  }
  bool IsNan(uint16_t b) const {
    return (b & exp_all_ones()) == exp_all_ones() && (b & ((1 << mant_bits) - 1)) != 0;
  }
  bool IsQuietNan(uint16_t b) const { return IsNan(b) && (b >> (mant_bits - 1)) & 1; }
};

const Format kBf16{"bf16", 8, 7, static_cast<uint16_t (*)(float)>(FloatToBf16),
                   static_cast<float (*)(uint16_t)>(Bf16ToFloat)};
const Format kF16{"f16", 5, 10, static_cast<uint16_t (*)(float)>(FloatToF16),
                  static_cast<float (*)(uint16_t)>(F16ToFloat)};

// The value of a 16-bit pattern, from the format's definition.
double RefDecode(const Format& f, uint16_t b) {
  const int sign = b >> 15;
  const int e = (b >> f.mant_bits) & ((1 << f.exp_bits) - 1);
  const int m = b & ((1 << f.mant_bits) - 1);
  double v;
  if (e == (1 << f.exp_bits) - 1) {
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - f.bias() - f.mant_bits);
  } else {
    v = std::ldexp(static_cast<double>((1 << f.mant_bits) + m), e - f.bias() - f.mant_bits);
  }
  return sign ? -v : v;
}

// x rounded to the format, to nearest with ties to even; +-inf past the largest finite value.
double RefRound(const Format& f, float x) {
  const double a = std::fabs(static_cast<double>(x));
  if (a == 0 || std::isinf(a)) return x;
  int k;
  std::frexp(a, &k);  // a = m * 2^k, m in [0.5, 1)
  const int emin = 1 - f.bias();
  const int e = std::max(k - 1, emin);
  const double quantum = std::ldexp(1.0, e - f.mant_bits);
  const double r = std::nearbyint(a / quantum) * quantum;  // exact division: quantum is 2^n
  const double max_finite = std::ldexp(2.0 - std::ldexp(1.0, -f.mant_bits), f.bias());
  const double out = r > max_finite ? std::numeric_limits<double>::infinity() : r;
  return std::signbit(x) ? -out : out;
}

::testing::AssertionResult EncodesLikeReference(const Format& f, float x) {
  const uint16_t got = f.encode(x);
  const bool nan = std::isnan(x);
  const double want = nan ? 0 : RefRound(f, x);
  const double have = RefDecode(f, got);
  if (nan ? f.IsQuietNan(got) && (got >> 15) == (Bits(x) >> 31)
          : have == want && std::signbit(have) == std::signbit(want)) {
    return ::testing::AssertionSuccess();
  }
  std::ostringstream msg;  // AssertionResult's << does not keep stream manipulators
  msg << f.name << ": f32 " << std::hexfloat << x << " (0x" << std::hex << Bits(x)
      << ") encoded as 0x" << got << " = " << have << ", reference " << want;
  return ::testing::AssertionFailure() << msg.str();
}

class DTypeFormatTest : public ::testing::TestWithParam<Format> {};
INSTANTIATE_TEST_SUITE_P(Formats, DTypeFormatTest, ::testing::Values(kBf16, kF16),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_P(DTypeFormatTest, DecodesEveryPatternLikeTheReference) {
  const Format& f = GetParam();
  for (uint32_t b = 0; b < 65536; ++b) {
    const double want = RefDecode(f, static_cast<uint16_t>(b));
    const float got = f.decode(static_cast<uint16_t>(b));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << b;
      ASSERT_EQ(std::signbit(got), (b >> 15) != 0) << b;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << f.name << " pattern " << b;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << b;
    }
  }
}

TEST_P(DTypeFormatTest, EveryPatternRoundTripsThroughF32) {
  const Format& f = GetParam();
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const uint16_t back = f.encode(f.decode(bits));
    if (f.IsNan(bits)) {
      ASSERT_TRUE(f.IsQuietNan(back)) << f.name << " NaN " << b << " became " << back;
      ASSERT_EQ(back >> 15, bits >> 15);
      if (f.IsQuietNan(bits)) {
        ASSERT_EQ(back, bits) << "quiet NaN payload lost";
      }
    } else {
      ASSERT_EQ(back, bits) << f.name << " pattern " << b;
    }
  }
}

TEST_P(DTypeFormatTest, RoundsEveryTieAndItsNeighboursToNearestEven) {
  const Format& f = GetParam();
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  const uint16_t inf = f.exp_all_ones();
  for (uint16_t b = 0; b < inf; ++b) {  // every finite non-negative pattern
    const double lo = RefDecode(f, b);
    const double hi = b + 1 == inf ? std::ldexp(1.0, f.bias() + 1) : RefDecode(f, b + 1);
    const auto mid = static_cast<float>((lo + hi) / 2);
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2) << "tie not exact in f32";
    for (float x : {static_cast<float>(lo), mid, std::nextafter(mid, 0.f),
                    std::nextafter(mid, std::numeric_limits<float>::infinity())}) {
      ASSERT_TRUE(EncodesLikeReference(f, x));
      ASSERT_TRUE(EncodesLikeReference(f, -x));
    }
  }
}

TEST_P(DTypeFormatTest, RoundsRandomAndSpecialF32LikeTheReference) {
  const Format& f = GetParam();
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {0.f,
                  -0.f,
                  inf,
                  -inf,
                  std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::denorm_min(),
                  -std::numeric_limits<float>::denorm_min(),
                  65504.f,
                  65519.99f,
                  65520.f,
                  1e9f,
                  0x1p-24f,
                  0x1p-25f,
                  0x1.000002p-25f,
                  0x1.8p-24f,
                  0x1p-126f,
                  0x1.fffffcp-127f,
                  0x1p-133f,
                  0x1p-134f,
                  1.f / 3.f,
                  -2.5f,
                  FromBits(0x7fc00000),
                  FromBits(0xff800001),
                  FromBits(0x7f812345)}) {
    EXPECT_TRUE(EncodesLikeReference(f, x));
  }
  std::mt19937_64 gen(1234);
  for (int i = 0; i < 1'000'000; ++i) {
    ASSERT_TRUE(EncodesLikeReference(f, FromBits(static_cast<uint32_t>(gen()))));
  }
  // Magnitudes near the 16-bit formats' ranges are far more interesting than uniform bits.
  std::uniform_int_distribution<uint32_t> near(0x30000000u, 0x48000000u);
  for (int i = 0; i < 500'000; ++i) {
    const uint32_t u = near(gen) | (static_cast<uint32_t>(gen() & 1) << 31);
    ASSERT_TRUE(EncodesLikeReference(f, FromBits(u)));
  }
}

// Values that exercise every path: normal, subnormal in f32 and in the target, ties, overflow,
// infinities and NaNs with payloads.
std::vector<float> InterestingFloats(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (gen() % 6) {
      case 0:
        v[i] = FromBits(static_cast<uint32_t>(gen()));
        break;
      case 1:
        v[i] = FromBits(static_cast<uint32_t>(gen()) & 0x807fffffu);
        break;  // f32 subnormal
      case 2:
        v[i] = normal(gen) * 1e-5f;
        break;  // f16 subnormal range
      case 3:
        v[i] = FromBits((static_cast<uint32_t>(gen()) & 0xffff0000u) | 0x8000u);
        break;  // bf16 tie
      case 4:
        v[i] = normal(gen) * 70000.f;
        break;  // around f16 overflow
      default:
        v[i] = normal(gen);
        break;
    }
  }
  return v;
}

constexpr uint16_t kCanary16 = 0xabcd;

TEST(DTypeArrayTest, FloatToSixteenBitArraysMatchScalarBitForBit) {
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 40; ++n) sizes.push_back(n);
  sizes.push_back(100'003);
  for (size_t n : sizes) {
    const std::vector<float> src = InterestingFloats(n, 77 + n);
    std::vector<uint16_t> bf(n + 4, kCanary16), hf(n + 4, kCanary16);
    FloatToBf16(src.data(), bf.data(), n);
    FloatToF16(src.data(), hf.data(), n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(bf[i], FloatToBf16(src[i]))
          << "n " << n << " i " << i << " x 0x" << std::hex << Bits(src[i]);
      ASSERT_EQ(hf[i], FloatToF16(src[i]))
          << "n " << n << " i " << i << " x 0x" << std::hex << Bits(src[i]);
    }
    for (size_t i = n; i < n + 4; ++i) {
      ASSERT_EQ(bf[i], kCanary16) << "wrote past the end, n " << n;
      ASSERT_EQ(hf[i], kCanary16) << "wrote past the end, n " << n;
    }
  }
}

TEST(DTypeArrayTest, SixteenBitToFloatArraysMatchScalarBitForBit) {
  std::vector<uint16_t> all(65536);
  for (uint32_t b = 0; b < 65536; ++b) all[b] = static_cast<uint16_t>(b);
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 40; ++n) sizes.push_back(n);
  sizes.push_back(all.size());
  for (size_t n : sizes) {
    const uint16_t* src = all.data() + (n <= 40 ? 0x7bf0 : 0);  // small sizes cross f16 inf/NaN
    std::vector<float> bf(n + 4, 7.f), hf(n + 4, 7.f);
    Bf16ToFloat(src, bf.data(), n);
    F16ToFloat(src, hf.data(), n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(Bits(bf[i]), Bits(Bf16ToFloat(src[i]))) << "n " << n << " pattern " << src[i];
      ASSERT_EQ(Bits(hf[i]), Bits(F16ToFloat(src[i]))) << "n " << n << " pattern " << src[i];
    }
    for (size_t i = n; i < n + 4; ++i) ASSERT_EQ(bf[i], 7.f);
    for (size_t i = n; i < n + 4; ++i) ASSERT_EQ(hf[i], 7.f);
  }
}

// One element of `src` (of type `from`) converted with the scalar functions, as raw bits.
uint32_t ScalarConvert(const void* src, size_t i, DType from, DType to) {
  float f;
  if (from == DType::kF32) {
    f = static_cast<const float*>(src)[i];
  } else {
    const uint16_t b = static_cast<const uint16_t*>(src)[i];
    if (from == to) return b;
    f = from == DType::kBF16 ? Bf16ToFloat(b) : F16ToFloat(b);
  }
  switch (to) {
    case DType::kF32:
      return Bits(f);
    case DType::kBF16:
      return FloatToBf16(f);
    case DType::kF16:
      return FloatToF16(f);
  }
  return 0;
}

TEST(DTypeArrayTest, ConvertDTypeBetweenEveryPair) {
  const DType all[] = {DType::kF32, DType::kBF16, DType::kF16};
  std::mt19937_64 gen(99);
  for (DType from : all) {
    for (DType to : all) {
      for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}, size_t{1024}, size_t{1025},
                       size_t{2500}}) {
        std::vector<float> f32 = InterestingFloats(n, n);
        std::vector<uint16_t> b16(n);
        for (uint16_t& b : b16) b = static_cast<uint16_t>(gen());
        const void* src = from == DType::kF32 ? static_cast<const void*>(f32.data())
                                              : static_cast<const void*>(b16.data());
        std::vector<uint8_t> dst(n * DTypeSize(to) + 8, 0xee);
        ConvertDType(src, from, dst.data(), to, n);
        for (size_t i = 0; i < n; ++i) {
          uint32_t got = 0;
          if (to == DType::kF32) {
            std::memcpy(&got, dst.data() + 4 * i, 4);
          } else {
            uint16_t g;
            std::memcpy(&g, dst.data() + 2 * i, 2);
            got = g;
          }
          ASSERT_EQ(got, ScalarConvert(src, i, from, to))
              << DTypeName(from) << " -> " << DTypeName(to) << " n " << n << " i " << i;
        }
        for (size_t i = n * DTypeSize(to); i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xee);
      }
    }
  }
}

TEST(DTypeTest, NamesSizesAndParsing) {
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16}) {
    EXPECT_EQ(*ParseDType(DTypeName(d)), d);
    EXPECT_EQ(*ParseDType(SafetensorsDTypeName(d)), d);
  }
  EXPECT_EQ(DTypeSize(DType::kF32), 4u);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2u);
  EXPECT_EQ(DTypeSize(DType::kF16), 2u);
  EXPECT_EQ(DTypeName(DType::kBF16), "bf16");
  EXPECT_EQ(SafetensorsDTypeName(DType::kF16), "F16");
  EXPECT_EQ(*ParseDType("bfloat16"), DType::kBF16);
  EXPECT_EQ(*ParseDType("fp16"), DType::kF16);
  EXPECT_EQ(*ParseDType("float32"), DType::kF32);
  for (const char* bad : {"f64", "", "BF16 ", "int8", "Bf16"}) {
    absl::StatusOr<DType> d = ParseDType(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(d.status())) << bad;
    EXPECT_THAT(std::string(d.status().message()),
                ::testing::HasSubstr("'" + std::string(bad) + "'"));
  }
}

}  // namespace
}  // namespace accel
