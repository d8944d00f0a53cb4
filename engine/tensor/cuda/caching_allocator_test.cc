// The caching allocator's bookkeeping over a fake raw allocator (no device needed): size classes,
// reuse per (stream, class), ledger charges, out-of-memory retry after flushing the cache.
#include "engine/tensor/cuda/caching_allocator.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::cuda {
namespace {

// Hands out malloc'd blocks up to a byte limit; counts calls.
class FakeRaw : public RawAllocator {
 public:
  explicit FakeRaw(int64_t limit) : limit_(limit) {}
  absl::StatusOr<void*> Malloc(int64_t bytes) override {
    ++mallocs;
    if (in_use + bytes > limit_) return absl::ResourceExhaustedError("fake device is full");
    in_use += bytes;
    void* p = std::malloc(static_cast<size_t>(bytes));
    sizes[p] = bytes;
    return p;
  }
  void Free(void* ptr) override {
    ++frees;
    in_use -= sizes[ptr];
    sizes.erase(ptr);
    std::free(ptr);
  }
  int64_t in_use = 0;
  int mallocs = 0, frees = 0;
  std::map<void*, int64_t> sizes;

 private:
  const int64_t limit_;
};

TEST(CachingAllocatorTest, SizeClasses) {
  EXPECT_EQ(CachingAllocator::SizeClass(1), 512);
  EXPECT_EQ(CachingAllocator::SizeClass(512), 512);
  EXPECT_EQ(CachingAllocator::SizeClass(513), 1024);
  EXPECT_EQ(CachingAllocator::SizeClass(1 << 20), 1 << 20);
  // Above 1 MiB: eighths of the power of two below.
  EXPECT_EQ(CachingAllocator::SizeClass((1 << 20) + 1), (1 << 20) + (1 << 17));
  EXPECT_EQ(CachingAllocator::SizeClass(3'000'000), 3'145'728);  // 2 MiB + 4 · 256 KiB
  for (int64_t b : {int64_t{1}, int64_t{777}, int64_t{5} << 20, int64_t{12345678901}}) {
    const int64_t c = CachingAllocator::SizeClass(b);
    EXPECT_GE(c, b);
    EXPECT_LE(c, b + b / 8 + 512) << b;
  }
}

TEST(CachingAllocatorTest, ReusesFreedBlocksOfTheSameClassAndStream) {
  auto raw = std::make_unique<FakeRaw>(int64_t{1} << 30);
  FakeRaw* fake = raw.get();
  MemoryLedger ledger;
  CachingAllocator alloc(std::move(raw), &ledger);
  void* stream_a = reinterpret_cast<void*>(0x10);
  void* stream_b = reinterpret_cast<void*>(0x20);

  absl::StatusOr<void*> p = alloc.Allocate(1000, MemoryCategory::kActivations, stream_a);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kActivations).current, 1024);
  ASSERT_TRUE(alloc.Free(*p).ok());
  EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kActivations).current, 0);
  EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kActivations).peak, 1024);

  // Same class, same stream: the cached block, no raw call.
  absl::StatusOr<void*> q = alloc.Allocate(1024, MemoryCategory::kGrads, stream_a);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, *p);
  EXPECT_EQ(fake->mallocs, 1);
  // Same class, other stream: a new block.
  absl::StatusOr<void*> r = alloc.Allocate(1024, MemoryCategory::kGrads, stream_b);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(*r, *q);
  EXPECT_EQ(fake->mallocs, 2);

  AllocatorStats s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes, 2048);
  EXPECT_EQ(s.reserved_bytes, 2048);
  EXPECT_EQ(s.cache_hits, 1);
  EXPECT_EQ(s.raw_mallocs, 2);
  EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kGrads).current, 2048);

  ASSERT_TRUE(alloc.Free(*q).ok());
  ASSERT_TRUE(alloc.Free(*r).ok());
  s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes, 0);
  EXPECT_EQ(s.reserved_bytes, 2048);
  EXPECT_EQ(s.peak_allocated_bytes, 2048);
  alloc.EmptyCache();
  EXPECT_EQ(alloc.stats().reserved_bytes, 0);
  EXPECT_EQ(fake->in_use, 0);
  EXPECT_EQ(ledger.PoolTotal(MemoryPool::kDevice).current, 0);
}

TEST(CachingAllocatorTest, OutOfMemoryFlushesTheCacheOnceThenFails) {
  auto raw = std::make_unique<FakeRaw>(4096);
  FakeRaw* fake = raw.get();
  CachingAllocator alloc(std::move(raw), nullptr);
  absl::StatusOr<void*> a = alloc.Allocate(2048, MemoryCategory::kOther);
  absl::StatusOr<void*> b = alloc.Allocate(2048, MemoryCategory::kOther);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(alloc.Free(*a).ok());
  ASSERT_TRUE(alloc.Free(*b).ok());
  // 4096 does not fit while 4096 are cached in the 2048 class: the cache is released first.
  absl::StatusOr<void*> c = alloc.Allocate(4096, MemoryCategory::kParams);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(alloc.stats().cache_flushes, 1);
  EXPECT_EQ(fake->frees, 2);
  // Nothing cached now: a request that cannot fit fails with the counters in the message.
  absl::StatusOr<void*> d = alloc.Allocate(512, MemoryCategory::kParams);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(d.status().message(), ::testing::HasSubstr("params"));
  EXPECT_THAT(d.status().message(), ::testing::HasSubstr("allocated 4096 B"));
  ASSERT_TRUE(alloc.Free(*c).ok());
}

TEST(CachingAllocatorTest, RejectsBadRequestsAndUnknownPointers) {
  CachingAllocator alloc(std::make_unique<FakeRaw>(1 << 20), nullptr);
  EXPECT_EQ(alloc.Allocate(-1, MemoryCategory::kOther).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<void*> zero = alloc.Allocate(0, MemoryCategory::kOther);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(*zero, nullptr);
  EXPECT_TRUE(alloc.Free(nullptr).ok());
  int on_stack = 0;
  EXPECT_EQ(alloc.Free(&on_stack).code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<void*> p = alloc.Allocate(10, MemoryCategory::kOther);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(alloc.Free(*p).ok());
  EXPECT_EQ(alloc.Free(*p).code(), absl::StatusCode::kInvalidArgument);  // double free
}

TEST(CachingAllocatorTest, DeviceBufferReturnsItsBlockWhenDestroyedOrMoved) {
  MemoryLedger ledger;
  CachingAllocator alloc(std::make_unique<FakeRaw>(1 << 20), &ledger);
  {
    absl::StatusOr<DeviceBuffer> a = DeviceBuffer::Create(&alloc, 3000, MemoryCategory::kParams);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->bytes(), 3000);
    DeviceBuffer moved = std::move(*a);
    EXPECT_EQ(a->data(), nullptr);
    EXPECT_NE(moved.data(), nullptr);
    EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kParams).current, 3072);
  }
  EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kParams).current, 0);
  EXPECT_EQ(alloc.stats().allocated_bytes, 0);
  EXPECT_EQ(alloc.stats().reserved_bytes, 3072);
}

}  // namespace
}  // namespace accel::cuda
