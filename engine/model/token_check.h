// The models' check of their token inputs: every id must index the vocabulary.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/kernels/cross_entropy.h"

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

// The targets' check: each one indexes the vocabulary or is kernels::kIgnoreIndex (-100, a
// masked position whose loss does not count); any other id is refused as CheckTokens does.
inline absl::Status CheckTargets(const int32_t* targets, int64_t n, int64_t V) {
  for (int64_t i = 0; i < n; ++i) {
    if ((targets[i] < 0 || targets[i] >= V) && targets[i] != kernels::kIgnoreIndex) {
      return absl::InvalidArgumentError(absl::StrCat(
          "target token ", targets[i], " at position ", i, " is outside the vocabulary [0, ", V,
          ") and is not the ignored target ", kernels::kIgnoreIndex));
    }
  }
  return absl::OkStatus();
}

}  // namespace accel::model
