// What acceld may open on a client's behalf, and what its errors may say about it
// (docs/rpc.md, "What acceld reads on a client's behalf").
//
// A client token is not the daemon's uid: a path in a SubmitJob (job_file, a config, the
// model's config.json, init_weights, data.path, checkpoint.dir) is opened by acceld and its
// workers with acceld's rights. Two rules follow, both held here:
//   echo   errors about a file acceld opened itself carry its path, positions and our own
//          words, never its content (Echo::kPositionsOnly; engine/base/echo.h);
//   roots  with `acceld --data-root DIR` (repeatable), every such path must resolve (realpath,
//          symlinks followed) under one of the roots, else PermissionDenied naming the key and
//          the path. Without --data-root any path is allowed, as before: the default suits a
//          daemon whose clients are its owner (the local socket, a token kept 0600 in the
//          state directory); a daemon that serves others is started with --data-root.
// accelctl reads the user's own files with the user's rights: FileAccess{} (content, any path).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/echo.h"

namespace accel::rpc {

struct FileAccess {
  Echo echo = Echo::kContent;
  std::vector<std::string> roots;  // canonical directories (DataRoots); empty: any path

  // OK when `path` may be opened: roots is empty, or its realpath lies under a root. A path
  // that does not exist yet (a checkpoint directory) is judged by its nearest existing
  // ancestor plus the rest, which may not climb with "..". PermissionDenied "KEY: PATH is
  // outside --data-root (ROOTS)" otherwise; a dangling symlink is refused (it could point
  // anywhere once created).
  [[nodiscard]] absl::Status Check(std::string_view key, const std::string& path) const;
};

// The canonical form of each --data-root, which must be an existing directory.
// InvalidArgument naming --data-root otherwise.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> DataRoots(
    const std::vector<std::string>& dirs);

}  // namespace accel::rpc
