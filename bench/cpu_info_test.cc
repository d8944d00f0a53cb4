#include "bench/cpu_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace accel::bench {
namespace {

using ::testing::ElementsAre;

// Two processors of an AVX2-only EPYC guest, trimmed; the second block repeats the keys.
constexpr const char* kEpyc =
    "processor\t: 0\n"
    "vendor_id\t: AuthenticAMD\n"
    "model name\t: AMD EPYC\n"
    "flags\t\t: fpu sse2 fma cx16 avx f16c avx2 smep bmi2\n"
    "bugs\t\t: sysret_ss_attrs\n"
    "\n"
    "processor\t: 1\n"
    "model name\t: AMD EPYC other\n"
    "flags\t\t: fpu\n";

TEST(CpuInfoTest, ParsesModelFlagsAndCount) {
  const CpuInfo info = ParseCpuInfo(kEpyc);
  EXPECT_EQ(info.model_name, "AMD EPYC");
  EXPECT_EQ(info.logical_cpus, 2);
  EXPECT_THAT(info.flags, ElementsAre("fpu", "sse2", "fma", "cx16", "avx", "f16c", "avx2", "smep",
                                      "bmi2"));
  EXPECT_TRUE(info.Has("avx2"));
  EXPECT_FALSE(info.Has("avx512f"));
}

TEST(CpuInfoTest, KeyFlagsLineListsPresentThenMissing) {
  const CpuInfo info = ParseCpuInfo(kEpyc);
  EXPECT_THAT(PresentKeyFlags(info), ElementsAre("avx2", "fma", "f16c"));
  EXPECT_EQ(KeyFlagsLine(info),
            "avx2 fma f16c; no: avx_vnni avx512f avx512bw avx512vl avx512_vnni avx512_bf16 "
            "avx512_fp16 amx_tile amx_bf16");
}

TEST(CpuInfoTest, SapphireRapidsHasBf16AndAmx) {
  const CpuInfo info = ParseCpuInfo(
      "processor : 0\nmodel name : Intel(R) Xeon(R) Platinum 8480+\n"
      "flags : avx2 fma f16c avx512f avx512bw avx512vl avx512_vnni avx512_bf16 avx_vnni "
      "avx512_fp16 amx_bf16 amx_tile amx_int8\n");
  EXPECT_EQ(info.model_name, "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(KeyFlagsLine(info),
            "avx2 fma f16c avx_vnni avx512f avx512bw avx512vl avx512_vnni avx512_bf16 avx512_fp16 "
            "amx_tile amx_bf16");
}

TEST(CpuInfoTest, TextWithoutKeysGivesEmptyFields) {
  const CpuInfo info = ParseCpuInfo("Processor\t: ARMv7\nno colon here\n");
  EXPECT_EQ(info.model_name, "");
  EXPECT_TRUE(info.flags.empty());
  EXPECT_EQ(info.logical_cpus, 0);
  EXPECT_EQ(KeyFlagsLine(info),
            "no: avx2 fma f16c avx_vnni avx512f avx512bw avx512vl avx512_vnni avx512_bf16 "
            "avx512_fp16 amx_tile amx_bf16");
}

}  // namespace
}  // namespace accel::bench
