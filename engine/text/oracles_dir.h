// Where the reference implementations live that the parity tests and the tokenizer bench run
// (Hugging Face tokenizers and @huggingface/jinja through Node; scripts/install-test-oracles.sh
// installs them outside the source tree), and the small shell helpers those callers share.
#pragma once

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

namespace accel::text {

// $ACCEL_ORACLES_DIR, else ~/.cache/accel-oracles.
inline std::string OraclesDir() {
  if (const char* dir = std::getenv("ACCEL_ORACLES_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  const char* home = std::getenv("HOME");
  return absl::StrCat(home != nullptr ? home : "", "/.cache/accel-oracles");
}

// `s` in single quotes for a shell command line (paths here hold no quote).
inline std::string ShellQuote(const std::string& s) { return absl::StrCat("'", s, "'"); }

// Whether `program` is on PATH.
inline bool OnPath(const std::string& program) {
  return std::system(absl::StrCat("command -v ", program, " >/dev/null 2>&1").c_str()) == 0;
}

}  // namespace accel::text
