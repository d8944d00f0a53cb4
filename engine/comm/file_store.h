// FileStore: a Store in a directory, for ranks that are separate processes on one machine or on
// machines sharing a file system (--rdzv-dir). Each key is one file; a value becomes visible
// all at once (written to a temporary file, then renamed over the key's file), so a reader
// never sees a partial value. Get and Wait poll with exponential backoff (1 ms doubling to
// 50 ms) until their deadline. Add serialises read-modify-write with flock(2) on a per-key lock
// file, which the kernel releases if the holder dies, so a killed rank cannot wedge a counter.
//
// File names: "k_" + the key with every byte outside [A-Za-z0-9_-] written as %XX (so "/",
// ".", "..", and non-ASCII keys are all safe); "l_..." are lock files and ".tmp-..." temporary
// files. Keys whose encoded name exceeds 240 bytes are InvalidArgument.
//
// Values are rendezvous data, not state: nothing is fsynced, and keys persist, so use a fresh
// directory (or a fresh PrefixStore prefix) for every job attempt. OS failures are Internal
// with the path and errno text. Thread-safe and process-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/comm/store.h"

namespace accel::comm {

class FileStore : public Store {
 public:
  // Creates `dir` (and parents) if missing.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<FileStore>> Open(const std::string& dir);

  [[nodiscard]] absl::Status Set(const std::string& key, const std::string& value) override;
  [[nodiscard]] absl::StatusOr<std::string> Get(const std::string& key,
                                                absl::Duration timeout) override;
  [[nodiscard]] absl::Status Wait(const std::vector<std::string>& keys,
                                  absl::Duration timeout) override;
  [[nodiscard]] absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;

  // The file name (within the directory) that holds `key`: "k_" + %XX-escaped key.
  static std::string EncodeKey(const std::string& key);
  const std::string& dir() const { return dir_; }

 private:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {}
  absl::StatusOr<std::string> KeyPath(const std::string& key) const;
  // Writes value into a fresh temporary file and renames it over `path`.
  absl::Status WriteAtomically(const std::string& path, const std::string& value) const;

  const std::string dir_;
};

}  // namespace accel::comm
