// Checks of paths a job names, made where the job is accepted (acceld's submit, the lowering)
// so that a rank never finds out at start: a file to read must be a regular file (a FIFO would
// block a reader forever, a directory reads as garbage), a directory to write must be writable.
// They look at the real file system (POSIX), not an Env: they answer "will a worker process on
// this machine be able to open it", which only the machine knows.
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"

namespace accel {

// What a stat mode is, in words for an error: "a file", "a directory", "a FIFO", "a socket",
// "a device", or "not a regular file".
const char* DescribeFileKind(mode_t mode);

// OK for a readable regular file (symlinks followed). InvalidArgument naming the path and what
// it is instead ("a directory", "a FIFO", "missing", "not readable", "under /proc": the
// kernel's file systems /proc and /sys hold no job's files).
[[nodiscard]] absl::Status CheckReadableFile(const std::string& path);

// OK for an existing writable directory, or a path that does not exist yet whose nearest
// existing ancestor is a writable directory (the writer creates the rest), not under /proc or
// /sys. InvalidArgument naming the path otherwise.
[[nodiscard]] absl::Status CheckWritableDirectory(const std::string& path);

}  // namespace accel
