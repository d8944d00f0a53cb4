// Device memory, pinned host memory, streams and events on a real device (`gpu` label).
#include <cuda_runtime.h>

#include <vector>

#include "engine/tensor/cuda/caching_allocator.h"
#include "engine/tensor/cuda/stream.h"
#include "engine/kernels/cuda/test_util.h"
#include "gtest/gtest.h"

namespace accel::cuda {
namespace {

TEST(CudaMemoryTest, CachingAllocatorOnTheDevice) {
  ACCEL_SKIP_WITHOUT_GPU();
  MemoryLedger ledger;
  CachingAllocator alloc(CudaRawAllocator(0), &ledger);
  absl::StatusOr<Stream> stream = Stream::Create();
  ASSERT_TRUE(stream.ok()) << stream.status();
  void* key = stream->get();
  absl::StatusOr<void*> p = alloc.Allocate(4 << 20, MemoryCategory::kParams, key);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*p) % 256, 0u);
  ASSERT_EQ(cudaMemsetAsync(*p, 0x7f, 4 << 20, stream->get()), cudaSuccess);
  EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kParams).current, 4 << 20);
  ASSERT_TRUE(alloc.Free(*p).ok());
  absl::StatusOr<void*> q = alloc.Allocate(4 << 20, MemoryCategory::kGrads, key);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, *p);  // reused in stream order, no cudaMalloc
  std::vector<unsigned char> host(16);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), *q, 16, cudaMemcpyDeviceToHost, stream->get()),
            cudaSuccess);
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(host[5], 0x7f);
  ASSERT_TRUE(alloc.Free(*q).ok());
  EXPECT_EQ(alloc.stats().raw_mallocs, 1);
  alloc.EmptyCache();
  EXPECT_EQ(alloc.stats().reserved_bytes, 0);
}

TEST(CudaMemoryTest, HugeRequestIsResourceExhausted) {
  ACCEL_SKIP_WITHOUT_GPU();
  CachingAllocator alloc(CudaRawAllocator(0), nullptr);
  absl::StatusOr<void*> p = alloc.Allocate(int64_t{1} << 50, MemoryCategory::kActivations);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted) << p.status();
  // The failure is not sticky: the next allocation works.
  absl::StatusOr<void*> q = alloc.Allocate(1024, MemoryCategory::kActivations);
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_TRUE(alloc.Free(*q).ok());
}

TEST(CudaMemoryTest, PinnedBufferAndEventsOrderTwoStreams) {
  ACCEL_SKIP_WITHOUT_GPU();
  MemoryLedger ledger;
  constexpr int64_t kBytes = 1 << 20;
  absl::StatusOr<PinnedBuffer> pinned = PinnedBuffer::Create(kBytes, MemoryCategory::kOptimizerState,
                                                             &ledger);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_EQ(ledger.Get(MemoryPool::kHost, MemoryCategory::kOptimizerState).current, kBytes);
  absl::StatusOr<Stream> a = Stream::Create(), b = Stream::Create();
  absl::StatusOr<Event> written = Event::Create(), start = Event::Create(true),
                        end = Event::Create(true);
  ASSERT_TRUE(a.ok() && b.ok() && written.ok() && start.ok() && end.ok());
  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, kBytes), cudaSuccess);
  // Stream a fills the device buffer; stream b copies it out only after a's event.
  ASSERT_TRUE(start->Record(a->get()).ok());
  ASSERT_EQ(cudaMemsetAsync(dev, 0x5a, kBytes, a->get()), cudaSuccess);
  ASSERT_TRUE(written->Record(a->get()).ok());
  ASSERT_TRUE(b->Wait(*written).ok());
  ASSERT_EQ(cudaMemcpyAsync(pinned->data(), dev, kBytes, cudaMemcpyDeviceToHost, b->get()),
            cudaSuccess);
  ASSERT_TRUE(end->Record(b->get()).ok());
  ASSERT_TRUE(end->Synchronize().ok());
  absl::StatusOr<bool> done = written->Query();
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(*done);
  EXPECT_EQ(pinned->as<unsigned char>()[kBytes - 1], 0x5a);
  absl::StatusOr<float> ms = Event::ElapsedMs(*start, *end);
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_GE(*ms, 0.0f);
  // A timing-less event cannot be timed: the CUDA error becomes a Status naming the call.
  absl::StatusOr<float> bad = Event::ElapsedMs(*written, *end);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cudaEventElapsedTime"), std::string::npos);
  cudaFree(dev);
  *pinned = PinnedBuffer();
  EXPECT_EQ(ledger.Get(MemoryPool::kHost, MemoryCategory::kOptimizerState).current, 0);
}

}  // namespace
}  // namespace accel::cuda
