// Store: the rendezvous key-value store that bootstraps communicators (gloo's address exchange,
// NCCL's unique id) and small agreements between ranks. Implementations: InMemoryStore (ranks as
// threads of one process), FileStore (a directory, works on a shared file system: --rdzv-dir),
// and a network store served by acceld or by rank 0 (the control-plane issue).
//
// Keys are opaque strings; values are bytes. Set overwrites. Get waits until the key exists.
// Add keeps its counter as a decimal string, so Get of a counter key returns e.g. "3"; Add on a
// key holding anything else is InvalidArgument. Errors: DeadlineExceeded naming the missing keys
// when a wait times out; NotFound never (Get waits instead). Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace accel::comm {

class Store {
 public:
  virtual ~Store() = default;
  [[nodiscard]] virtual absl::Status Set(const std::string& key, const std::string& value) = 0;
  [[nodiscard]] virtual absl::StatusOr<std::string> Get(const std::string& key,
                                                        absl::Duration timeout) = 0;
  // Waits until every key exists.
  [[nodiscard]] virtual absl::Status Wait(const std::vector<std::string>& keys,
                                          absl::Duration timeout) = 0;
  // Atomically adds delta to the integer at key (absent = 0) and returns the new value.
  [[nodiscard]] virtual absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) = 0;
};

// Prefixes every key with `prefix` + "/", so several groups (hybrid sharding's two
// communicators, successive job attempts) share one store without collisions. Does not own
// `base`, which must outlive the result. Error messages name the full (prefixed) keys.
std::unique_ptr<Store> PrefixStore(std::string prefix, Store* base);

}  // namespace accel::comm
