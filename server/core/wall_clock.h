// Wall time for records that users read (submit/start/end times, event timestamps: Unix
// microseconds). Env::Default()'s clock is steady (monotonic), which is right for deadlines and
// heartbeats but not for timestamps; acceld uses both.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

#include "engine/base/env.h"

namespace accel::server {

class WallClock final : public Clock {
 public:
  int64_t NowMicros() override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  void SleepForMicros(int64_t micros) override {
    std::this_thread::sleep_for(std::chrono::microseconds(micros));
  }
  static WallClock* Default() {
    static WallClock clock;
    return &clock;
  }
};

}  // namespace accel::server
