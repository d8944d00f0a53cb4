#include "engine/tensor/cuda/caching_allocator.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/tensor/cuda/device.h"

namespace accel::cuda {
namespace {

constexpr int64_t kSmallQuantum = 512;
constexpr int64_t kSmallLimit = int64_t{1} << 20;
constexpr int kClassesPerDoubling = 8;

class CudaRaw : public RawAllocator {
 public:
  explicit CudaRaw(int device) : device_(device) {}

  absl::StatusOr<void*> Malloc(int64_t bytes) override {
    ACCEL_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    void* ptr = nullptr;
    cudaError_t err = cudaMalloc(&ptr, static_cast<size_t>(bytes));
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky, but clear it so later checks see a clean slate
      return absl::ResourceExhaustedError(
          absl::StrCat("cudaMalloc of ", bytes, " bytes on device ", device_, ": out of memory"));
    }
    ACCEL_CUDA_RETURN_IF_ERROR(err);
    return ptr;
  }

  void Free(void* ptr) override {
    // cudaFree fails only for a bad pointer or a dead context; neither can be repaired here.
    (void)cudaSetDevice(device_);
    (void)cudaFree(ptr);
  }

 private:
  const int device_;
};

std::string CountersText(const AllocatorStats& s) {
  return absl::StrCat("allocated ", s.allocated_bytes, " B, reserved ", s.reserved_bytes,
                      " B, peak allocated ", s.peak_allocated_bytes, " B");
}

}  // namespace

std::unique_ptr<RawAllocator> CudaRawAllocator(int device) {
  return std::make_unique<CudaRaw>(device);
}

int64_t CachingAllocator::SizeClass(int64_t bytes) {
  if (bytes <= kSmallLimit) return (bytes + kSmallQuantum - 1) / kSmallQuantum * kSmallQuantum;
  const int64_t floor = static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(bytes)));
  const int64_t step = floor / kClassesPerDoubling;
  return (bytes + step - 1) / step * step;
}

CachingAllocator::CachingAllocator(std::unique_ptr<RawAllocator> raw, MemoryLedger* ledger)
    : raw_(std::move(raw)), ledger_(ledger) {}

CachingAllocator::~CachingAllocator() {
  absl::MutexLock lock(&mu_);
  EmptyCacheLocked();
  // Live blocks at destruction are a caller bug; return them anyway so the device memory is not
  // lost, and undo their ledger charges so the ledger stays consistent.
  for (const auto& [ptr, live] : live_) {
    if (ledger_ != nullptr) ledger_->Release(MemoryPool::kDevice, live.category, live.size);
    raw_->Free(ptr);
  }
}

absl::StatusOr<void*> CachingAllocator::Allocate(int64_t bytes, MemoryCategory category,
                                                 void* stream) {
  if (bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("device allocation of ", bytes, " bytes"));
  }
  if (bytes == 0) return nullptr;
  const int64_t size = SizeClass(bytes);
  absl::MutexLock lock(&mu_);
  void* ptr = nullptr;
  auto it = cache_.find(CacheKey{stream, size});
  if (it != cache_.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
    stats_.cache_hits++;
  } else {
    absl::StatusOr<void*> got = raw_->Malloc(size);
    if (absl::IsResourceExhausted(got.status()) && stats_.reserved_bytes > stats_.allocated_bytes) {
      // Cached blocks of other classes or streams may be what the device lacks.
      EmptyCacheLocked();
      stats_.cache_flushes++;
      got = raw_->Malloc(size);
    }
    if (!got.ok()) {
      return absl::Status(got.status().code(),
                          absl::StrCat("device allocation of ", bytes, " bytes (class ", size,
                                       ") for ", std::string(MemoryCategoryName(category)), ": ",
                                       got.status().message(), "; ", CountersText(stats_)));
    }
    ptr = *got;
    stats_.raw_mallocs++;
    stats_.reserved_bytes += size;
  }
  live_.emplace(ptr, Live{size, category, stream});
  stats_.allocated_bytes += size;
  RaisePeaksLocked();
  if (ledger_ != nullptr) ledger_->Charge(MemoryPool::kDevice, category, size);
  return ptr;
}

absl::Status CachingAllocator::Free(void* ptr) {
  if (ptr == nullptr) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  auto it = live_.find(ptr);
  if (it == live_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("freeing device pointer ", reinterpret_cast<uintptr_t>(ptr),
                     " that this allocator did not hand out (or already freed)"));
  }
  const Live live = it->second;
  live_.erase(it);
  stats_.allocated_bytes -= live.size;
  if (ledger_ != nullptr) ledger_->Release(MemoryPool::kDevice, live.category, live.size);
  cache_[CacheKey{live.stream, live.size}].push_back(ptr);
  return absl::OkStatus();
}

void CachingAllocator::EmptyCache() {
  absl::MutexLock lock(&mu_);
  EmptyCacheLocked();
}

void CachingAllocator::EmptyCacheLocked() {
  for (auto& [key, blocks] : cache_) {
    for (void* ptr : blocks) {
      raw_->Free(ptr);
      stats_.reserved_bytes -= key.second;
    }
  }
  cache_.clear();
}

void CachingAllocator::RaisePeaksLocked() {
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
}

AllocatorStats CachingAllocator::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::Create(CachingAllocator* allocator, int64_t bytes,
                                                  MemoryCategory category, void* stream) {
  if (allocator == nullptr) return absl::InvalidArgumentError("DeviceBuffer: null allocator");
  absl::StatusOr<void*> ptr = allocator->Allocate(bytes, category, stream);
  if (!ptr.ok()) return ptr.status();
  DeviceBuffer buffer;
  buffer.allocator_ = allocator;
  buffer.ptr_ = *ptr;
  buffer.bytes_ = bytes;
  return buffer;
}

DeviceBuffer::~DeviceBuffer() { Reset(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : allocator_(std::exchange(other.allocator_, nullptr)),
      ptr_(std::exchange(other.ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    allocator_ = std::exchange(other.allocator_, nullptr);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::Reset() {
  // The pointer came from this allocator, so Free cannot fail.
  if (allocator_ != nullptr && ptr_ != nullptr) (void)allocator_->Free(ptr_);
  allocator_ = nullptr;
  ptr_ = nullptr;
  bytes_ = 0;
}

}  // namespace accel::cuda
