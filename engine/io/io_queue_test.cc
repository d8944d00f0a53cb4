// The scheduling rules behind the aio knobs, driven by hand (no backend): how many pieces may
// be in flight (queue_depth), batch vs refill (overlap_events), the split (block_size), and
// what a short or failed completion does.
#include "engine/io/io_queue.h"

#include <cerrno>
#include <vector>

#include "absl/time/clock.h"
#include "engine/io/aligned_buffer.h"
#include "engine/io/io_test_util.h"
#include "gtest/gtest.h"

namespace accel::io {
namespace {

using ::accel::io::testing::DiskTempDir;

class IoQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    auto f = BlockFile::Open(dir_.File("q"), 1 << 20);
    ASSERT_TRUE(f.ok());
    file_ = std::move(f).value();
    auto b = AlignedBuffer::Allocate(1 << 20);
    ASSERT_TRUE(b.ok());
    buf_ = std::move(b).value();
  }
  AioOptions Options(bool overlap) {
    AioOptions o;
    o.block_size = 4096;
    o.queue_depth = 3;
    o.overlap_events = overlap;
    return o;
  }
  std::vector<IoPiece> Take(IoQueue& q, int max = 100) {
    std::vector<IoPiece> out;
    EXPECT_TRUE(q.Take(max, /*block=*/false, &out));
    return out;
  }

  DiskTempDir dir_;
  std::unique_ptr<BlockFile> file_;
  AlignedBuffer buf_;
};

TEST_F(IoQueueTest, SplitsIntoBlockSizePiecesInOrder) {
  IoQueue q(Options(true));
  auto t = q.Submit(*file_, false, 8192, buf_.as<char>(), 3 * 4096);
  ASSERT_TRUE(t.ok());
  auto pieces = Take(q);
  ASSERT_EQ(pieces.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(pieces[i].offset, 8192 + i * 4096);
    EXPECT_EQ(pieces[i].buf, buf_.as<char>() + i * 4096);
    EXPECT_EQ(pieces[i].bytes, 4096);
  }
}

TEST_F(IoQueueTest, OverlapRefillsAsEachPieceCompletes) {
  IoQueue q(Options(true));
  ASSERT_TRUE(q.Submit(*file_, false, 0, buf_.as<char>(), 10 * 4096).ok());
  auto first = Take(q);
  EXPECT_EQ(first.size(), 3u);  // queue_depth
  EXPECT_EQ(Take(q).size(), 0u);
  q.Complete(first[0], 4096);
  EXPECT_EQ(Take(q).size(), 1u);  // refilled at once
  EXPECT_EQ(q.in_flight(), 3);
}

TEST_F(IoQueueTest, NoOverlapWaitsForTheWholeBatch) {
  IoQueue q(Options(false));
  ASSERT_TRUE(q.Submit(*file_, false, 0, buf_.as<char>(), 10 * 4096).ok());
  auto batch = Take(q, 1);  // a batch may be taken piece by piece (thread backend)
  auto rest = Take(q);
  EXPECT_EQ(batch.size() + rest.size(), 3u);
  q.Complete(batch[0], 4096);
  q.Complete(rest[0], 4096);
  EXPECT_EQ(Take(q).size(), 0u) << "a piece of the batch is still in flight";
  q.Complete(rest[1], 4096);
  EXPECT_EQ(Take(q).size(), 3u);
}

TEST_F(IoQueueTest, ShortTransferIsRetriedForTheRemainderFirst) {
  IoQueue q(Options(true));
  auto t = q.Submit(*file_, true, 0, buf_.as<char>(), 5 * 4096);
  ASSERT_TRUE(t.ok());
  auto pieces = Take(q);
  q.Complete(pieces[1], 1024);  // short, but a multiple of a 512-byte alignment only
  if (file_->alignment() > 1024) {
    // On a 4096-aligned direct file the remainder cannot be resumed: DataLoss.
    for (const IoPiece& p : {pieces[0], pieces[2]}) q.Complete(p, 4096);
    for (const IoPiece& p : Take(q)) q.Complete(p, 4096);
    EXPECT_EQ(q.Wait(*t, absl::Now() + absl::Seconds(10)).code(), absl::StatusCode::kDataLoss);
    return;
  }
  auto retry = Take(q);
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(retry[0].offset, 4096 + 1024);
  EXPECT_EQ(retry[0].buf, buf_.as<char>() + 4096 + 1024);
  EXPECT_EQ(retry[0].bytes, 3072);
  q.Complete(retry[0], 3072);
  for (const IoPiece& p : {pieces[0], pieces[2]}) q.Complete(p, 4096);
  for (const IoPiece& p : Take(q)) q.Complete(p, 4096);
  EXPECT_TRUE(q.Wait(*t, absl::Now() + absl::Seconds(10)).ok());
}

TEST_F(IoQueueTest, ErrnoFailureNamesFileAndOffsetAndIsTheRequestsStatus) {
  IoQueue q(Options(true));
  auto t = q.Submit(*file_, true, 0, buf_.as<char>(), 2 * 4096);
  ASSERT_TRUE(t.ok());
  auto pieces = Take(q);
  q.Complete(pieces[0], 4096);
  q.Complete(pieces[1], -ENOSPC);
  absl::Status s = q.Wait(*t, absl::Now() + absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("offset 4096"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find(file_->path()), absl::string_view::npos) << s;
}

TEST_F(IoQueueTest, ZeroByteWriteIsDataLoss) {
  IoQueue q(Options(true));
  auto t = q.Submit(*file_, true, 4096, buf_.as<char>(), 4096);
  ASSERT_TRUE(t.ok());
  q.Complete(Take(q)[0], 0);
  absl::Status s = q.Wait(*t, absl::Now() + absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("offset 4096"), absl::string_view::npos) << s;
}

TEST_F(IoQueueTest, ShutdownCancelsQueuedPiecesAndRefusesNewWork) {
  IoQueue q(Options(true));
  auto t = q.Submit(*file_, false, 0, buf_.as<char>(), 10 * 4096);
  ASSERT_TRUE(t.ok());
  auto running = Take(q);
  q.Shutdown(absl::CancelledError("test"));
  for (const IoPiece& p : running) q.Complete(p, 4096);
  EXPECT_EQ(q.Wait(*t, absl::Now() + absl::Seconds(10)).code(), absl::StatusCode::kCancelled);
  std::vector<IoPiece> out;
  EXPECT_FALSE(q.Take(1, /*block=*/true, &out));
  EXPECT_EQ(q.Submit(*file_, false, 0, buf_.as<char>(), 4096).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace accel::io
