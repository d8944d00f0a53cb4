#include "engine/shard/tile_stream.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/io/block_file.h"
#include "engine/shard/device_ops.h"
#include "engine/tensor/dtype.h"
#include "gtest/gtest.h"

namespace accel::shard {
namespace {

// Pages of [data, data + bytes) in the page cache (mincore on the file's mapping).
int64_t CachedPages(const void* data, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> v((bytes + page - 1) / page);
  if (mincore(const_cast<void*>(data), bytes, v.data()) != 0) return -1;
  int64_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

class TileStreamTest : public ::testing::TestWithParam<io::AioBackend> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<DeviceOps>> ops =
        CreateFileBackedDeviceOps(&ledger_, ::testing::TempDir());
    ASSERT_TRUE(ops.ok()) << ops.status();
    ops_ = std::move(*ops);
  }
  std::unique_ptr<TileStream> Stream(int64_t tile) {
    TileStreamOptions o;
    o.tile_numel = tile;
    o.bytes_per_element = 12;
    o.max_arrays = 3;
    o.aio.backend = GetParam();
    o.aio.block_size = 4096;  // several pieces per transfer
    absl::StatusOr<std::unique_ptr<TileStream>> s = TileStream::Create(o, &ledger_);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  DeviceBlock File(size_t bytes) {
    absl::StatusOr<DeviceBlock> b = ops_->Allocate(bytes, MemoryCategory::kOptimizerState);
    EXPECT_TRUE(b.ok()) << b.status();
    return b.ok() ? std::move(*b) : DeviceBlock();
  }

  MemoryLedger ledger_;
  std::unique_ptr<DeviceOps> ops_;
};

// Three tiles (the last partial, its bytes not a multiple of a page): an fp32 array and a bf16
// array updated from an fp32 gradient array that is only read, all in files, give the same
// values as the update over memory, read back through the mapping; the files' pages are not
// left in the page cache; and the byte counts are the padded transfers.
TEST_P(TileStreamTest, UpdatesFilesThroughDirectTransfersLikeMemory) {
  const int64_t n = 2 * 2048 + 777;
  std::unique_ptr<TileStream> stream = Stream(2048);
  ASSERT_NE(stream, nullptr);
  TileStreamOptions sized;
  sized.tile_numel = 2048;
  sized.bytes_per_element = 12;
  EXPECT_EQ(ledger_.Get(MemoryPool::kHost, MemoryCategory::kOptimizerState).current,
            TileStream::BufferBytes(sized));
  DeviceBlock x = File(n * 4), h = File(n * 2), g = File(n * 4);
  std::vector<float> want_x(n), grad(n);
  std::vector<uint16_t> want_h(n);
  for (int64_t i = 0; i < n; ++i) {
    x.as<float>()[i] = want_x[i] = 0.25f * static_cast<float>(i);
    grad[i] = g.as<float>()[i] = 1.0f + static_cast<float>(i % 7);
    const float hf = static_cast<float>(i % 100);
    ConvertDType(&hf, DType::kF32, &h.as<uint16_t>()[i], DType::kBF16, 1);
    want_h[i] = h.as<uint16_t>()[i];
  }
  auto update = [](float* xs, uint16_t* hs, const float* gs, int64_t len) {
    for (int64_t i = 0; i < len; ++i) {
      xs[i] = xs[i] * 2 + gs[i];
      float hf;
      ConvertDType(&hs[i], DType::kBF16, &hf, DType::kF32, 1);
      hf -= gs[i];
      ConvertDType(&hf, DType::kF32, &hs[i], DType::kBF16, 1);
    }
  };
  update(want_x.data(), want_h.data(), grad.data(), n);

  const TileStream::Array arrays[] = {{x.data(), 4, true}, {h.data(), 2, true},
                                      {g.data(), 4, false}};
  ASSERT_TRUE(stream->CanStream(*ops_, arrays));
  int tiles = 0;
  absl::Status s = stream->Run(*ops_, arrays, n,
                               [&](int64_t b, int64_t len, std::span<void* const> at) {
    EXPECT_EQ(b, tiles * 2048);
    ++tiles;
    update(static_cast<float*>(at[0]), static_cast<uint16_t*>(at[1]),
           static_cast<const float*>(at[2]), len);
    return absl::OkStatus();
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(tiles, 3);
  EXPECT_EQ(CachedPages(x.data(), x.bytes()), 0);
  EXPECT_EQ(CachedPages(h.data(), h.bytes()), 0);
  EXPECT_EQ(CachedPages(g.data(), g.bytes()), 0);
  // Reads: every array's three tiles, the last padded to the file's alignment; writes: x and h.
  const int64_t align = ops_->FileOf(x.data()).file->alignment();
  const int64_t x_bytes = 2 * 8192 + io::PadTo(777 * 4, align);
  const int64_t h_bytes = 2 * 4096 + io::PadTo(777 * 2, align);
  EXPECT_EQ(stream->bytes_read(), 2 * x_bytes + h_bytes);
  EXPECT_EQ(stream->bytes_written(), x_bytes + h_bytes);
  EXPECT_EQ(std::memcmp(x.data(), want_x.data(), n * 4), 0);
  EXPECT_EQ(std::memcmp(h.data(), want_h.data(), n * 2), 0);
  EXPECT_EQ(std::memcmp(g.data(), grad.data(), n * 4), 0);
}

// An array in memory (a transient block) is used in place beside the files.
TEST_P(TileStreamTest, MemoryArraysAreUsedInPlace) {
  const int64_t n = 5000;
  std::unique_ptr<TileStream> stream = Stream(2048);
  ASSERT_NE(stream, nullptr);
  DeviceBlock x = File(n * 4);
  absl::StatusOr<DeviceBlock> mem = ops_->Acquire(n * 4, MemoryCategory::kGrads, true);
  ASSERT_TRUE(mem.ok());
  for (int64_t i = 0; i < n; ++i) mem->as<float>()[i] = static_cast<float>(i);
  const TileStream::Array arrays[] = {{x.data(), 4, true}, {mem->data(), 4, true}};
  ASSERT_TRUE(stream->Run(*ops_, arrays, n,
                          [&](int64_t b, int64_t len, std::span<void* const> at) {
    EXPECT_EQ(at[1], mem->as<float>() + b);
    for (int64_t i = 0; i < len; ++i) {
      static_cast<float*>(at[0])[i] = static_cast<float*>(at[1])[i] + 1;
      static_cast<float*>(at[1])[i] = -1;
    }
    return absl::OkStatus();
  }).ok());
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(x.as<float>()[i], static_cast<float>(i) + 1) << i;
    ASSERT_EQ(mem->as<float>()[i], -1) << i;
  }
  EXPECT_EQ(stream->bytes_written(), stream->bytes_read());  // only x moved
}

// A write-only array is not read, except its partial last tile (whose padding it writes back).
TEST_P(TileStreamTest, WriteOnlyArraysAreNotRead) {
  const int64_t n = 2 * 2048 + 777;
  std::unique_ptr<TileStream> stream = Stream(2048);
  ASSERT_NE(stream, nullptr);
  DeviceBlock x = File(n * 4), y = File(n * 4);
  for (int64_t i = 0; i < n; ++i) {
    x.as<float>()[i] = static_cast<float>(i);
    y.as<float>()[i] = -7;
  }
  const TileStream::Array arrays[] = {{x.data(), 4, false}, {y.data(), 4, true, /*read=*/false}};
  ASSERT_TRUE(stream->Run(*ops_, arrays, n,
                          [&](int64_t, int64_t len, std::span<void* const> at) {
    for (int64_t i = 0; i < len; ++i) {
      static_cast<float*>(at[1])[i] = static_cast<float*>(at[0])[i] * 3;
    }
    return absl::OkStatus();
  }).ok());
  const int64_t align = ops_->FileOf(x.data()).file->alignment();
  const int64_t tail = io::PadTo(777 * 4, align);
  EXPECT_EQ(stream->bytes_read(), (2 * 8192 + tail) + tail);
  EXPECT_EQ(stream->bytes_written(), 2 * 8192 + tail);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y.as<float>()[i], static_cast<float>(3 * i)) << i;
}

// The callback's error ends the pass, with every transfer waited for; the stream works again.
TEST_P(TileStreamTest, ACallbackErrorStopsThePassAndTheStreamStaysUsable) {
  const int64_t n = 4 * 2048;
  std::unique_ptr<TileStream> stream = Stream(2048);
  ASSERT_NE(stream, nullptr);
  DeviceBlock x = File(n * 4);
  const TileStream::Array arrays[] = {{x.data(), 4, true}};
  int calls = 0;
  absl::Status s = stream->Run(*ops_, arrays, n, [&](int64_t, int64_t, std::span<void* const>) {
    return ++calls == 2 ? absl::DataLossError("tile two") : absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(stream->aio().outstanding(), 0);
  calls = 0;
  EXPECT_TRUE(stream->Run(*ops_, arrays, n, [&](int64_t, int64_t, std::span<void* const>) {
    ++calls;
    return absl::OkStatus();
  }).ok());
  EXPECT_EQ(calls, 4);
}

// A file range that does not start at an aligned offset cannot be streamed; Run says so.
TEST_P(TileStreamTest, AnUnalignedFileRangeIsRefused) {
  std::unique_ptr<TileStream> stream = Stream(2048);
  ASSERT_NE(stream, nullptr);
  DeviceBlock x = File(8192 * 4);
  const TileStream::Array arrays[] = {{x.as<float>() + 1, 4, true}};
  EXPECT_FALSE(stream->CanStream(*ops_, arrays));
  absl::Status s = stream->Run(*ops_, arrays, 100,
                               [](int64_t, int64_t, std::span<void* const>) {
    return absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  // More bytes per element than the buffers were sized for.
  const TileStream::Array wide[] = {{x.data(), 4, true}, {x.data(), 4, true},
                                    {x.data(), 4, true}, {x.data(), 4, true}};
  EXPECT_EQ(stream->Run(*ops_, wide, 100, [](int64_t, int64_t, std::span<void* const>) {
    return absl::OkStatus();
  }).code(), absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Backends, TileStreamTest,
                         ::testing::Values(io::AioBackend::kAuto, io::AioBackend::kThreads),
                         [](const auto& info) {
                           return info.param == io::AioBackend::kAuto ? std::string("Auto")
                                                                      : std::string("Threads");
                         });

}  // namespace
}  // namespace accel::shard
