#include "engine/io/async_io.h"

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "absl/time/clock.h"
#include "engine/io/aligned_buffer.h"
#include "engine/io/io_test_util.h"
#include "gtest/gtest.h"

namespace accel::io {
namespace {

using ::accel::io::testing::DiskTempDir;
using ::accel::io::testing::FillRandom;

constexpr int64_t kBlock = 64 << 10;  // small, so multi-block requests stay cheap

// (backend, single_submit, overlap_events)
using EngineParam = std::tuple<AioBackend, bool, bool>;

class AsyncIoTest : public ::testing::TestWithParam<EngineParam> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    AioOptions options;
    options.block_size = kBlock;
    options.queue_depth = 4;
    std::tie(options.backend, options.single_submit, options.overlap_events) = GetParam();
    auto aio = AsyncIo::Create(options);
    if (!aio.ok() && options.backend == AioBackend::kIoUring &&
        aio.status().code() == absl::StatusCode::kUnavailable) {
      GTEST_SKIP() << "io_uring unavailable here: " << aio.status();
    }
    ASSERT_TRUE(aio.ok()) << aio.status();
    aio_ = std::move(aio).value();
    EXPECT_EQ(aio_->backend(),
              options.backend == AioBackend::kThreads ? "threads" : "io_uring");
    EXPECT_TRUE(aio_->fallback_reason().empty());
  }

  std::unique_ptr<BlockFile> Open(const std::string& name, int64_t bytes) {
    auto f = BlockFile::Open(dir_.File(name), bytes);
    EXPECT_TRUE(f.ok()) << f.status();
    return f.ok() ? std::move(f).value() : nullptr;
  }

  DiskTempDir dir_;
  std::unique_ptr<AsyncIo> aio_;
};

TEST_P(AsyncIoTest, RoundTripsRandomDataAtManySizes) {
  // One page; exactly one block; several blocks and a bit (not a multiple of the block);
  // a caller-padded odd size; many blocks.
  const std::vector<int64_t> sizes = {4096, kBlock, 3 * kBlock + 12288, 1000, 40 * kBlock + 4096};
  int64_t offset = 0;
  auto file = Open("roundtrip", 64 << 20);
  ASSERT_NE(file, nullptr);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t padded = PadTo(sizes[i], file->alignment());
    auto out = AlignedBuffer::Allocate(static_cast<size_t>(sizes[i]));
    auto in = AlignedBuffer::Allocate(static_cast<size_t>(sizes[i]));
    ASSERT_TRUE(out.ok() && in.ok());
    FillRandom(out->data(), out->requested_bytes(), i + 1);
    ASSERT_TRUE(aio_->Write(*file, offset, out->data(), padded).ok());
    auto t = aio_->SubmitRead(*file, offset, in->data(), padded);
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_TRUE(aio_->Wait(*t, absl::Now() + absl::Seconds(60)).ok());
    EXPECT_EQ(std::memcmp(out->data(), in->data(), out->requested_bytes()), 0) << sizes[i];
    offset += PadTo(padded, kBlock);
  }
  EXPECT_EQ(aio_->outstanding(), 0);
}

TEST_P(AsyncIoTest, ManyRequestsInFlight) {
  constexpr int kRequests = 48;
  constexpr int64_t kBytes = 3 * kBlock + 8192;  // 4 pieces each, the last one short
  auto file = Open("many", kRequests * kBytes);
  ASSERT_NE(file, nullptr);
  auto out = AlignedBuffer::Allocate(kRequests * kBytes);
  auto in = AlignedBuffer::Allocate(kRequests * kBytes);
  ASSERT_TRUE(out.ok() && in.ok());
  FillRandom(out->data(), out->size(), 42);
  std::vector<IoTicket> tickets;
  for (int i = 0; i < kRequests; ++i) {
    auto t = aio_->SubmitWrite(*file, i * kBytes, out->as<char>() + i * kBytes, kBytes);
    ASSERT_TRUE(t.ok()) << t.status();
    tickets.push_back(*t);
  }
  EXPECT_GT(aio_->outstanding(), 0);
  ASSERT_TRUE(aio_->WaitAll(absl::Now() + absl::Seconds(60)).ok());
  EXPECT_EQ(aio_->outstanding(), 0);
  tickets.clear();
  // Reads submitted in reverse order, waited for one by one in submission order.
  for (int i = kRequests - 1; i >= 0; --i) {
    auto t = aio_->SubmitRead(*file, i * kBytes, in->as<char>() + i * kBytes, kBytes);
    ASSERT_TRUE(t.ok());
    tickets.push_back(*t);
  }
  for (IoTicket t : tickets) ASSERT_TRUE(aio_->Wait(t, absl::Now() + absl::Seconds(60)).ok());
  EXPECT_EQ(std::memcmp(out->data(), in->data(), out->size()), 0);
}

TEST_P(AsyncIoTest, MisalignedRequestIsRefusedNamingTheOffset) {
  auto file = Open("misaligned", 1 << 20);
  ASSERT_NE(file, nullptr);
  auto buf = AlignedBuffer::Allocate(8192);
  ASSERT_TRUE(buf.ok());
  auto t = aio_->SubmitRead(*file, 4097, buf->data(), 4096);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("offset 4097"), absl::string_view::npos) << t.status();
  EXPECT_EQ(aio_->SubmitWrite(*file, 0, buf->data(), 100).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(aio_->outstanding(), 0);
}

TEST_P(AsyncIoTest, ReadPastTheEndOfAShortFileIsDataLoss) {
  auto file = Open("short", 8192);
  ASSERT_NE(file, nullptr);
  auto buf = AlignedBuffer::Allocate(4 * kBlock);
  ASSERT_TRUE(buf.ok());
  // The first piece gets 8192 of 64 KiB (short), the retry for the rest gets 0 bytes.
  absl::Status s = aio_->Read(*file, 0, buf->data(), 4 * kBlock, absl::Now() + absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find(file->path()), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("offset 8192"), absl::string_view::npos) << s;
  // Entirely past the end.
  s = aio_->Read(*file, 1 << 20, buf->data(), 4096, absl::Now() + absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("offset 1048576"), absl::string_view::npos) << s;
}

TEST_P(AsyncIoTest, UnknownAndTwiceWaitedTicketsAreInvalid) {
  auto file = Open("tickets", 4096);
  ASSERT_NE(file, nullptr);
  auto buf = AlignedBuffer::Allocate(4096);
  ASSERT_TRUE(buf.ok());
  EXPECT_EQ(aio_->Wait(12345).code(), absl::StatusCode::kInvalidArgument);
  auto t = aio_->SubmitRead(*file, 0, buf->data(), 4096);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(aio_->Wait(*t).ok());
  EXPECT_EQ(aio_->Wait(*t).code(), absl::StatusCode::kInvalidArgument);
  auto empty = aio_->SubmitRead(*file, 0, buf->data(), 0);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(aio_->Wait(*empty, absl::InfinitePast()).ok()) << "a 0-byte request is done";
}

INSTANTIATE_TEST_SUITE_P(
    Engines, AsyncIoTest,
    ::testing::Combine(::testing::Values(AioBackend::kIoUring, AioBackend::kThreads),
                       ::testing::Bool(), ::testing::Bool()),
    [](const ::testing::TestParamInfo<EngineParam>& info) {
      return std::string(std::get<0>(info.param) == AioBackend::kThreads ? "Threads"
                                                                         : "IoUring") +
             (std::get<1>(info.param) ? "SingleSubmit" : "Batched") +
             (std::get<2>(info.param) ? "Overlap" : "NoOverlap");
    });

class AsyncIoDeadlineTest : public ::testing::TestWithParam<AioBackend> {};

TEST_P(AsyncIoDeadlineTest, WaitHonoursItsDeadlineAndTheTicketStaysValid) {
  DiskTempDir dir;
  ASSERT_TRUE(dir.ok());
  AioOptions options;
  options.backend = GetParam();
  options.delay_for_testing = absl::Milliseconds(600);
  auto aio = AsyncIo::Create(options);
  if (!aio.ok() && GetParam() == AioBackend::kIoUring) GTEST_SKIP() << aio.status();
  ASSERT_TRUE(aio.ok());
  auto file = BlockFile::Open(dir.File("slow"), 1 << 20);
  ASSERT_TRUE(file.ok());
  auto buf = AlignedBuffer::Allocate(4096);
  ASSERT_TRUE(buf.ok());
  auto t = (*aio)->SubmitRead(**file, 8192, buf->data(), 4096);
  ASSERT_TRUE(t.ok());
  const absl::Time start = absl::Now();
  absl::Status s = (*aio)->Wait(*t, start + absl::Milliseconds(50));
  const absl::Duration waited = absl::Now() - start;
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_NE(s.message().find((*file)->path()), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("offset 8192"), absl::string_view::npos) << s;
  EXPECT_LT(waited, absl::Milliseconds(500));
  EXPECT_EQ((*aio)->WaitAll(absl::Now()).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE((*aio)->Wait(*t).ok());
}

INSTANTIATE_TEST_SUITE_P(Engines, AsyncIoDeadlineTest,
                         ::testing::Values(AioBackend::kIoUring, AioBackend::kThreads));

TEST(AsyncIoOptionsTest, OutOfRangeKeysAreNamed) {
  AioOptions o;
  o.block_size = 1000;
  absl::Status s = ValidateAioOptions(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("aio.block_size"), absl::string_view::npos) << s;
  o = AioOptions();
  o.queue_depth = 0;
  s = AsyncIo::Create(o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("aio.queue_depth"), absl::string_view::npos) << s;
}

TEST(AsyncIoOptionsTest, AutoPicksIoUringOrSaysWhyNot) {
  auto aio = AsyncIo::Create();
  ASSERT_TRUE(aio.ok());
  if ((*aio)->backend() == "threads") {
    EXPECT_FALSE((*aio)->fallback_reason().empty());
  } else {
    EXPECT_EQ((*aio)->backend(), "io_uring");
    EXPECT_TRUE((*aio)->fallback_reason().empty());
  }
}

TEST(AsyncIoOptionsTest, DestroyingWithQueuedWorkCancelsAndReturns) {
  DiskTempDir dir;
  ASSERT_TRUE(dir.ok());
  AioOptions options;
  options.queue_depth = 1;
  options.block_size = 4096;
  options.delay_for_testing = absl::Milliseconds(20);
  auto aio = AsyncIo::Create(options);
  ASSERT_TRUE(aio.ok());
  auto file = BlockFile::Open(dir.File("cancel"), 1 << 20);
  ASSERT_TRUE(file.ok());
  auto buf = AlignedBuffer::Allocate(1 << 20);
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE((*aio)->SubmitWrite(**file, 0, buf->data(), 1 << 20).ok());  // 256 pieces
  const absl::Time start = absl::Now();
  aio->reset();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2)) << "destruction waited for queued pieces";
}

}  // namespace
}  // namespace accel::io
