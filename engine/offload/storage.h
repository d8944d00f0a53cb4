// offload::Storage: where a rank keeps the bytes of its persistent blocks — host memory, or
// files (NVMe offload, DeepSpeed's offload_*_device: nvme) — and how passes over them run.
// Two implementations, chosen once (shard::ApplyOffload for the optimizer's state,
// CreateHostDeviceOps for compute memory); the host DeviceOps (engine/shard/device_ops.h)
// allocates its persistent blocks through one, and the engine's parts ask the one they were
// given how to behave — never which kind it is:
//   - memory (CreateMemoryStorage): Buffers in a ledger pool; values are addressed in place, a
//     pass takes all of them at once, eviction is a no-op;
//   - files (CreateFileStorage): each block a file in a directory (created and unlinked at
//     once), mapped shared and charged to the ledger's nvme pool; passes run range by range,
//     each range written back and dropped from memory before the next is read, so between
//     steps the state costs disk, not RAM (docs/offload_io.md).
// Below shard/: depends on base, tensor and io only. Not thread-safe (one engine thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/memory_ledger.h"

namespace accel::io {
class BlockFile;
}

namespace accel::offload {

// Where a file-backed region's bytes lie: the BlockFile (opened for direct I/O, sized to a
// multiple of its alignment) and the offset of the address in it. {nullptr, 0} for memory.
struct FileSpan {
  io::BlockFile* file = nullptr;
  int64_t offset = 0;
};

class Storage {
 public:
  virtual ~Storage() = default;

  // ---- The bytes.
  // The ledger pool Allocate charges (memory: the one it was made for; files: kNvme).
  virtual MemoryPool pool() const = 0;
  // `bytes` kept until Free, zero-filled, charged to `category`. Null for 0 bytes.
  // ResourceExhausted when memory runs out; InvalidArgument naming the directory when a file
  // cannot be made.
  [[nodiscard]] virtual absl::StatusOr<void*> Allocate(size_t bytes, MemoryCategory category) = 0;
  // Frees a region Allocate gave; false (nothing done) when `data` is not one of them.
  virtual bool Free(void* data) = 0;
  // Zeroes [data, data + bytes) inside one region cheaply where the storage can (files: a hole
  // punched in the file, so the next write faults in a fresh page without reading the disk);
  // false when it did nothing (the caller memsets).
  virtual bool Zero(void* data, size_t bytes) = 0;
  // Writes every region back and drops it from memory (files). Memory: nothing.
  [[nodiscard]] virtual absl::Status Evict() = 0;
  // The same for [data, data + bytes) at page granularity; memory of any other kind is left
  // alone (so callers call it on any range, after each range they finish with).
  [[nodiscard]] virtual absl::Status EvictRange(const void* data, size_t bytes) = 0;
  // Where `data`'s bytes lie on disk (TileStream's direct I/O); {} for memory.
  virtual FileSpan FileOf(const void* data) const = 0;

  // ---- How the engine's parts run over it (each part calls these, never asks the kind).
  // The elements a pass over n values of this storage takes at a time (optimizer values,
  // gradient copies, masters rounded into parameters): memory, all n, addressed in place;
  // files, the offload tile, each range leaving memory before the next is read.
  virtual int64_t PassTile(int64_t n) const = 0;
  // Whether the optimizer's gradient copies stay allocated between steps (files: written
  // range by range into their own files, their shard's Σg² taken on the way since they leave
  // memory at once) rather than taken from the cache each step and given back (memory: the
  // peak holds them only during the update).
  virtual bool KeepsGradCopies() const = 0;
  // Whether reduced gradient shards kept here are zeroed when first reduced into each step
  // (files: zeroing them all at the step's start would bring every one into memory at once)
  // rather than all at the step's start (memory).
  virtual bool ZeroesOnFirstWrite() const = 0;
  // Whether the transient blocks cached beside this storage (the host ops' exact-size cache)
  // stay cached when it is evicted (memory) or go back to the system (files: with the state on
  // disk, holding the gradient copies' blocks between steps would keep a third of it in RAM).
  virtual bool KeepsTransientCache() const = 0;
  // Whether the optimizer's update streams through the storage's files with direct I/O
  // (shard::TileStream, its rounded parameters riding the same tiles, each unit finished before
  // the next is read) rather than updating the values in place.
  virtual bool StreamsUpdate() const = 0;
};

// Count only (the memory planner's dry run of the engine's allocations, engine/plan):
// Allocate charges the ledger exactly as the real storage does and returns an address that is
// never to be touched (distinct per region, null for 0 bytes); Free releases the charge; Zero,
// Evict and EvictRange do nothing and FileOf finds nothing. The behaviour methods are the real
// storage's, so the planner follows the engine's choices instead of restating them.
enum class Mode { kReal, kCountOnly };

// Buffers in `pool` of `ledger` (not owned; outlives the storage).
std::unique_ptr<Storage> CreateMemoryStorage(MemoryLedger* ledger, MemoryPool pool,
                                             Mode mode = Mode::kReal);

// How memory storage behaves, for parts whose values live in compute memory that no Storage
// of theirs allocates (a device): its behaviour methods only; never allocate through it.
const Storage& InPlace();

struct FileStorageOptions {
  std::string dir;               // the files' directory (a real disk, not tmpfs)
  int64_t tile_numel = 1 << 20;  // PassTile's range (ShardOptions::offload_tile_numel)
  Mode mode = Mode::kReal;       // kCountOnly: no file is made, the directory is not checked
};

// Files in options.dir charged to `ledger`'s nvme pool. InvalidArgument naming the directory
// when it is memory-backed (tmpfs, ramfs: offload there would lower nothing) or not writable.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Storage>> CreateFileStorage(
    MemoryLedger* ledger, const FileStorageOptions& options);

}  // namespace accel::offload
