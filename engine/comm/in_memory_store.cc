#include "engine/comm/in_memory_store.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace accel::comm {

absl::Status MissingKeysError(const std::vector<std::string>& missing, absl::Duration timeout) {
  return absl::DeadlineExceededError(
      absl::StrCat("timed out after ", absl::FormatDuration(timeout),
                   " waiting for store keys: ", absl::StrJoin(missing, ", ")));
}

absl::StatusOr<int64_t> ParseCounter(const std::string& key, const std::string& value) {
  int64_t current = 0;
  if (!absl::SimpleAtoi(value, &current)) {
    return absl::InvalidArgumentError(
        absl::StrCat("store key '", key, "' does not hold a counter (value of ", value.size(),
                     " bytes is not a decimal integer)"));
  }
  return current;
}

absl::StatusOr<int64_t> AddToCounter(const std::string& key, int64_t current, int64_t delta) {
  int64_t sum = 0;
  if (__builtin_add_overflow(current, delta, &sum)) {
    return absl::OutOfRangeError(absl::StrCat("store key '", key, "': adding ", delta, " to ",
                                              current, " leaves the 64-bit counter range"));
  }
  return sum;
}

absl::Status InMemoryStore::Set(const std::string& key, const std::string& value) {
  absl::MutexLock lock(&mu_);
  map_[key] = value;
  return absl::OkStatus();
}

absl::StatusOr<std::string> InMemoryStore::Get(const std::string& key, absl::Duration timeout) {
  absl::Status waited = Wait({key}, timeout);
  if (!waited.ok()) return waited;
  absl::MutexLock lock(&mu_);
  return map_.at(key);  // keys are never erased, so it is still there
}

absl::Status InMemoryStore::Wait(const std::vector<std::string>& keys, absl::Duration timeout) {
  auto all_present = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const std::string& key : keys) {
      if (!map_.contains(key)) return false;
    }
    return true;
  };
  absl::MutexLock lock(&mu_);
  if (mu_.AwaitWithTimeout(absl::Condition(&all_present), timeout)) return absl::OkStatus();
  std::vector<std::string> missing;
  for (const std::string& key : keys) {
    if (!map_.contains(key)) missing.push_back(key);
  }
  return MissingKeysError(missing, timeout);
}

absl::StatusOr<int64_t> InMemoryStore::Add(const std::string& key, int64_t delta) {
  absl::MutexLock lock(&mu_);
  int64_t current = 0;
  auto it = map_.find(key);
  if (it != map_.end()) {
    absl::StatusOr<int64_t> parsed = ParseCounter(key, it->second);
    if (!parsed.ok()) return parsed.status();
    current = *parsed;
  }
  absl::StatusOr<int64_t> sum = AddToCounter(key, current, delta);
  if (!sum.ok()) return sum.status();
  map_[key] = absl::StrCat(*sum);
  return *sum;
}

}  // namespace accel::comm
