// MeasureDiskBandwidth: how fast a directory's disk moves bytes through AsyncIo, so the offload
// benchmark can print "bytes moved per step" next to what the disk can do.
//
// Writes a temporary file of `bytes` (rounded up to 4096) in `dir` with the given aio options,
// fdatasyncs it, reads it back, and deletes it. The write time includes the fdatasync, so it
// is what a swap-out costs, not how fast the device cache absorbs data. The data is
// pseudo-random, so a compressing or deduplicating device cannot flatter the figure.
// Runs on the calling thread for about bytes / bandwidth; not for use inside a training step.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/io/async_io.h"

namespace accel::io {

struct DiskBandwidth {
  int64_t bytes = 0;        // bytes written and read
  double write_gbps = 0;    // 1e9 bytes per second
  double read_gbps = 0;
  bool direct = false;      // whether the file used O_DIRECT
  std::string backend;      // AsyncIo::backend()
  std::string note;         // fallback reasons, when any
};

// Errors: those of BlockFile::Open (tmpfs refused, missing directory) and of the transfers;
// InvalidArgument when bytes <= 0.
[[nodiscard]] absl::StatusOr<DiskBandwidth> MeasureDiskBandwidth(
    const std::string& dir, int64_t bytes, const AioOptions& options = {});

}  // namespace accel::io
