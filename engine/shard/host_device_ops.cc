// DeviceBlock, and the host DeviceOps: transient Buffers from a BufferPool, persistent blocks
// from an offload::Storage (memory, or files for NVMe offload), every operation done before it
// returns (device_ops.h).
#include <algorithm>
#include <cstring>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/kernels/adamw.h"
#include "engine/shard/device_ops.h"
#include "engine/tensor/buffer.h"
#include "engine/tensor/buffer_pool.h"

namespace accel::shard {

DeviceBlock::~DeviceBlock() {
  if (ops_ != nullptr && data_ != nullptr) ops_->Free(data_, bytes_);
}

DeviceBlock& DeviceBlock::operator=(DeviceBlock&& other) noexcept {
  if (this != &other) {
    if (ops_ != nullptr && data_ != nullptr) ops_->Free(data_, bytes_);
    ops_ = std::exchange(other.ops_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void* DeviceBlock::Detach() {
  ops_ = nullptr;
  bytes_ = 0;
  return std::exchange(data_, nullptr);
}

namespace {

class HostDeviceOps final : public DeviceOps {
 public:
  HostDeviceOps(MemoryLedger* ledger, MemoryPool pool, bool as_device,
                std::unique_ptr<offload::Storage> storage)
      : as_device_(as_device), storage_(std::move(storage)), pool_(pool, ledger) {}

  bool host_addressable() const override { return !as_device_; }

  absl::StatusOr<DeviceBlock> Allocate(size_t bytes, MemoryCategory category) override {
    absl::StatusOr<void*> data = storage_->Allocate(bytes, category);
    if (!data.ok()) return data.status();
    if (*data == nullptr) return DeviceBlock();
    return DeviceBlock(this, *data, bytes);
  }

  absl::StatusOr<DeviceBlock> Acquire(size_t bytes, MemoryCategory category, bool zero) override {
    absl::StatusOr<Buffer> b = pool_.Acquire(bytes, category, zero);
    if (!b.ok()) return b.status();
    return Own(std::move(*b));
  }

  void Recycle(DeviceBlock block) override {
    void* data = block.Detach();
    if (data == nullptr) return;
    auto it = live_.find(data);
    if (it == live_.end()) return;
    pool_.Release(std::move(it->second));
    live_.erase(it);
  }

  absl::Status Zero(void* dst, size_t bytes) override {
    if (bytes == 0) return absl::OkStatus();
    if (storage_->Zero(dst, bytes)) return absl::OkStatus();
    std::memset(dst, 0, bytes);
    return absl::OkStatus();
  }
  absl::Status Copy(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status Convert(const void* src, DType src_dtype, void* dst, DType dst_dtype,
                       int64_t n) override {
    if (n > 0) ConvertDType(src, src_dtype, dst, dst_dtype, static_cast<size_t>(n));
    return absl::OkStatus();
  }

  absl::Status Accumulate(void* dst, const void* src, int64_t n, DType dtype) override {
    if (dtype == DType::kF32) {
      float* d = static_cast<float*>(dst);
      const float* s = static_cast<const float*>(src);
      for (int64_t i = 0; i < n; ++i) d[i] += s[i];
      return absl::OkStatus();
    }
    constexpr int64_t kChunk = 1024;
    float a[kChunk], b[kChunk];
    const size_t size = DTypeSize(dtype);
    for (int64_t i = 0; i < n; i += kChunk) {
      const int64_t m = std::min(kChunk, n - i);
      char* d = static_cast<char*>(dst) + i * size;
      ConvertDType(d, dtype, a, DType::kF32, m);
      ConvertDType(static_cast<const char*>(src) + i * size, dtype, b, DType::kF32, m);
      for (int64_t j = 0; j < m; ++j) a[j] += b[j];
      ConvertDType(a, DType::kF32, d, dtype, m);
    }
    return absl::OkStatus();
  }

  absl::Status Scale(float* x, int64_t n, float factor) override {
    for (int64_t i = 0; i < n; ++i) x[i] *= factor;
    return absl::OkStatus();
  }

  absl::StatusOr<double> SumOfSquares(std::span<const FloatSpan> parts) override {
    double total = 0;
    for (const FloatSpan& p : parts) total += kernels::SquaredL2Norm(p.data, p.n);
    return total;
  }

  absl::Status ToHost(void* host, const void* src, size_t bytes) override {
    return Copy(host, src, bytes);
  }
  absl::Status FromHost(void* dst, const void* host, size_t bytes) override {
    return Copy(dst, host, bytes);
  }

  absl::Status Synchronize() override { return absl::OkStatus(); }

  absl::Status Evict() override {
    ACCEL_RETURN_IF_ERROR(storage_->Evict());
    if (!storage_->KeepsTransientCache()) pool_.Trim();
    return absl::OkStatus();
  }

  absl::Status AdamWUpdate(float* params, float* m, float* v, const float* grads, int64_t n,
                           const kernels::AdamWHyper& hyper) override {
    kernels::AdamWUpdate(params, m, v, grads, n, hyper);
    return absl::OkStatus();
  }
  absl::Status AdamWUpdateBf16(uint16_t* params, uint16_t* m, uint16_t* v, const float* grads,
                               int64_t n, const kernels::AdamWHyper& hyper) override {
    kernels::AdamWUpdateBf16(params, m, v, grads, n, hyper);
    return absl::OkStatus();
  }

  absl::Status BeforeCollective(comm::Communicator&) override { return absl::OkStatus(); }
  absl::Status AfterCollective(comm::Communicator&, const std::shared_ptr<comm::Work>& work,
                               absl::Duration timeout) override {
    return work->Wait(timeout);
  }

 protected:
  absl::Status EvictRange(const void* data, size_t bytes) override {
    return storage_->EvictRange(data, bytes);
  }
  FileSpan FileOf(const void* data) const override { return storage_->FileOf(data); }

  void Free(void* data, size_t) override {
    if (storage_->Free(data)) return;
    live_.erase(data);
  }

 private:
  DeviceBlock Own(Buffer b) {
    if (b.empty()) return DeviceBlock();
    void* data = b.data();
    const size_t bytes = b.bytes();
    live_.emplace(data, std::move(b));
    return DeviceBlock(this, data, bytes);
  }

  bool as_device_;
  std::unique_ptr<offload::Storage> storage_;  // the persistent blocks (Allocate)
  BufferPool pool_;                            // the transient blocks (Acquire), cached
  absl::flat_hash_map<void*, Buffer> live_;    // every transient block handed out, by its data
};

}  // namespace

std::unique_ptr<DeviceOps> CreateHostDeviceOps(MemoryLedger* ledger, MemoryPool pool,
                                               bool as_device) {
  return std::make_unique<HostDeviceOps>(ledger, pool, as_device,
                                         offload::CreateMemoryStorage(ledger, pool));
}

std::unique_ptr<DeviceOps> CreateOffloadDeviceOps(MemoryLedger* ledger,
                                                  std::unique_ptr<offload::Storage> storage) {
  return std::make_unique<HostDeviceOps>(ledger, MemoryPool::kHost, false, std::move(storage));
}

absl::StatusOr<std::unique_ptr<DeviceOps>> CreateFileBackedDeviceOps(MemoryLedger* ledger,
                                                                     const std::string& dir) {
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<offload::Storage> files,
                         offload::CreateFileStorage(ledger, {.dir = dir}));
  return CreateOffloadDeviceOps(ledger, std::move(files));
}

}  // namespace accel::shard
