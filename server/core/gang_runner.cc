// The GangRunner contract's one function (gang_runner.h), here so that the core does not need a
// launcher to describe how a rank ended.
#include "server/core/gang_runner.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace accel::server {

std::string RankExit::Describe() const {
  if (signal != 0) return absl::StrCat("killed by signal ", signal, " (", strsignal(signal), ")");
  return absl::StrCat("exited with code ", exit_code);
}

}  // namespace accel::server
