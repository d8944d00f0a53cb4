// Helpers of the Env tests (env_test.cc, env_fault_test.cc): write a whole file, read one back.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "engine/base/env.h"
#include "gtest/gtest.h"

namespace accel::testing {

inline absl::Status WriteString(Env* env, const std::string& path, std::string_view data,
                         bool sync = false) {
  absl::StatusOr<std::unique_ptr<WritableFile>> file = env->NewWritableFile(path);
  if (!file.ok()) return file.status();
  if (absl::Status s = (*file)->Append(data); !s.ok()) return s;
  if (sync) {
    if (absl::Status s = (*file)->Sync(); !s.ok()) return s;
  }
  return (*file)->Close();
}

// The file's content, or nullopt when it does not exist.
inline std::optional<std::string> Contents(Env* env, const std::string& path) {
  absl::StatusOr<std::string> data = ReadFileToString(env, path);
  if (absl::IsNotFound(data.status())) return std::nullopt;
  EXPECT_TRUE(data.ok()) << data.status();
  return data.ok() ? std::optional<std::string>(*data) : std::nullopt;
}

}  // namespace accel::testing
