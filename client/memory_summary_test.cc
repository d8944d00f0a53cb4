// The memory summary of accelctl watch: each pool's peak over the ranks, from the ledger JSON
// (old records name the compute pool "device") or the proto fields.
#include "client/memory_summary.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::client {
namespace {

constexpr int kCompute = static_cast<int>(MemoryPool::kDevice);
constexpr int kHost = static_cast<int>(MemoryPool::kHost);
constexpr int kNvme = static_cast<int>(MemoryPool::kNvme);

v1::MemoryEvent FromLedger(const MemoryLedger& ledger) {
  v1::MemoryEvent m;
  m.set_ledger_json(ledger.ToJson());
  return m;
}

TEST(MemorySummaryTest, PoolPeaksReadTheLedgerJsonWithEveryPool) {
  MemoryLedger ledger;
  ledger.Charge(MemoryPool::kDevice, MemoryCategory::kParams, 5 << 20);
  ledger.Release(MemoryPool::kDevice, MemoryCategory::kParams, 4 << 20);
  ledger.Charge(MemoryPool::kHost, MemoryCategory::kOther, 3 << 10);
  ledger.Charge(MemoryPool::kNvme, MemoryCategory::kOptimizerState, int64_t{7} << 30);
  const auto peaks = PoolPeaks(FromLedger(ledger));
  EXPECT_EQ(peaks[kCompute], 5 << 20);  // the peak, not what is held now
  EXPECT_EQ(peaks[kHost], 3 << 10);
  EXPECT_EQ(peaks[kNvme], int64_t{7} << 30);
}

TEST(MemorySummaryTest, PoolPeaksReadTheOldDeviceKeyAsCompute) {
  v1::MemoryEvent m;
  m.set_ledger_json(
      R"({"device":{"params":{"current":1,"peak":1},"total":{"current":10,"peak":40}},)"
      R"("host":{"total":{"current":0,"peak":8}},"nvme":{"total":{"current":0,"peak":0}}})");
  m.set_device_peak(1);  // the ledger wins over the proto fields when it parses
  const auto peaks = PoolPeaks(m);
  EXPECT_EQ(peaks[kCompute], 40);
  EXPECT_EQ(peaks[kHost], 8);
  EXPECT_EQ(peaks[kNvme], 0);
}

TEST(MemorySummaryTest, PoolPeaksFallBackToTheProtoFields) {
  v1::MemoryEvent m;
  m.set_device_peak(100);
  m.set_host_peak(20);
  EXPECT_EQ(PoolPeaks(m)[kCompute], 100);
  m.set_ledger_json("{not json");
  EXPECT_EQ(PoolPeaks(m)[kCompute], 100);
  EXPECT_EQ(PoolPeaks(m)[kHost], 20);
}

TEST(MemorySummaryTest, TextIsThePeakOfEachPoolOverTheRanks) {
  MemorySummary s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.Text(), "");
  v1::MemoryEvent a;
  a.set_device_peak(int64_t{22} << 20);
  a.set_host_peak(1 << 20);
  v1::MemoryEvent b;
  b.set_device_peak(int64_t{10} << 20);
  b.set_host_peak(3 << 20);
  s.Add(0, a);
  s.Add(1, b);
  s.Add(1, b);  // a rank's second record is not a second rank
  EXPECT_EQ(s.Text(), "compute 22.0 MiB · host 3.0 MiB (2 ranks)");
}

TEST(MemorySummaryTest, TextShowsNvmeOnlyWhenUsedAndTheGpuWhenReported) {
  MemoryLedger ledger;
  ledger.Charge(MemoryPool::kNvme, MemoryCategory::kOptimizerState, 2 << 20);
  v1::MemoryEvent m = FromLedger(ledger);
  MemorySummary s;
  s.Add(0, m);
  EXPECT_EQ(s.Text(), "compute 0 B · nvme 2.0 MiB (1 rank)");
  m.set_device_driver_used(int64_t{10} << 30);
  m.set_device_driver_total(int64_t{140} << 30);
  s.Add(1, m);
  EXPECT_EQ(s.Text(), "compute 0 B · nvme 2.0 MiB · GPU in use 10.00 GiB of 140.00 GiB (2 ranks)");
}

}  // namespace
}  // namespace accel::client
