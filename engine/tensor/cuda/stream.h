// RAII owners of CUDA streams, events and pinned host buffers. Each is created by a factory that
// returns a Status (creation needs a device), is movable, and releases its handle when
// destroyed. Errors carry the failing call and file:line (CudaStatus in device.h).
//
// Streams are created non-blocking (they do not synchronise with the legacy default stream).
// Cross-stream ordering goes through events: producer.Record(stream_a), then
// stream_b.Wait(producer) — the host never blocks. Not thread-safe per object.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/memory_ledger.h"

namespace accel::cuda {

class Event;

class Stream {
 public:
  Stream() = default;
  // A non-blocking stream on the current device; priority 0 is the default, lower is higher.
  [[nodiscard]] static absl::StatusOr<Stream> Create(int priority = 0);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;

  cudaStream_t get() const { return stream_; }
  // Later work on this stream waits for `event` (no host synchronisation).
  [[nodiscard]] absl::Status Wait(const Event& event);
  // Blocks the host until everything queued so far has finished; reports asynchronous errors.
  [[nodiscard]] absl::Status Synchronize();

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  Event() = default;
  // timing = false makes a lighter event for ordering only (ElapsedMs then fails).
  [[nodiscard]] static absl::StatusOr<Event> Create(bool timing = false);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;

  cudaEvent_t get() const { return event_; }
  [[nodiscard]] absl::Status Record(cudaStream_t stream);
  // True once the work recorded before it has finished; false while pending.
  [[nodiscard]] absl::StatusOr<bool> Query() const;
  [[nodiscard]] absl::Status Synchronize() const;
  // Milliseconds between two recorded, completed timing events.
  [[nodiscard]] static absl::StatusOr<float> ElapsedMs(const Event& start, const Event& end);

 private:
  cudaEvent_t event_ = nullptr;
};

// Page-locked host memory (cudaHostAlloc, portable across devices) for offload and for
// asynchronous copies. Charged to (MemoryPool::kHost, category) of `ledger` (may be null) for
// its lifetime. Freeing waits for nothing: the caller orders pending copies first.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  [[nodiscard]] static absl::StatusOr<PinnedBuffer> Create(int64_t bytes, MemoryCategory category,
                                                           MemoryLedger* ledger);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;

  void* data() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  int64_t bytes() const { return bytes_; }

 private:
  void Reset();
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
  MemoryCategory category_ = MemoryCategory::kOther;
  MemoryLedger* ledger_ = nullptr;
};

}  // namespace accel::cuda
