// ScopedThreads: sets the kernels' thread count for a scope and restores it (tests, benchmarks).
#pragma once

#include "engine/kernels/threading.h"

namespace accel::kernels {

class ScopedThreads {
 public:
  explicit ScopedThreads(int n) : saved_(NumThreads()) { SetNumThreads(n); }
  ~ScopedThreads() { SetNumThreads(saved_); }
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;

 private:
  int saved_;
};

}  // namespace accel::kernels
