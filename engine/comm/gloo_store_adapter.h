// Internal to the gloo backend: presents our Store as a gloo::rendezvous::Store, so gloo's
// connectFullMesh can exchange addresses through any of our stores.
//
// gloo's store interface returns nothing and reports failure by exception, so the adapter
// throws gloo::IoException on a failed call, after recording the Status; the factory catches
// the exception and returns first_error(), keeping its code (DeadlineExceeded for a rank that
// never published its address). Only gloo calls the throwing methods; no exception leaves
// gloo_communicator.cc. Thread-compatible (gloo calls it from one thread).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/comm/store.h"
#include "gloo/rendezvous/store.h"

namespace accel::comm {

class GlooStoreAdapter : public gloo::rendezvous::Store {
 public:
  // Does not own `store`. `timeout` bounds every get and every wait without its own timeout.
  GlooStoreAdapter(comm::Store* store, absl::Duration timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // The first failure seen, OK if none.
  const absl::Status& first_error() const { return first_error_; }

 private:
  // Records `status` (rewording a timeout on gloo's per-rank keys to name the missing ranks)
  // and throws.
  [[noreturn]] void Fail(absl::Status status, const std::vector<std::string>& keys);

  comm::Store* const store_;
  const absl::Duration timeout_;
  absl::Status first_error_;
};

}  // namespace accel::comm
