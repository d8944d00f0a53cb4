#include "engine/tensor/buffer.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "gtest/gtest.h"

namespace accel {
namespace {

constexpr MemoryPool kHost = MemoryPool::kHost;
constexpr MemoryPool kDevice = MemoryPool::kDevice;
constexpr MemoryCategory kParams = MemoryCategory::kParams;
constexpr MemoryCategory kGrads = MemoryCategory::kGrads;

bool AllZero(const Buffer& b) {
  const auto* p = b.as<uint8_t>();
  for (size_t i = 0; i < b.bytes(); ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

TEST(BufferTest, AlignedZeroedAndCharged) {
  MemoryLedger ledger;
  for (size_t bytes :
       {size_t{1}, size_t{3}, size_t{63}, size_t{64}, size_t{65}, size_t{4097}, size_t{1} << 20}) {
    absl::StatusOr<Buffer> b = Buffer::Allocate(bytes, kDevice, kParams, &ledger);
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_NE(b->data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % Buffer::kAlignment, 0u) << bytes;
    EXPECT_EQ(b->bytes(), bytes);
    EXPECT_FALSE(b->empty());
    EXPECT_EQ(b->pool(), kDevice);
    EXPECT_EQ(b->category(), kParams);
    EXPECT_TRUE(AllZero(*b));
    EXPECT_EQ(ledger.Get(kDevice, kParams).current, static_cast<int64_t>(bytes));
    EXPECT_EQ(ledger.Get(kHost, kParams).current, 0);
  }
  // Each went out of scope before the next was made.
  EXPECT_EQ(ledger.Get(kDevice, kParams).current, 0);
  EXPECT_EQ(ledger.Get(kDevice, kParams).peak, int64_t{1} << 20);
}

TEST(BufferTest, ZeroBytesIsEmptyAndUncharged) {
  MemoryLedger ledger;
  absl::StatusOr<Buffer> b = Buffer::Allocate(0, kHost, kGrads, &ledger);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->empty());
  EXPECT_EQ(b->data(), nullptr);
  EXPECT_EQ(ledger.PoolTotal(kHost).peak, 0);
  Buffer def;
  EXPECT_TRUE(def.empty());
  EXPECT_EQ(def.span<float>().size(), 0u);
}

TEST(BufferTest, MoveKeepsOneCharge) {
  MemoryLedger ledger;
  absl::StatusOr<Buffer> made = AllocateFloats(100, kHost, kGrads, &ledger);
  ASSERT_TRUE(made.ok());
  Buffer a = std::move(*made);
  EXPECT_EQ(a.bytes(), 400u);
  a.span<float>()[99] = 1.5f;
  const void* data = a.data();
  EXPECT_EQ(ledger.Get(kHost, kGrads).current, 400);

  Buffer b(std::move(a));
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(b.as<float>()[99], 1.5f);
  EXPECT_EQ(a.data(),
            nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is the contract
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(ledger.Get(kHost, kGrads).current, 400);

  // Move-assigning onto a live buffer releases the target's own charge.
  absl::StatusOr<Buffer> other = Buffer::Allocate(64, kHost, kParams, &ledger);
  ASSERT_TRUE(other.ok());
  Buffer c = std::move(*other);
  EXPECT_EQ(ledger.PoolTotal(kHost).current, 464);
  c = std::move(b);
  EXPECT_EQ(ledger.Get(kHost, kParams).current, 0);
  EXPECT_EQ(ledger.Get(kHost, kGrads).current, 400);
  EXPECT_EQ(c.category(), kGrads);
  EXPECT_EQ(c.data(), data);

  Buffer& alias = c;
  c = std::move(alias);  // self-move keeps the buffer
  EXPECT_EQ(c.data(), data);
  EXPECT_EQ(ledger.PoolTotal(kHost).current, 400);
  { Buffer gone = std::move(c); }
  EXPECT_EQ(ledger.PoolTotal(kHost).current, 0);
  EXPECT_EQ(ledger.PoolTotal(kHost).peak, 464);
}

TEST(BufferTest, ResetReleasesAndIsIdempotent) {
  MemoryLedger ledger;
  absl::StatusOr<Buffer> b = Buffer::Allocate(1000, kDevice, kGrads, &ledger);
  ASSERT_TRUE(b.ok());
  b->Reset();
  EXPECT_TRUE(b->empty());
  EXPECT_EQ(b->data(), nullptr);
  EXPECT_EQ(ledger.Get(kDevice, kGrads).current, 0);
  b->Reset();
  EXPECT_EQ(ledger.Get(kDevice, kGrads).current, 0);
}

TEST(BufferTest, ZeroClearsWrittenData) {
  MemoryLedger ledger;
  absl::StatusOr<Buffer> b = Buffer::Allocate(333, kHost, kParams, &ledger);
  ASSERT_TRUE(b.ok());
  std::memset(b->data(), 0x5a, b->bytes());
  EXPECT_FALSE(AllZero(*b));
  b->Zero();
  EXPECT_TRUE(AllZero(*b));
}

TEST(BufferTest, NullLedgerMeansDefault) {
  MemoryLedger* d = MemoryLedger::Default();
  const int64_t before = d->Get(kHost, MemoryCategory::kOther).current;
  {
    absl::StatusOr<Buffer> b = Buffer::Allocate(128, kHost, MemoryCategory::kOther);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(d->Get(kHost, MemoryCategory::kOther).current, before + 128);
  }
  EXPECT_EQ(d->Get(kHost, MemoryCategory::kOther).current, before);
}

TEST(BufferTest, ImpossibleSizeIsResourceExhaustedAndUncharged) {
  MemoryLedger ledger;
  for (size_t bytes : {std::numeric_limits<size_t>::max(), std::numeric_limits<size_t>::max() - 10,
                       size_t{1} << 62}) {
    absl::StatusOr<Buffer> b = Buffer::Allocate(bytes, kHost, kParams, &ledger);
    EXPECT_TRUE(absl::IsResourceExhausted(b.status())) << bytes << ": " << b.status();
  }
  EXPECT_EQ(ledger.PoolTotal(kHost).peak, 0);
}

}  // namespace
}  // namespace accel
