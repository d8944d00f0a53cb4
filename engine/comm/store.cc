#include "engine/comm/store.h"

#include <utility>

namespace accel::comm {
namespace {

// Keys become prefix + "/" + key; the separator keeps ("a", "bc") and ("ab", "c") apart.
class PrefixedStore : public Store {
 public:
  PrefixedStore(std::string prefix, Store* base) : prefix_(std::move(prefix) + "/"), base_(base) {}

  absl::Status Set(const std::string& key, const std::string& value) override {
    return base_->Set(prefix_ + key, value);
  }
  absl::StatusOr<std::string> Get(const std::string& key, absl::Duration timeout) override {
    return base_->Get(prefix_ + key, timeout);
  }
  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override {
    std::vector<std::string> full;
    full.reserve(keys.size());
    for (const std::string& key : keys) full.push_back(prefix_ + key);
    return base_->Wait(full, timeout);
  }
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override {
    return base_->Add(prefix_ + key, delta);
  }

 private:
  const std::string prefix_;
  Store* const base_;
};

}  // namespace

std::unique_ptr<Store> PrefixStore(std::string prefix, Store* base) {
  return std::make_unique<PrefixedStore>(std::move(prefix), base);
}

}  // namespace accel::comm
