#include "rpc/file_access.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace accel::rpc {
namespace {

namespace fs = std::filesystem;

// The realpath `path` will have once it exists: its nearest existing ancestor's realpath plus
// the rest. "" when that cannot be known safely (a ".." in the rest, a dangling symlink).
std::string EventualRealPath(const std::string& path) {
  fs::path p(path);
  fs::path rest;
  std::error_code ec;
  while (true) {
    const fs::path real = fs::canonical(p, ec);
    if (!ec) return (rest.empty() ? real : real / rest).string();
    // Something is there but does not resolve: a dangling or looping symlink.
    if (fs::symlink_status(p, ec).type() != fs::file_type::not_found) return "";
    if (!p.has_relative_path()) return "";
    const fs::path name = p.filename();
    if (name == "..") return "";
    if (!name.empty() && name != ".") rest = rest.empty() ? name : name / rest;
    p = p.parent_path();
  }
}

bool Under(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || absl::StartsWith(path, root + "/");
}

}  // namespace

absl::Status FileAccess::Check(std::string_view key, const std::string& path) const {
  if (roots.empty()) return absl::OkStatus();
  const std::string real = EventualRealPath(path);
  if (!real.empty()) {
    for (const std::string& root : roots) {
      if (Under(real, root)) return absl::OkStatus();
    }
  }
  return absl::PermissionDeniedError(absl::StrCat(
      std::string(key), ": ", path, " is outside --data-root (", absl::StrJoin(roots, ", "), ")"));
}

absl::StatusOr<std::vector<std::string>> DataRoots(const std::vector<std::string>& dirs) {
  std::vector<std::string> roots;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    const fs::path real = fs::canonical(dir, ec);
    if (ec || !fs::is_directory(real, ec)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--data-root: ", dir, " is not an existing directory"));
    }
    roots.push_back(real.string());
  }
  return roots;
}

}  // namespace accel::rpc
