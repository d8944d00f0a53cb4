// docs/job.md's "## Keys" table, rendered from the settings table (job/settings.h). The file
// holds it between kKeysBegin and kKeysEnd; settings_doc_test.cc fails when the two differ and
// names the command that rewrites the block.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace accel::job {

inline constexpr const char* kKeysBegin =
    "<!-- keys: generated from job/settings_table*.cc (job/settings_doc.h); do not edit -->";
inline constexpr const char* kKeysEnd = "<!-- end keys -->";

// The Markdown table: a header and one row per setting (folded rows join the one before).
std::string RenderKeysTable();

// `doc` with the block between the markers replaced by RenderKeysTable(). InvalidArgument when
// the markers are missing or out of order.
[[nodiscard]] absl::StatusOr<std::string> ReplaceKeysBlock(const std::string& doc);

}  // namespace accel::job
