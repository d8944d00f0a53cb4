// SpawnRanks: runs a multi-rank test body with each rank on its own thread.
//
//   ASSERT_OK(SpawnRanks(4, [&](int rank) -> absl::Status { ... return absl::OkStatus(); }));
//
// Joins every thread, then returns OK or the error that happened first in time (usually the
// cause; the others' are often its consequences), prefixed with "rank N: ". The body must not
// use gtest's ASSERT_* (it returns from the lambda, not the test); EXPECT_* is fine.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"

namespace accel::testing {

inline absl::Status SpawnRanks(int n, std::function<absl::Status(int rank)> fn) {
  std::mutex mu;
  absl::Status first;
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      absl::Status st = fn(rank);
      if (st.ok()) return;
      std::lock_guard<std::mutex> lock(mu);
      if (first.ok()) {
        first = absl::Status(st.code(),
                             "rank " + std::to_string(rank) + ": " + std::string(st.message()));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return first;
}

}  // namespace accel::testing
