#include "engine/base/memory_ledger.h"

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel {
namespace {

constexpr MemoryPool kDevice = MemoryPool::kDevice;
constexpr MemoryPool kHost = MemoryPool::kHost;
constexpr MemoryCategory kParams = MemoryCategory::kParams;
constexpr MemoryCategory kGrads = MemoryCategory::kGrads;
constexpr MemoryCategory kOptim = MemoryCategory::kOptimizerState;

TEST(MemoryLedgerTest, StartsAtZero) {
  MemoryLedger ledger;
  for (int p = 0; p < kNumMemoryPools; ++p) {
    for (int c = 0; c < kNumMemoryCategories; ++c) {
      MemoryCounts counts = ledger.Get(static_cast<MemoryPool>(p), static_cast<MemoryCategory>(c));
      EXPECT_EQ(counts.current, 0);
      EXPECT_EQ(counts.peak, 0);
    }
    EXPECT_EQ(ledger.PoolTotal(static_cast<MemoryPool>(p)).peak, 0);
  }
}

TEST(MemoryLedgerTest, ChargeAndRelease) {
  MemoryLedger ledger;
  ledger.Charge(kDevice, kParams, 1000);
  ledger.Charge(kDevice, kParams, 24);
  EXPECT_EQ(ledger.Get(kDevice, kParams).current, 1024);
  ledger.Release(kDevice, kParams, 1000);
  EXPECT_EQ(ledger.Get(kDevice, kParams).current, 24);
  EXPECT_EQ(ledger.Get(kDevice, kParams).peak, 1024);
  // Other cells are untouched.
  EXPECT_EQ(ledger.Get(kHost, kParams).current, 0);
  EXPECT_EQ(ledger.Get(kDevice, kGrads).current, 0);
  EXPECT_EQ(ledger.PoolTotal(kHost).current, 0);
}

TEST(MemoryLedgerTest, TotalPeakIsThePeakOfTheSum) {
  MemoryLedger ledger;
  ledger.Charge(kDevice, kParams, 100);   // total 100
  ledger.Charge(kDevice, kGrads, 50);     // total 150  <- peak of the sum
  ledger.Release(kDevice, kParams, 100);  // total 50
  ledger.Charge(kDevice, kGrads, 80);     // total 130; grads peak 130
  EXPECT_EQ(ledger.Get(kDevice, kParams).current, 0);
  EXPECT_EQ(ledger.Get(kDevice, kParams).peak, 100);
  EXPECT_EQ(ledger.Get(kDevice, kGrads).current, 130);
  EXPECT_EQ(ledger.Get(kDevice, kGrads).peak, 130);
  MemoryCounts total = ledger.PoolTotal(kDevice);
  EXPECT_EQ(total.current, 130);
  EXPECT_EQ(total.peak, 150);  // not 100 + 130, the sum of the peaks
  // Pools are separate.
  ledger.Charge(kHost, kOptim, 7);
  EXPECT_EQ(ledger.PoolTotal(kHost).peak, 7);
  EXPECT_EQ(ledger.PoolTotal(kDevice).peak, 150);
}

TEST(MemoryLedgerTest, ResetPeaksForgetsThePast) {
  MemoryLedger ledger;
  ledger.Charge(kHost, kParams, 500);
  ledger.Charge(kHost, kGrads, 300);
  ledger.Release(kHost, kGrads, 300);
  ledger.ResetPeaks();
  EXPECT_EQ(ledger.Get(kHost, kParams).peak, 500);
  EXPECT_EQ(ledger.Get(kHost, kGrads).peak, 0);
  EXPECT_EQ(ledger.PoolTotal(kHost).peak, 500);
  ledger.Charge(kHost, kGrads, 10);
  EXPECT_EQ(ledger.PoolTotal(kHost).peak, 510);
  EXPECT_EQ(ledger.Get(kHost, kGrads).peak, 10);
}

TEST(MemoryLedgerTest, ToJsonParsesAndHasTheNumbers) {
  MemoryLedger ledger;
  ledger.Charge(kDevice, kParams, 4096);
  ledger.Charge(kDevice, MemoryCategory::kActivations, 1 << 20);
  ledger.Release(kDevice, MemoryCategory::kActivations, 1 << 20);
  ledger.Charge(MemoryPool::kNvme, kOptim, int64_t{3} << 40);  // beyond 32 bits
  nlohmann::json j = nlohmann::json::parse(ledger.ToJson(), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << ledger.ToJson();
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.size(), size_t{kNumMemoryPools});
  EXPECT_EQ(j["compute"]["params"]["current"].get<int64_t>(), 4096);
  EXPECT_EQ(j["compute"]["activations"]["current"].get<int64_t>(), 0);
  EXPECT_EQ(j["compute"]["activations"]["peak"].get<int64_t>(), 1 << 20);
  EXPECT_EQ(j["compute"]["total"]["current"].get<int64_t>(), 4096);
  EXPECT_EQ(j["compute"]["total"]["peak"].get<int64_t>(), 4096 + (1 << 20));
  EXPECT_EQ(j["nvme"]["optimizer_state"]["current"].get<int64_t>(), int64_t{3} << 40);
  EXPECT_EQ(j["host"]["total"]["peak"].get<int64_t>(), 0);
  for (int p = 0; p < kNumMemoryPools; ++p) {
    const nlohmann::json& pool = j[std::string(MemoryPoolName(static_cast<MemoryPool>(p)))];
    EXPECT_EQ(pool.size(), size_t{kNumMemoryCategories + 1});
    for (int c = 0; c < kNumMemoryCategories; ++c) {
      EXPECT_TRUE(pool.contains(std::string(MemoryCategoryName(static_cast<MemoryCategory>(c)))));
    }
  }
}

TEST(MemoryLedgerTest, NamesAreDistinct) {
  EXPECT_EQ(MemoryPoolName(kDevice), "compute");
  EXPECT_EQ(MemoryPoolName(kHost), "host");
  EXPECT_EQ(MemoryPoolName(MemoryPool::kNvme), "nvme");
  EXPECT_EQ(MemoryCategoryName(kOptim), "optimizer_state");
  EXPECT_EQ(MemoryCategoryName(MemoryCategory::kCommunication), "communication");
}

TEST(MemoryLedgerTest, LedgerKeysReadTheOldDeviceNameAsTheComputePool) {
  for (int p = 0; p < kNumMemoryPools; ++p) {
    const auto pool = static_cast<MemoryPool>(p);
    EXPECT_EQ(LedgerPoolKey(MemoryPoolName(pool)), pool);
  }
  EXPECT_EQ(LedgerPoolKey("device"), kDevice);  // records stored before the rename
  EXPECT_EQ(LedgerPoolKey("gpu"), std::nullopt);
  EXPECT_EQ(LedgerPoolKey("total"), std::nullopt);
}

TEST(MemoryLedgerTest, ConcurrentChargesSumExactly) {
  MemoryLedger ledger;
  constexpr int kThreads = 8, kIters = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&ledger, t] {
      auto category = static_cast<MemoryCategory>(t % kNumMemoryCategories);
      for (int i = 0; i < kIters; ++i) {
        ledger.Charge(kDevice, category, 3 + t);
        if (i % 2 == 1) ledger.Release(kDevice, category, 3 + t);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  int64_t expected_total = 0;
  for (int t = 0; t < kThreads; ++t) expected_total += int64_t{kIters / 2} * (3 + t);
  EXPECT_EQ(ledger.PoolTotal(kDevice).current, expected_total);
  int64_t sum_of_cells = 0;
  for (int c = 0; c < kNumMemoryCategories; ++c) {
    MemoryCounts counts = ledger.Get(kDevice, static_cast<MemoryCategory>(c));
    sum_of_cells += counts.current;
    EXPECT_GE(counts.peak, counts.current);
  }
  EXPECT_EQ(sum_of_cells, expected_total);
  EXPECT_GE(ledger.PoolTotal(kDevice).peak, expected_total);

  // With charges only, the last charge sees the final sum, so the peak equals it exactly.
  MemoryLedger grow;
  threads.clear();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&grow, t] {
      for (int i = 0; i < kIters; ++i)
        grow.Charge(kHost, static_cast<MemoryCategory>(i % 3), t + 1);
    });
  }
  for (std::thread& th : threads) th.join();
  const int64_t grown = int64_t{kIters} * (kThreads * (kThreads + 1) / 2);
  EXPECT_EQ(grow.PoolTotal(kHost).current, grown);
  EXPECT_EQ(grow.PoolTotal(kHost).peak, grown);
}

}  // namespace
}  // namespace accel
