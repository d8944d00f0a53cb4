// DeviceOps: where a ShardedModel keeps its buffers and how it fills, converts and orders them,
// so that one sharding engine (every strategy, prefetch, mixed precision) runs on host memory
// over gloo and on a CUDA device over NCCL without branching on which.
//
// Two implementations:
//   - host (CreateHostDeviceOps, here): Buffers in the ledger's "device" pool (the compute pool
//     of a CPU-only rank), cached by exact size (BufferPool); every operation finishes before it
//     returns, and a collective's result is ready once its Work is waited for on the host. Its
//     persistent blocks come from an offload::Storage (engine/offload/storage.h): host memory,
//     or files for NVMe offload (CreateOffloadDeviceOps).
//   - CUDA (engine/shard/cuda/cuda_device_ops.h): blocks from a CachingAllocator, every operation
//     queued on one compute stream; a collective runs on its NCCL stream after the compute queued
//     before it (BeforeCollective), and later compute waits for it through its event
//     (AfterCollective), never by blocking the host.
//
// The contract both keep, which the engine relies on:
//   - Operations on blocks (Zero, Copy, Convert, Accumulate, Scale) take effect in issue order
//     with one another and with collectives ordered by Before/AfterCollective.
//   - A block given back (Recycle, or destruction) may be reused by a later Acquire at once: the
//     implementation orders that reuse after the work already issued on it (stream order).
//   - ToHost returns once the bytes are on the host; FromHost copies before returning, so the
//     host memory may change afterwards.
//   - Bit-exact arithmetic: Convert rounds as accel::ConvertDType; Accumulate is
//     dst = round(dst + src) computed in fp32; Scale is x * factor in fp32. SumOfSquares widens
//     to double; the host sums each part in index order and the parts in the order given (the
//     CUDA implementation sums in another order, to rounding).
// Errors: ResourceExhausted when memory runs out, InvalidArgument for bad sizes or dtypes, the
// device's errors with file:line. Not thread-safe: one engine thread per DeviceOps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/base/memory_ledger.h"
#include "engine/comm/communicator.h"
#include "engine/kernels/adamw.h"
#include "engine/offload/storage.h"
#include "engine/tensor/dtype.h"

namespace accel::shard {

class DeviceOps;

// One block of memory from a DeviceOps, owned and move-only; gives itself back (not to the
// cache) when destroyed. An empty block (zero bytes) has a null data pointer.
class DeviceBlock {
 public:
  DeviceBlock() = default;
  DeviceBlock(DeviceOps* ops, void* data, size_t bytes) : ops_(ops), data_(data), bytes_(bytes) {}
  ~DeviceBlock();
  DeviceBlock(DeviceBlock&& other) noexcept { *this = std::move(other); }
  DeviceBlock& operator=(DeviceBlock&& other) noexcept;
  DeviceBlock(const DeviceBlock&) = delete;
  DeviceBlock& operator=(const DeviceBlock&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  bool empty() const { return bytes_ == 0; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  // Gives up ownership without freeing (for the DeviceOps that made it).
  void* Detach();
  // The DeviceOps that made it (null for an empty block).
  DeviceOps* ops() const { return ops_; }

 private:
  DeviceOps* ops_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// One contiguous fp32 range for SumOfSquares.
struct FloatSpan {
  const float* data;
  int64_t n;
};

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;

  // True when block memory is host memory that the caller may read and write directly (then
  // host-side collectives need no staging copies).
  virtual bool host_addressable() const = 0;

  // Memory kept for the model's lifetime (resident parameters, shards, masters, reduced
  // gradients), zero-filled, charged to `category` until destroyed.
  [[nodiscard]] virtual absl::StatusOr<DeviceBlock> Allocate(size_t bytes,
                                                             MemoryCategory category) = 0;
  // Memory that comes and goes every step (gathered units, unit gradients, 16-bit copies): from
  // a cache when a block of the size was recycled, zero-filled only when `zero`.
  [[nodiscard]] virtual absl::StatusOr<DeviceBlock> Acquire(size_t bytes, MemoryCategory category,
                                                            bool zero) = 0;
  // Returns an Acquired block to the cache (charged as "other" while cached, where the
  // implementation accounts its cache in the ledger). Empty blocks are dropped.
  virtual void Recycle(DeviceBlock block) = 0;

  [[nodiscard]] virtual absl::Status Zero(void* dst, size_t bytes) = 0;
  [[nodiscard]] virtual absl::Status Copy(void* dst, const void* src, size_t bytes) = 0;
  [[nodiscard]] virtual absl::Status Convert(const void* src, DType src_dtype, void* dst,
                                             DType dst_dtype, int64_t n) = 0;
  // dst[i] = round(dst[i] + src[i]) in `dtype`, added in fp32.
  [[nodiscard]] virtual absl::Status Accumulate(void* dst, const void* src, int64_t n,
                                                DType dtype) = 0;
  // x[i] *= factor (fp32).
  [[nodiscard]] virtual absl::Status Scale(float* x, int64_t n, float factor) = 0;
  // Σ x² over every part (fp32 values, summed in double). Synchronises with the host.
  [[nodiscard]] virtual absl::StatusOr<double> SumOfSquares(std::span<const FloatSpan> parts) = 0;
  [[nodiscard]] virtual absl::Status ToHost(void* host, const void* src, size_t bytes) = 0;
  [[nodiscard]] virtual absl::Status FromHost(void* dst, const void* host, size_t bytes) = 0;
  // Returns once every operation issued so far has finished (the host: at once).
  [[nodiscard]] virtual absl::Status Synchronize() = 0;
  // Blocks in files (offload::Storage::Evict): writes their pages back and drops them from
  // memory, so the data lives on the disk until it is next touched, and frees the cache of
  // transient blocks. Everything else: nothing.
  [[nodiscard]] virtual absl::Status Evict() { return absl::OkStatus(); }
  // The same for the file-backed bytes in [data, data + bytes), at page granularity (a range's
  // masters and moments once it is updated); memory of any other kind is left alone.
  [[nodiscard]] virtual absl::Status EvictRange(const void* /*data*/, size_t /*bytes*/) {
    return absl::OkStatus();
  }

  // Where a file-backed block's bytes lie: the BlockFile (opened for direct I/O, sized to a
  // multiple of its alignment) and the offset of `data` in it, so a streaming pass can read
  // and write the range with AsyncIo instead of through the mapping. {nullptr, 0} for memory
  // of any other kind. Call EvictRange on the range first: the file is then the only copy, and
  // direct writes leave no stale page behind for the mapping's next touch.
  using FileSpan = offload::FileSpan;
  virtual FileSpan FileOf(const void* /*data*/) const { return {}; }

  // The optimizer's update on n elements, kernels::AdamWUpdate's arithmetic: fp32 parameters,
  // moments and gradients.
  [[nodiscard]] virtual absl::Status AdamWUpdate(float* params, float* m, float* v,
                                                 const float* grads, int64_t n,
                                                 const kernels::AdamWHyper& hyper) = 0;
  // Low precision (kernels::AdamWUpdateBf16): bf16 parameters and moments, fp32 gradients.
  // Unimplemented where the implementation has no such kernel (CUDA).
  [[nodiscard]] virtual absl::Status AdamWUpdateBf16(uint16_t* params, uint16_t* m, uint16_t* v,
                                                     const float* grads, int64_t n,
                                                     const kernels::AdamWHyper& hyper) = 0;

  // Seconds the compute stream stood waiting for collectives (AfterCollective) since the last
  // call: a device's exposed communication, which no host clock sees. Call after Synchronize.
  // The host blocks instead (ShardedModel times that itself): 0.
  virtual double TakeStreamWaitSeconds() { return 0; }

  // Before issuing a collective on `comm` whose buffers block work has produced or will reuse.
  [[nodiscard]] virtual absl::Status BeforeCollective(comm::Communicator& comm) = 0;
  // After issuing it: later block work sees its results. Host: waits for the Work (at most
  // `timeout`, and returns its Status); CUDA: orders the compute stream after it.
  [[nodiscard]] virtual absl::Status AfterCollective(comm::Communicator& comm,
                                                     const std::shared_ptr<comm::Work>& work,
                                                     absl::Duration timeout) = 0;

 protected:
  friend class DeviceBlock;
  // Frees a block's memory (for good, not to the cache).
  virtual void Free(void* data, size_t bytes) = 0;
};

// Host memory in `pool` (kDevice for a CPU rank's compute buffers) of `ledger` (not owned; must
// outlive the ops), as Buffer and BufferPool account it. With `as_device`, host_addressable()
// says false, so the engine and the trainer take every path they take for a real device
// (staged host values, staged checkpoint ranges, staged collectives) on host memory: how the
// CPU tests cover the GPU's code paths (tests/sharding/staged_device_test.cc).
std::unique_ptr<DeviceOps> CreateHostDeviceOps(MemoryLedger* ledger,
                                               MemoryPool pool = MemoryPool::kDevice,
                                               bool as_device = false);

// Host ops whose Allocate'd (persistent) blocks come from `storage` (offload::Storage: host
// memory, or files for NVMe offload) and whose Acquire'd (transient) blocks are host memory
// in `ledger`'s host pool; Evict, EvictRange, Zero and FileOf go to the storage. This is how
// shard::ApplyOffload builds the optimizer's memory once it has chosen the storage.
std::unique_ptr<DeviceOps> CreateOffloadDeviceOps(MemoryLedger* ledger,
                                                  std::unique_ptr<offload::Storage> storage);

// NVMe offload in one call (tests): CreateOffloadDeviceOps over offload::CreateFileStorage(dir)
// — blocks that are files in `dir` (created and unlinked at once, so they vanish with the
// process), mapped shared and charged to the ledger's nvme pool. InvalidArgument naming `dir`
// when a file cannot be created there.
[[nodiscard]] absl::StatusOr<std::unique_ptr<DeviceOps>> CreateFileBackedDeviceOps(
    MemoryLedger* ledger, const std::string& dir);

}  // namespace accel::shard
