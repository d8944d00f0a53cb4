#include "engine/tensor/buffer_pool.h"

#include <cstring>

#include "gtest/gtest.h"

namespace accel {
namespace {

TEST(BufferPoolTest, ReusesMemoryOfTheSameSizeAndKeepsTheLedgerHonest) {
  MemoryLedger ledger;
  BufferPool pool(MemoryPool::kDevice, &ledger);
  auto a = pool.Acquire(4096, MemoryCategory::kGrads, /*zero=*/true);
  ASSERT_TRUE(a.ok());
  void* first = a->data();
  std::memset(a->data(), 0x7f, 4096);
  EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kGrads).current, 4096);
  pool.Release(std::move(*a));
  // Cached: no longer a gradient, still memory held.
  EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kGrads).current, 0);
  EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kOther).current, 4096);
  EXPECT_EQ(pool.cached_bytes(), 4096u);

  auto b = pool.Acquire(4096, MemoryCategory::kParams, /*zero=*/true);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->data(), first);  // the same memory came back
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(b->as<unsigned char>()[i], 0) << i;
  EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kParams).current, 4096);
  EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kOther).current, 0);
  EXPECT_EQ(pool.cached_bytes(), 0u);

  // Another size is a fresh allocation; without zero a reused buffer keeps its bytes.
  std::memset(b->data(), 0x11, 4096);
  pool.Release(std::move(*b));
  auto c = pool.Acquire(8192, MemoryCategory::kParams, false);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->data(), first);
  auto d = pool.Acquire(4096, MemoryCategory::kParams, false);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->as<unsigned char>()[100], 0x11);
  pool.Release(std::move(*c));
  pool.Trim();
  EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kOther).current, 0);
}

}  // namespace
}  // namespace accel
