#include "engine/base/mapped_file.h"

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "engine/testing/mem_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel {
namespace {

using ::testing::HasSubstr;

std::string Bytes(size_t n) {
  std::string bytes(n, '\0');
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i * 31);
  return bytes;
}

// The POSIX Env's files are mapped; the bytes are the file's, and outlive its name.
TEST(MappedFileTest, ThePosixEnvsFilesAreMappedAndOutliveTheirName) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "accel_map_test_XXXXXX").string();
  const std::string dir = ::mkdtemp(tmpl.data());
  Env* env = Env::Default();
  const std::string path = JoinPath(dir, "m.bin");
  const std::string bytes = Bytes(10000);
  ASSERT_TRUE(WriteFileAtomic(env, path, bytes).ok());
  auto mapped = MapFile(env, path);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_TRUE((*mapped)->mapped());
  ASSERT_TRUE(env->DeleteFile(path).ok());
  ASSERT_EQ((*mapped)->size(), bytes.size());
  EXPECT_EQ(std::string((*mapped)->data(), (*mapped)->size()), bytes);

  ASSERT_TRUE(WriteFileAtomic(env, path, "").ok());
  auto empty = MapFile(env, path);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)->size(), 0u);

  // The Env's open errors: a missing path, a directory.
  absl::Status missing = MapFile(env, JoinPath(dir, "absent")).status();
  EXPECT_TRUE(absl::IsNotFound(missing)) << missing;
  EXPECT_THAT(std::string(missing.message()), HasSubstr("absent"));
  absl::Status directory = MapFile(env, dir).status();
  EXPECT_TRUE(absl::IsInvalidArgument(directory)) << directory;
  EXPECT_THAT(std::string(directory.message()), HasSubstr("is a directory"));
  ASSERT_TRUE(env->DeleteRecursively(dir).ok());
}

// Any other Env's files are read through it, into memory.
TEST(MappedFileTest, AnotherEnvsFilesAreReadThroughIt) {
  testing::MemEnv env;
  ASSERT_TRUE(env.CreateDirs("/d").ok());
  const std::string bytes = Bytes(5000);
  ASSERT_TRUE(WriteFileAtomic(&env, "/d/m.bin", bytes).ok());
  auto copy = MapFile(&env, "/d/m.bin");
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_FALSE((*copy)->mapped());
  EXPECT_EQ(std::string((*copy)->data(), (*copy)->size()), bytes);
  EXPECT_TRUE(absl::IsNotFound(MapFile(&env, "/d/absent").status()));
}

}  // namespace
}  // namespace accel
