// MoveValues: the same bits as ConvertDType whichever side each end is on, through host ops
// that are host memory and through host ops that say they are a device (the staged paths).
#include "engine/shard/value_transfer.h"

#include <vector>

#include "gtest/gtest.h"

namespace accel::shard {
namespace {

std::vector<float> Ramp(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = 1.0f + 0.001953125f * i + 0.0001f * i * i;
  return v;
}

std::vector<uint16_t> ToBf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  ConvertDType(v.data(), DType::kF32, out.data(), DType::kBF16, v.size());
  return out;
}

TEST(MoveValuesTest, EveryPathRoundsAsConvertDType) {
  const std::vector<float> values = Ramp(37);
  const std::vector<uint16_t> expected = ToBf16(values);
  for (bool as_device : {false, true}) {
    MemoryLedger ledger;
    std::unique_ptr<DeviceOps> ops = CreateHostDeviceOps(&ledger, MemoryPool::kDevice, as_device);
    auto block = ops->Allocate(values.size() * 2, MemoryCategory::kParams);
    ASSERT_TRUE(block.ok());
    // host fp32 -> compute bf16 (up, converted on the compute side)
    ASSERT_TRUE(MoveValues(*ops, {values.data(), DType::kF32, true},
                           {block->data(), DType::kBF16, false}, 37, MemoryCategory::kOther)
                    .ok());
    EXPECT_EQ(std::vector<uint16_t>(block->as<uint16_t>(), block->as<uint16_t>() + 37), expected);
    // compute bf16 -> host fp32 (converted, then down) is exact
    std::vector<float> back(37);
    ASSERT_TRUE(MoveValues(*ops, {block->data(), DType::kBF16, false},
                           {back.data(), DType::kF32, true}, 37, MemoryCategory::kOther)
                    .ok());
    std::vector<uint16_t> again = ToBf16(back);
    EXPECT_EQ(again, expected) << as_device;
    // host -> host, same dtype: a copy
    std::vector<float> copy(37);
    ASSERT_TRUE(MoveValues(*ops, {values.data(), DType::kF32, true},
                           {copy.data(), DType::kF32, true}, 37, MemoryCategory::kOther)
                    .ok());
    EXPECT_EQ(copy, values);
    EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kParams).current, 74);
  }
}

TEST(MoveValuesTest, NothingToMoveTouchesNothing) {
  MemoryLedger ledger;
  std::unique_ptr<DeviceOps> ops = CreateHostDeviceOps(&ledger, MemoryPool::kDevice, true);
  EXPECT_TRUE(MoveValues(*ops, {nullptr, DType::kF32, true}, {nullptr, DType::kBF16, false}, 0,
                         MemoryCategory::kOther)
                  .ok());
  EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kOther).peak, 0);
}

TEST(MoveValuesTest, AcrossADeviceBoundaryStagesOnlyWhenTheDtypeChanges) {
  MemoryLedger ledger;
  std::unique_ptr<DeviceOps> ops = CreateHostDeviceOps(&ledger, MemoryPool::kDevice, true);
  auto block = ops->Allocate(16 * sizeof(float), MemoryCategory::kParams);
  ASSERT_TRUE(block.ok());
  const std::vector<float> values = Ramp(16);
  ASSERT_TRUE(MoveValues(*ops, {values.data(), DType::kF32, true},
                         {block->data(), DType::kF32, false}, 16, MemoryCategory::kGrads)
                  .ok());
  EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kGrads).peak, 0);
  std::vector<uint16_t> out(16);
  ASSERT_TRUE(MoveValues(*ops, {block->data(), DType::kF32, false},
                         {out.data(), DType::kBF16, true}, 16, MemoryCategory::kGrads)
                  .ok());
  EXPECT_EQ(out, ToBf16(values));
  EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kGrads).peak, 16 * 2);
}

}  // namespace
}  // namespace accel::shard
