#include "engine/tensor/cuda/stream.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/tensor/cuda/device.h"

namespace accel::cuda {

// ---- Stream -------------------------------------------------------------------------------------

absl::StatusOr<Stream> Stream::Create(int priority) {
  Stream s;
  ACCEL_CUDA_RETURN_IF_ERROR(
      cudaStreamCreateWithPriority(&s.stream_, cudaStreamNonBlocking, priority));
  return s;
}

Stream::~Stream() {
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

Stream::Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

absl::Status Stream::Wait(const Event& event) {
  ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_, event.get(), 0));
  return absl::OkStatus();
}

absl::Status Stream::Synchronize() {
  ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

// ---- Event --------------------------------------------------------------------------------------

absl::StatusOr<Event> Event::Create(bool timing) {
  Event e;
  ACCEL_CUDA_RETURN_IF_ERROR(
      cudaEventCreateWithFlags(&e.event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  return e;
}

Event::~Event() {
  if (event_ != nullptr) (void)cudaEventDestroy(event_);
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

absl::Status Event::Record(cudaStream_t stream) {
  ACCEL_CUDA_RETURN_IF_ERROR(cudaEventRecord(event_, stream));
  return absl::OkStatus();
}

absl::StatusOr<bool> Event::Query() const {
  cudaError_t err = cudaEventQuery(event_);
  if (err == cudaErrorNotReady) return false;
  ACCEL_CUDA_RETURN_IF_ERROR(err);
  return true;
}

absl::Status Event::Synchronize() const {
  ACCEL_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(event_));
  return absl::OkStatus();
}

absl::StatusOr<float> Event::ElapsedMs(const Event& start, const Event& end) {
  float ms = 0;
  ACCEL_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.event_, end.event_));
  return ms;
}

// ---- PinnedBuffer -------------------------------------------------------------------------------

absl::StatusOr<PinnedBuffer> PinnedBuffer::Create(int64_t bytes, MemoryCategory category,
                                                  MemoryLedger* ledger) {
  if (bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("pinned allocation of ", bytes, " bytes"));
  }
  PinnedBuffer b;
  if (bytes == 0) return b;
  cudaError_t err = cudaHostAlloc(&b.ptr_, static_cast<size_t>(bytes), cudaHostAllocPortable);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return absl::ResourceExhaustedError(
        absl::StrCat("cudaHostAlloc of ", bytes, " bytes (", std::string(MemoryCategoryName(category)),
                     "): out of page-locked memory"));
  }
  ACCEL_CUDA_RETURN_IF_ERROR(err);
  b.bytes_ = bytes;
  b.category_ = category;
  b.ledger_ = ledger;
  if (ledger != nullptr) ledger->Charge(MemoryPool::kHost, category, bytes);
  return b;
}

PinnedBuffer::~PinnedBuffer() { Reset(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      category_(other.category_),
      ledger_(std::exchange(other.ledger_, nullptr)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    category_ = other.category_;
    ledger_ = std::exchange(other.ledger_, nullptr);
  }
  return *this;
}

void PinnedBuffer::Reset() {
  if (ptr_ == nullptr) return;
  (void)cudaFreeHost(ptr_);
  if (ledger_ != nullptr) ledger_->Release(MemoryPool::kHost, category_, bytes_);
  ptr_ = nullptr;
  bytes_ = 0;
  ledger_ = nullptr;
}

}  // namespace accel::cuda
