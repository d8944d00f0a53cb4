// All-close checks for tests. Each returns a testing::AssertionResult naming the first and worst
// mismatching index, so EXPECT_TRUE(AllClose(...)) failures are self-explanatory.
//   AllClose: |a - e| <= atol + rtol * |e| elementwise.
//   AllCloseToScale: |a - e| <= tol * max|e| (tolerance relative to the tensor's largest
//   magnitude; the golden test's rule).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <sstream>

#include "gtest/gtest.h"

namespace accel::testing {

inline ::testing::AssertionResult AllClose(std::span<const float> actual,
                                           std::span<const float> expected, double atol,
                                           double rtol = 0.0) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << "size mismatch: " << actual.size() << " vs " << expected.size();
  }
  int64_t bad = 0, worst = -1;
  double worst_excess = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double a = actual[i], e = expected[i];
    double err = std::fabs(a - e);
    double allowed = atol + rtol * std::fabs(e);
    if (!(err <= allowed)) {  // also catches NaN
      ++bad;
      double excess = std::isnan(err) ? INFINITY : err - allowed;
      if (worst < 0 || excess > worst_excess) {
        worst = static_cast<int64_t>(i);
        worst_excess = excess;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << actual.size() << " elements differ; worst at [" << worst
         << "]: actual " << actual[worst] << " expected " << expected[worst] << " (atol " << atol
         << ", rtol " << rtol << ")";
}

inline double MaxAbs(std::span<const float> x) {
  double m = 0;
  for (float v : x) m = std::max(m, static_cast<double>(std::fabs(v)));
  return m;
}

inline ::testing::AssertionResult AllCloseToScale(std::span<const float> actual,
                                                  std::span<const float> expected, double tol) {
  double scale = MaxAbs(expected);
  return AllClose(actual, expected, tol * (scale > 0 ? scale : 1.0), 0.0);
}

}  // namespace accel::testing
