// TileStream: one pass over n elements of a few parallel arrays (the optimizer's masters,
// moments and gradient copies), tile by tile, where the arrays in files are read ahead and
// written behind through AsyncIo — io_uring and O_DIRECT where the kernel and file system allow
// — into two sets of staging buffers, so the disk reads tile k+1 and writes tile k-1 while the
// caller computes on tile k. The memory it holds is those two sets, whatever n is; the page
// cache holds nothing of the arrays (direct I/O), which is the point under a memory cgroup
// that charges page cache like any other memory (shared/reference/zero_infinity.md §5.3).
//
//   TileStream::Array arrays[] = {{master, 4, true}, {m, 4, true}, {v, 4, true}, {g, 4, false}};
//   ACCEL_RETURN_IF_ERROR(stream.Run(ops, arrays, n, [&](int64_t begin, int64_t len,
//                                                         std::span<void* const> at) {
//     ... at[i] points at element `begin` of array i, `len` elements ...
//   }));
//
// An array whose memory is not file-backed (DeviceOps::FileOf gives no file) is used in place.
// A file-backed one is first evicted (DeviceOps::EvictRange: written back, dropped from the
// cache and the mapping), so the file is its only copy while the pass reads and writes it
// directly, and the mapping's next touch faults the new bytes in.
//
// Tiles start at multiples of tile_numel (a multiple of kTileGranule, so every tile's offset is
// 4096-byte aligned for elements of 2 or 4 bytes); transfers are padded up to the file's
// alignment, and the padding is written back as it was read. CanStream says whether the arrays
// keep those rules (each file range starts at an aligned offset); callers fall back to
// addressing the mapping directly when it says no.
//
// Errors: the I/O's (DataLoss for short transfers, ResourceExhausted for a full disk,
// DeadlineExceeded naming the file when a transfer takes longer than the deadline), or the
// callback's. On error every transfer in flight is waited for before Run returns; the arrays'
// contents are then undefined for the tiles not yet written back.
// Not thread-safe: one pass at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/base/memory_ledger.h"
#include "engine/io/aligned_buffer.h"
#include "engine/io/async_io.h"
#include "engine/shard/device_ops.h"
#include "engine/shard/shard_plan.h"

namespace accel::shard {

struct TileStreamOptions {
  // Elements per tile; rounded up to a multiple of TileStream::kTileGranule.
  int64_t tile_numel = int64_t{1} << 20;
  // Σ element size over the arrays of one pass, at most (fp32 AdamW: master, m, v, gradient).
  int64_t bytes_per_element = 16;
  int max_arrays = 4;
  io::AioOptions aio;
  // Each wait for a transfer gives up after this long.
  absl::Duration io_timeout = absl::Minutes(5);
  // mlock the staging buffers (DeepSpeed's pin_memory); never fails when refused.
  bool lock_buffers = false;
};

// The stream of the optimizer's update under NVMe offload (Trainer::Create; the memory plan
// sizes its buffers with the same call): tiles of offload_tile_numel elements, or of the plan's
// largest owned range where that is smaller, over fp32 masters, fp32 moments and fp32 gradient
// copies (offload keeps fp32 masters: ShardPlan refuses it under low precision), with the
// rounded parameters (TileHook) as a fifth array.
TileStreamOptions OptimizerStreamOptions(const ShardPlan& plan);

// One array of a pass.
struct StreamArray {
  void* data;        // element 0 (a file-backed block's mapping, or memory)
  size_t elem_size;  // 2 or 4
  bool write_back;   // the callback changes it
  // False: the callback writes every element of each tile without reading it, so the file's
  // tiles are not read (only a partial last tile is, for the padding it writes back).
  bool read = true;
};

// What rides on the optimizer's streamed update besides its own arrays (AdamW::Step): more
// arrays of the same length, and a call after each tile's update with the updated fp32
// parameters and those arrays' tile pointers — how the rounded parameters are written from
// the masters while they are in memory, instead of reading the masters again.
struct TileHook {
  std::vector<StreamArray> arrays;
  std::function<absl::Status(int64_t begin, int64_t len, const float* params,
                             std::span<void* const> extra)>
      fn;
};

class TileStream {
 public:
  static constexpr int64_t kTileGranule = 2048;

  using Array = StreamArray;
  using TileFn = std::function<absl::Status(int64_t begin, int64_t len,
                                            std::span<void* const> at)>;

  // The staging buffers (two sets of tile_numel * bytes_per_element, page-padded per array),
  // charged to `ledger` (host pool, optimizer state) until the stream is destroyed.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TileStream>> Create(
      const TileStreamOptions& options, MemoryLedger* ledger);
  // What Create allocates for these options (the memory plan's figure).
  static int64_t BufferBytes(const TileStreamOptions& options);

  // True when every file-backed array of `ops` starts at an offset its file's alignment
  // divides, and its element size times tile_numel is a multiple of that alignment.
  bool CanStream(const DeviceOps& ops, std::span<const Array> arrays) const;
  // One pass over elements [0, n) of every array; see the file comment.
  [[nodiscard]] absl::Status Run(DeviceOps& ops, std::span<const Array> arrays, int64_t n,
                                 const TileFn& fn);

  int64_t tile_numel() const { return tile_numel_; }
  const io::AsyncIo& aio() const { return *aio_; }
  // Bytes moved between the files and the staging buffers, over every pass so far.
  int64_t bytes_read() const { return bytes_read_; }
  int64_t bytes_written() const { return bytes_written_; }

 private:
  struct Slot {  // one array's place in a staging set
    void* buffer = nullptr;
    io::BlockFile* file = nullptr;  // null: the array is used in place
    int64_t offset = 0;             // of element 0 in the file
  };
  TileStream() = default;
  // Queues tile `tile`'s reads of every file-backed array into staging set `set`, or its
  // writes of those written back.
  absl::Status Submit(std::span<const Array> arrays, int set, int64_t tile, int64_t n, bool write);
  absl::Status WaitSet(std::vector<io::IoTicket>& tickets);
  int64_t TransferBytes(const Slot& slot, size_t elem_size, int64_t tile, int64_t n) const;

  TileStreamOptions options_;
  int64_t tile_numel_ = 0;
  io::AlignedBuffer buffers_[2];
  std::unique_ptr<io::AsyncIo> aio_;  // destroyed first: it waits for transfers into buffers_
  std::vector<Slot> slots_[2];
  std::vector<io::IoTicket> reads_[2], writes_[2];
  int64_t bytes_read_ = 0, bytes_written_ = 0;
};

}  // namespace accel::shard
