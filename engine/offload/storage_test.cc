#include "engine/offload/storage.h"

#include <cstring>
#include <memory>
#include <string>

#include "engine/io/block_file.h"
#include "gtest/gtest.h"

namespace accel::offload {
namespace {

TEST(MemoryStorageTest, RegionsAreChargedToItsPoolAndAddressedInPlace) {
  MemoryLedger ledger;
  std::unique_ptr<Storage> s = CreateMemoryStorage(&ledger, MemoryPool::kHost);
  EXPECT_EQ(s->pool(), MemoryPool::kHost);
  absl::StatusOr<void*> p = s->Allocate(4096, MemoryCategory::kOptimizerState);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(ledger.Get(MemoryPool::kHost, MemoryCategory::kOptimizerState).current, 4096);
  const char* c = static_cast<const char*>(*p);
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(c[i], 0) << i;
  // A pass takes everything at once; nothing is evicted, nothing lies in a file.
  EXPECT_EQ(s->PassTile(12345), 12345);
  EXPECT_FALSE(s->KeepsGradCopies());
  EXPECT_FALSE(s->ZeroesOnFirstWrite());
  EXPECT_FALSE(s->StreamsUpdate());
  EXPECT_TRUE(s->KeepsTransientCache());
  EXPECT_FALSE(s->Zero(*p, 4096));
  EXPECT_TRUE(s->EvictRange(*p, 4096).ok());
  EXPECT_EQ(s->FileOf(*p).file, nullptr);
  int other = 0;
  EXPECT_FALSE(s->Free(&other));
  EXPECT_TRUE(s->Free(*p));
  EXPECT_EQ(ledger.PoolTotal(MemoryPool::kHost).current, 0);
  EXPECT_EQ(*s->Allocate(0, MemoryCategory::kGrads), nullptr);
}

TEST(MemoryStorageTest, InPlaceBehavesAsMemory) {
  const Storage& s = InPlace();
  EXPECT_EQ(s.PassTile(7), 7);
  EXPECT_FALSE(s.KeepsGradCopies() || s.ZeroesOnFirstWrite() || s.StreamsUpdate());
}

TEST(FileStorageTest, RegionsAreFilesChargedToNvmeAndPassesRunInTiles) {
  MemoryLedger ledger;
  absl::StatusOr<std::unique_ptr<Storage>> s =
      CreateFileStorage(&ledger, {.dir = ACCEL_OFFLOAD_TEST_DIR, .tile_numel = 1000});
  ASSERT_TRUE(s.ok()) << s.status();
  Storage& files = **s;
  EXPECT_EQ(files.pool(), MemoryPool::kNvme);
  EXPECT_EQ(files.PassTile(12345), 1000);
  EXPECT_TRUE(files.KeepsGradCopies());
  EXPECT_TRUE(files.ZeroesOnFirstWrite());
  EXPECT_TRUE(files.StreamsUpdate());
  EXPECT_FALSE(files.KeepsTransientCache());
  const size_t n = 100000;
  absl::StatusOr<void*> p = files.Allocate(n * sizeof(float), MemoryCategory::kGrads);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(ledger.Get(MemoryPool::kNvme, MemoryCategory::kGrads).current,
            static_cast<int64_t>(n * sizeof(float)));
  EXPECT_EQ(ledger.PoolTotal(MemoryPool::kHost).current, 0);
  float* x = static_cast<float*>(*p);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i);
  // The file is where the bytes lie, at the address's offset.
  const FileSpan at = files.FileOf(x + 1024);
  ASSERT_NE(at.file, nullptr);
  EXPECT_EQ(at.offset, 1024 * 4);
  ASSERT_TRUE(files.Evict().ok());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(x[i], static_cast<float>(i)) << i;
  ASSERT_TRUE(files.Zero(x, n * sizeof(float)));
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(x[i], 0.0f) << i;
  int other = 0;
  EXPECT_FALSE(files.Zero(&other, sizeof(other)));
  EXPECT_EQ(files.FileOf(&other).file, nullptr);
  EXPECT_TRUE(files.Free(x));
  EXPECT_EQ(ledger.PoolTotal(MemoryPool::kNvme).current, 0);
}

// Count only (the memory planner's dry run): the same charges, no memory and no file, and the
// behaviour of the real storage.
TEST(CountOnlyStorageTest, ChargesAsTheRealOneWithoutMemoryOrFiles) {
  MemoryLedger ledger;
  absl::StatusOr<std::unique_ptr<Storage>> files = CreateFileStorage(
      &ledger, {.dir = "/nonexistent/accel-nvme", .tile_numel = 64, .mode = Mode::kCountOnly});
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ((*files)->PassTile(1000), 64);
  EXPECT_TRUE((*files)->KeepsGradCopies());
  absl::StatusOr<void*> a = (*files)->Allocate(int64_t{1} << 40, MemoryCategory::kOptimizerState);
  absl::StatusOr<void*> b = (*files)->Allocate(10, MemoryCategory::kGrads);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(ledger.Get(MemoryPool::kNvme, MemoryCategory::kOptimizerState).current,
            int64_t{1} << 40);
  EXPECT_EQ((*files)->FileOf(*a).file, nullptr);
  EXPECT_TRUE((*files)->Free(*a));
  EXPECT_EQ(ledger.PoolTotal(MemoryPool::kNvme).current, 10);

  std::unique_ptr<Storage> memory =
      CreateMemoryStorage(&ledger, MemoryPool::kHost, Mode::kCountOnly);
  ASSERT_TRUE(memory->Allocate(int64_t{1} << 40, MemoryCategory::kParams).ok());
  EXPECT_EQ(ledger.Get(MemoryPool::kHost, MemoryCategory::kParams).current, int64_t{1} << 40);
  EXPECT_FALSE(memory->KeepsGradCopies());
  memory.reset();  // what it still counted is released with it
  EXPECT_EQ(ledger.PoolTotal(MemoryPool::kHost).current, 0);
}

TEST(FileStorageTest, AnUnwritableDirectoryIsNamed) {
  MemoryLedger ledger;
  absl::StatusOr<std::unique_ptr<Storage>> s =
      CreateFileStorage(&ledger, {.dir = "/nonexistent/accel-nvme"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("/nonexistent/accel-nvme"), std::string::npos) << s.status();
}

}  // namespace
}  // namespace accel::offload
