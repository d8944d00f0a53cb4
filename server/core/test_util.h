// Test helpers for server/: a fresh temporary directory per test.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace accel::server {

// A new empty directory under the test temp dir, named after the running test.
inline std::string FreshTestDir() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                              ("accel_server_" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace accel::server
