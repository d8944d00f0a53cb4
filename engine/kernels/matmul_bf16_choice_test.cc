// The bf16-or-fp32 matmul decision's rules (cpu/matmul_bf16_choice.h), with a fake measurement
// and an in-memory cache, and the real measurement once on this CPU.
#include "engine/kernels/cpu/matmul_bf16_choice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/testing/mem_env.h"

namespace accel::kernels::internal {
namespace {

using ::testing::HasSubstr;
using accel::testing::MemEnv;

struct Fixture {
  MemEnv env;
  int measured = 0;
  double speedup = 1.8;

  Bf16ChoiceInputs Inputs() {
    Bf16ChoiceInputs in;
    in.bf16_isa = true;
    in.isa_name = "avx512_core_bf16";
    in.host_key = "AMD EPYC|flags 1|onednn 2.6.3|threads 2";
    in.cache_dir = "/cache/accel/cpu";
    in.env = &env;
    in.measure = [this]() -> absl::StatusOr<double> {
      ++measured;
      return speedup;
    };
    return in;
  }
};

TEST(Bf16MatmulChoiceTest, OverrideWinsWithoutMeasuring) {
  Fixture f;
  Bf16ChoiceInputs in = f.Inputs();
  in.override_value = "1";
  in.bf16_isa = false;
  Bf16MatmulChoice forced = ChooseBf16Matmul(in);
  EXPECT_TRUE(forced.native);
  EXPECT_THAT(forced.reason, HasSubstr("ACCEL_BF16_MATMUL=1"));
  in.override_value = "0";
  in.bf16_isa = true;
  Bf16MatmulChoice off = ChooseBf16Matmul(in);
  EXPECT_FALSE(off.native);
  EXPECT_THAT(off.reason, HasSubstr("fp32 copies (forced: ACCEL_BF16_MATMUL=0)"));
  EXPECT_EQ(f.measured, 0);
}

TEST(Bf16MatmulChoiceTest, NoBf16DotProductsMeansFp32WithoutMeasuring) {
  Fixture f;
  Bf16ChoiceInputs in = f.Inputs();
  in.bf16_isa = false;
  in.isa_name = "avx2";
  Bf16MatmulChoice c = ChooseBf16Matmul(in);
  EXPECT_FALSE(c.native);
  EXPECT_THAT(c.reason, HasSubstr("avx2: no bf16 dot products"));
  EXPECT_EQ(f.measured, 0);
}

TEST(Bf16MatmulChoiceTest, MeasuresOnceThenReadsTheHostsCache) {
  Fixture f;
  Bf16MatmulChoice first = ChooseBf16Matmul(f.Inputs());
  EXPECT_TRUE(first.native);
  EXPECT_DOUBLE_EQ(first.measured_speedup, 1.8);
  EXPECT_EQ(first.reason, "bf16 (oneDNN avx512_core_bf16: 1.80x the fp32 GEMM here, measured)");
  f.speedup = 0.5;  // a second measurement would now choose fp32: the cache must answer
  Bf16MatmulChoice second = ChooseBf16Matmul(f.Inputs());
  EXPECT_EQ(f.measured, 1);
  EXPECT_TRUE(second.native);
  EXPECT_THAT(second.reason, HasSubstr("1.80x the fp32 GEMM here, cached"));
}

TEST(Bf16MatmulChoiceTest, ASlowBf16KernelKeepsFp32) {
  Fixture f;
  f.speedup = 0.62;  // the AVX512_BF16 Xeon of issue 33: oneDNN's bf16 GEMM slower than fp32
  Bf16MatmulChoice c = ChooseBf16Matmul(f.Inputs());
  EXPECT_FALSE(c.native);
  EXPECT_EQ(c.reason,
            "fp32 copies (oneDNN avx512_core_bf16: 0.62x the fp32 GEMM here, measured; below "
            "1.10x)");
  Fixture g;
  g.speedup = kMinSpeedup;
  EXPECT_TRUE(ChooseBf16Matmul(g.Inputs()).native) << "the threshold itself is fast enough";
}

TEST(Bf16MatmulChoiceTest, AnotherHostsOrADamagedEntryIsMeasuredAgain) {
  Fixture f;
  ASSERT_TRUE(ChooseBf16Matmul(f.Inputs()).native);
  Bf16ChoiceInputs other = f.Inputs();
  other.host_key = "AMD EPYC|flags 1|onednn 2.6.3|threads 1";  // another thread count
  f.speedup = 0.9;
  EXPECT_FALSE(ChooseBf16Matmul(other).native);
  EXPECT_EQ(f.measured, 2);
  // Overwrite every entry with garbage: each read is a miss and measures again.
  absl::StatusOr<std::vector<std::string>> files = f.env.ListDir("/cache/accel/cpu");
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 2u);
  for (const std::string& name : *files) {
    ASSERT_TRUE(WriteFileAtomic(&f.env, "/cache/accel/cpu/" + name, "garbage").ok());
  }
  f.speedup = 2.0;
  EXPECT_TRUE(ChooseBf16Matmul(f.Inputs()).native);
  EXPECT_EQ(f.measured, 3);
}

TEST(Bf16MatmulChoiceTest, AFailedMeasurementOrNoCacheStillDecides) {
  Fixture f;
  Bf16ChoiceInputs in = f.Inputs();
  in.measure = []() -> absl::StatusOr<double> { return absl::InternalError("timer broke"); };
  Bf16MatmulChoice failed = ChooseBf16Matmul(in);
  EXPECT_FALSE(failed.native);
  EXPECT_THAT(failed.reason, HasSubstr("could not be timed: timer broke"));
  Bf16ChoiceInputs uncached = f.Inputs();
  uncached.cache_dir = "";
  EXPECT_TRUE(ChooseBf16Matmul(uncached).native);
  EXPECT_TRUE(ChooseBf16Matmul(uncached).native);
  EXPECT_EQ(f.measured, 2);
}

// The real timing on this CPU: both GEMMs run and the ratio is a finite positive number. On a
// CPU without bf16 dot products oneDNN widens to fp32, which still times.
TEST(Bf16MatmulChoiceTest, MeasuresBothGemmsOnThisCpu) {
  absl::StatusOr<double> speedup = MeasureBf16OverFp32();
  ASSERT_TRUE(speedup.ok()) << speedup.status();
  EXPECT_GT(*speedup, 0.01);
  EXPECT_LT(*speedup, 100.0);
}

}  // namespace
}  // namespace accel::kernels::internal
