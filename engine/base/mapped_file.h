// MappedFile: a whole file's bytes, read-only, for as long as the object lives (shared_ptr, so
// the loaders of several ranks in one process hold one).
//
// Under the POSIX Env (Env::Default()) the file is mapped (mmap): pages come from the page cache
// as they are touched, nothing is copied, and the kernel may drop them again under memory
// pressure, so a file larger than memory can be read. Under any other Env (the in-memory,
// fault-injecting and counting Envs of the tests) the file is read through the Env into memory,
// so those Envs see and shape every read as before.
//
// A mapped file must not be truncated while mapped: a read past its new end faults, as with any
// memory-mapped reader. Deleting or renaming it is safe (the mapping keeps its pages).
//
// Errors are the Env's NewRandomAccessFile's (NotFound, InvalidArgument for a directory or a
// file that is not regular, Internal with errno text), naming the path.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/base/env.h"

namespace accel {

class MappedFile {
 public:
  virtual ~MappedFile() = default;
  const char* data() const { return data_; }
  uint64_t size() const { return size_; }
  // True when the bytes are a mapping of the file, false when they are a copy in memory.
  virtual bool mapped() const = 0;

 protected:
  const char* data_ = nullptr;
  uint64_t size_ = 0;
};

[[nodiscard]] absl::StatusOr<std::shared_ptr<const MappedFile>> MapFile(Env* env,
                                                                        const std::string& path);

}  // namespace accel
