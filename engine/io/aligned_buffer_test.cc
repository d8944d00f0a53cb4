#include "engine/io/aligned_buffer.h"

#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <utility>

#include "gtest/gtest.h"

namespace accel::io {
namespace {

TEST(AlignedBufferTest, PageAlignedPaddedAndZeroed) {
  auto b = AlignedBuffer::Allocate(5000);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % kPageAlignment, 0u);
  EXPECT_EQ(b->size(), 8192u);
  EXPECT_EQ(b->requested_bytes(), 5000u);
  for (size_t i = 0; i < b->size(); ++i) ASSERT_EQ(b->as<unsigned char>()[i], 0) << i;
  EXPECT_FALSE(b->locked());
  EXPECT_TRUE(b->lock_reason().empty());
}

TEST(AlignedBufferTest, ZeroBytesIsEmpty) {
  auto b = AlignedBuffer::Allocate(0);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->empty());
  EXPECT_EQ(b->data(), nullptr);
}

TEST(AlignedBufferTest, PadTo) {
  EXPECT_EQ(PadTo(0, 4096), 0);
  EXPECT_EQ(PadTo(1, 4096), 4096);
  EXPECT_EQ(PadTo(4096, 4096), 4096);
  EXPECT_EQ(PadTo(4097, 512), 4608);
}

TEST(AlignedBufferTest, ChargesTheGivenLedgerForItsLifetimeAndMoves) {
  MemoryLedger ledger;
  AlignedBufferOptions options;
  options.ledger = &ledger;
  options.pool = MemoryPool::kHost;
  options.category = MemoryCategory::kOptimizerState;
  {
    auto b = AlignedBuffer::Allocate(10000, options);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(ledger.Get(MemoryPool::kHost, MemoryCategory::kOptimizerState).current, 12288);
    AlignedBuffer moved = std::move(*b);
    EXPECT_TRUE(b->empty());
    EXPECT_EQ(moved.size(), 12288u);
    EXPECT_EQ(ledger.Get(MemoryPool::kHost, MemoryCategory::kOptimizerState).current, 12288);
    b->Reset();  // the moved-from buffer holds no charge to return
    EXPECT_EQ(ledger.Get(MemoryPool::kHost, MemoryCategory::kOptimizerState).current, 12288);
  }
  EXPECT_EQ(ledger.Get(MemoryPool::kHost, MemoryCategory::kOptimizerState).current, 0);
  EXPECT_EQ(ledger.Get(MemoryPool::kHost, MemoryCategory::kOptimizerState).peak, 12288);
}

TEST(AlignedBufferTest, NoLedgerChargesNothing) {
  const int64_t before = MemoryLedger::Default()->PoolTotal(MemoryPool::kHost).current;
  auto b = AlignedBuffer::Allocate(1 << 20);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(MemoryLedger::Default()->PoolTotal(MemoryPool::kHost).current, before);
}

TEST(AlignedBufferTest, SmallLockSucceeds) {
  // 4 KiB is within any RLIMIT_MEMLOCK (the smallest default is 64 KiB).
  AlignedBufferOptions options;
  options.lock = true;
  auto b = AlignedBuffer::Allocate(4096, options);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->locked()) << b->lock_reason();
  EXPECT_TRUE(b->lock_reason().empty());
}

// Without CAP_IPC_LOCK and with RLIMIT_MEMLOCK at 0, mlock must fail; the allocation must
// still succeed, unlocked, with a reason. Runs in a child process so the parent keeps its
// capabilities and limits.
TEST(AlignedBufferTest, RefusedLockDegradesToUnlockedWithAReason) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers replace mlock with a no-op that always succeeds";
#endif
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    if (syscall(SYS_capget, &header, data) != 0) _exit(10);
    data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    data[CAP_IPC_LOCK / 32].permitted &= ~(1u << (CAP_IPC_LOCK % 32));
    if (syscall(SYS_capset, &header, data) != 0) _exit(11);
    struct rlimit zero = {0, 0};
    if (setrlimit(RLIMIT_MEMLOCK, &zero) != 0) _exit(12);
    AlignedBufferOptions options;
    options.lock = true;
    auto b = AlignedBuffer::Allocate(1 << 20, options);
    if (!b.ok()) _exit(13);
    if (b->locked()) _exit(14);
    if (b->lock_reason().find("RLIMIT_MEMLOCK") == std::string::npos) _exit(15);
    b->as<char>()[12345] = 1;  // usable
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child step failed (10 capget .. 15 reason)";
}

}  // namespace
}  // namespace accel::io
