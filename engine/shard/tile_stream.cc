#include "engine/shard/tile_stream.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/io/block_file.h"

namespace accel::shard {
namespace {

int64_t RoundedTile(int64_t tile_numel) {
  const int64_t g = TileStream::kTileGranule;
  return std::max<int64_t>(g, (tile_numel + g - 1) / g * g);
}

}  // namespace

TileStreamOptions OptimizerStreamOptions(const ShardPlan& plan) {
  const ShardOptions& options = plan.options();
  int64_t largest = 0;
  for (const auto& [begin, end] : plan.OwnedFlatRanges()) largest = std::max(largest, end - begin);
  TileStreamOptions o;
  o.tile_numel = std::max<int64_t>(1, std::min(options.offload_tile_numel, largest));
  // master, m, v, gradient copy (fp32), and the rounded parameters (at most fp32).
  o.bytes_per_element = 20;
  o.max_arrays = 5;
  o.aio = options.offload_aio;
  o.lock_buffers = options.offload_pin_buffers;
  return o;
}

int64_t TileStream::BufferBytes(const TileStreamOptions& options) {
  return 2 * RoundedTile(options.tile_numel) * options.bytes_per_element;
}

absl::StatusOr<std::unique_ptr<TileStream>> TileStream::Create(const TileStreamOptions& options,
                                                               MemoryLedger* ledger) {
  if (options.tile_numel <= 0 || options.bytes_per_element <= 0 || options.max_arrays <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tile stream needs a positive tile (", options.tile_numel, " elements), element size (",
        options.bytes_per_element, " bytes) and array count (", options.max_arrays, ")"));
  }
  std::unique_ptr<TileStream> s(new TileStream());
  s->options_ = options;
  s->tile_numel_ = RoundedTile(options.tile_numel);
  ACCEL_ASSIGN_OR_RETURN(s->aio_, io::AsyncIo::Create(options.aio));
  const io::AlignedBufferOptions buffer_options = {.lock = options.lock_buffers,
                                                   .ledger = ledger,
                                                   .pool = MemoryPool::kHost,
                                                   .category = MemoryCategory::kOptimizerState};
  for (io::AlignedBuffer& b : s->buffers_) {
    ACCEL_ASSIGN_OR_RETURN(b, io::AlignedBuffer::Allocate(
                                  static_cast<size_t>(s->tile_numel_ * options.bytes_per_element),
                                  buffer_options));
  }
  return s;
}

bool TileStream::CanStream(const DeviceOps& ops, std::span<const Array> arrays) const {
  for (const Array& a : arrays) {
    const DeviceOps::FileSpan f = ops.FileOf(a.data);
    if (f.file == nullptr) continue;
    const int64_t align = f.file->alignment();
    if (align > static_cast<int64_t>(io::kPageAlignment) || f.offset % align != 0 ||
        (tile_numel_ * static_cast<int64_t>(a.elem_size)) % align != 0) {
      return false;
    }
  }
  return true;
}

int64_t TileStream::TransferBytes(const Slot& slot, size_t elem_size, int64_t tile,
                                  int64_t n) const {
  // The tail is padded to the file's alignment; the file (padded at Allocate) has those bytes.
  const int64_t len = std::min(tile_numel_, n - tile * tile_numel_);
  const int64_t at = slot.offset + tile * tile_numel_ * static_cast<int64_t>(elem_size);
  return std::min(io::PadTo(len * static_cast<int64_t>(elem_size), slot.file->alignment()),
                  slot.file->size() - at);
}

absl::Status TileStream::Submit(std::span<const Array> arrays, int set, int64_t tile, int64_t n,
                                bool write) {
  for (size_t i = 0; i < arrays.size(); ++i) {
    const Slot& slot = slots_[set][i];
    if (slot.file == nullptr || (write && !arrays[i].write_back)) continue;
    const int64_t es = static_cast<int64_t>(arrays[i].elem_size);
    const int64_t bytes = TransferBytes(slot, arrays[i].elem_size, tile, n);
    const int64_t len = std::min(tile_numel_, n - tile * tile_numel_);
    // A write-only tile needs no read unless its transfer is padded past its elements.
    if (!write && !arrays[i].read && bytes == len * es) continue;
    const int64_t at = slot.offset + tile * tile_numel_ * es;
    ACCEL_ASSIGN_OR_RETURN(io::IoTicket t,
                           write ? aio_->SubmitWrite(*slot.file, at, slot.buffer, bytes)
                                 : aio_->SubmitRead(*slot.file, at, slot.buffer, bytes));
    (write ? writes_ : reads_)[set].push_back(t);
    (write ? bytes_written_ : bytes_read_) += bytes;
  }
  return absl::OkStatus();
}

absl::Status TileStream::WaitSet(std::vector<io::IoTicket>& tickets) {
  absl::Status first;
  for (io::IoTicket t : tickets) {
    absl::Status s = aio_->Wait(t, absl::Now() + options_.io_timeout);
    if (first.ok()) first = s;
  }
  tickets.clear();
  return first;
}

absl::Status TileStream::Run(DeviceOps& ops, std::span<const Array> arrays, int64_t n,
                             const TileFn& fn) {
  if (n <= 0) return absl::OkStatus();
  int64_t bytes_per_element = 0;
  for (const Array& a : arrays) bytes_per_element += static_cast<int64_t>(a.elem_size);
  if (static_cast<int>(arrays.size()) > options_.max_arrays ||
      bytes_per_element > options_.bytes_per_element || !CanStream(ops, arrays)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tile stream: ", arrays.size(), " arrays of ", bytes_per_element,
        " bytes per element do not fit its buffers or its files' alignment"));
  }
  for (int set = 0; set < 2; ++set) {
    slots_[set].assign(arrays.size(), Slot{});
    char* carve = buffers_[set].as<char>();
    for (size_t i = 0; i < arrays.size(); ++i) {
      const DeviceOps::FileSpan f = ops.FileOf(arrays[i].data);
      slots_[set][i] = {carve, f.file, f.offset};
      carve += tile_numel_ * static_cast<int64_t>(arrays[i].elem_size);
    }
  }
  // The file becomes the only copy: nothing dirty in the cache for a direct read to miss.
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (slots_[0][i].file == nullptr) continue;
    ACCEL_RETURN_IF_ERROR(
        ops.EvictRange(arrays[i].data, static_cast<size_t>(n) * arrays[i].elem_size));
  }

  const int64_t tiles = (n + tile_numel_ - 1) / tile_numel_;
  std::vector<void*> at(arrays.size());
  auto pipeline = [&]() -> absl::Status {
    ACCEL_RETURN_IF_ERROR(Submit(arrays, 0, 0, n, /*write=*/false));
    for (int64_t k = 0; k < tiles; ++k) {
      const int set = static_cast<int>(k % 2), next = 1 - set;
      if (k + 1 < tiles) {  // the other set's writes (tile k-1) are done before it is refilled
        ACCEL_RETURN_IF_ERROR(WaitSet(writes_[next]));
        ACCEL_RETURN_IF_ERROR(Submit(arrays, next, k + 1, n, /*write=*/false));
      }
      ACCEL_RETURN_IF_ERROR(WaitSet(reads_[set]));
      const int64_t begin = k * tile_numel_;
      for (size_t i = 0; i < arrays.size(); ++i) {
        at[i] = slots_[set][i].file != nullptr
                    ? slots_[set][i].buffer
                    : static_cast<char*>(arrays[i].data) + begin * arrays[i].elem_size;
      }
      ACCEL_RETURN_IF_ERROR(fn(begin, std::min(tile_numel_, n - begin), at));
      ACCEL_RETURN_IF_ERROR(Submit(arrays, set, k, n, /*write=*/true));
    }
    for (auto& w : writes_) ACCEL_RETURN_IF_ERROR(WaitSet(w));
    return absl::OkStatus();
  };
  absl::Status s = pipeline();
  if (!s.ok()) {
    // The buffers stay in use until every transfer in flight is over.
    (void)aio_->WaitAll(absl::Now() + options_.io_timeout);
    for (int set = 0; set < 2; ++set) {
      reads_[set].clear();
      writes_[set].clear();
    }
  }
  return s;
}

}  // namespace accel::shard
