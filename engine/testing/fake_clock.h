// FakeClock: a Clock whose time moves only when a test says so. SleepForMicros advances it
// instead of sleeping, so code that waits (heartbeats, retries, timeouts) runs instantly and
// deterministically. Thread-safe: the time is one atomic.
#pragma once

#include <atomic>
#include <cstdint>

#include "engine/base/env.h"

namespace accel::testing {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_micros = 0) : now_micros_(start_micros) {}

  int64_t NowMicros() override { return now_micros_.load(std::memory_order_acquire); }
  // Advances the time by `micros` (negative values are ignored: time never goes back through
  // a sleep). Returns at once.
  void SleepForMicros(int64_t micros) override { Advance(micros); }

  void Advance(int64_t micros) {
    if (micros > 0) now_micros_.fetch_add(micros, std::memory_order_acq_rel);
  }
  // Sets the time outright; a test may move it backwards to model a clock step.
  void SetNowMicros(int64_t micros) { now_micros_.store(micros, std::memory_order_release); }

 private:
  std::atomic<int64_t> now_micros_;
};

}  // namespace accel::testing
