// The two halves of the settings table (settings_table.cc, settings_table_run.cc); only
// JobSettings() (settings.h) calls them.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "job/settings.h"

namespace accel::job {

// "KEY: <the engine's message>" for a value the engine's parser refuses.
template <typename T>
absl::StatusOr<T> Keyed(const char* key, absl::StatusOr<T> v) {
  if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat(key, ": ", v.status().message()));
  return v;
}

void AddModelDataTrainRows(std::vector<Setting>& rows);
void AddSampleRows(std::vector<Setting>& rows);
void AddRunRows(std::vector<Setting>& rows);

}  // namespace accel::job
