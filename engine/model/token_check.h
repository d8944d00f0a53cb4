// The models' check of their token inputs: every id must index the vocabulary.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace accel::model {

// InvalidArgument naming the first token outside [0, V) and its position; `what` says which
// array ("input", "target").
inline absl::Status CheckTokens(const int32_t* tokens, int64_t n, int64_t V, const char* what) {
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= V) {
      return absl::InvalidArgumentError(absl::StrCat(what, " token ", tokens[i], " at position ",
                                                     i, " is outside the vocabulary [0, ", V,
                                                     ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace accel::model
