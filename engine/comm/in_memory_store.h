// InMemoryStore: a Store for ranks that are threads of one process (tests, single-process
// multi-rank runs). A map under a mutex; waiters sleep on the mutex's condition, so Set wakes
// them without polling. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "engine/comm/store.h"

namespace accel::comm {

class InMemoryStore : public Store {
 public:
  InMemoryStore() = default;
  InMemoryStore(const InMemoryStore&) = delete;
  InMemoryStore& operator=(const InMemoryStore&) = delete;

  [[nodiscard]] absl::Status Set(const std::string& key, const std::string& value) override;
  [[nodiscard]] absl::StatusOr<std::string> Get(const std::string& key,
                                                absl::Duration timeout) override;
  [[nodiscard]] absl::Status Wait(const std::vector<std::string>& keys,
                                  absl::Duration timeout) override;
  [[nodiscard]] absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> map_ ABSL_GUARDED_BY(mu_);
};

// "timed out after 2s waiting for store keys: a, b" — shared by the stores so messages agree.
absl::Status MissingKeysError(const std::vector<std::string>& missing, absl::Duration timeout);
// Parses a counter value written by Add; InvalidArgument naming the key otherwise.
absl::StatusOr<int64_t> ParseCounter(const std::string& key, const std::string& value);
// current + delta; OutOfRange naming the key when the sum leaves int64 (the counter keeps its
// value: a wrapped counter would hand two ranks the same number).
absl::StatusOr<int64_t> AddToCounter(const std::string& key, int64_t current, int64_t delta);

}  // namespace accel::comm
