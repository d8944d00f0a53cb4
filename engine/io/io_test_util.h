// Helpers for engine/io tests: a scratch directory on a real disk (direct I/O and page-cache
// checks mean nothing on tmpfs), random fills, and a page-cache residency count.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace accel::io::testing {

// A fresh directory under ACCEL_IO_TEST_DIR (the test's build directory unless the environment
// variable of that name overrides it). Removed by the destructor.
class DiskTempDir {
 public:
  DiskTempDir() {
    const char* env = std::getenv("ACCEL_IO_TEST_DIR");
    std::string tmpl = std::string(env != nullptr ? env : ACCEL_IO_TEST_DIR) + "/io_test_XXXXXX";
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~DiskTempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  DiskTempDir(const DiskTempDir&) = delete;
  DiskTempDir& operator=(const DiskTempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void FillRandom(void* buf, size_t bytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto* p = static_cast<unsigned char*>(buf);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    const uint64_t v = rng();
    std::memcpy(p + i, &v, 8);
  }
  for (; i < bytes; ++i) p[i] = static_cast<unsigned char>(rng());
}

// How many of the file's pages are in the page cache, by mincore on a read-only mapping (the
// mapping itself faults nothing in). -1 if the file cannot be mapped.
inline int64_t ResidentPages(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size == 0) {
    close(fd);
    return st.st_size == 0 ? 0 : -1;
  }
  void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return -1;
  const long page = sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> vec(static_cast<size_t>((st.st_size + page - 1) / page));
  int64_t resident = -1;
  if (mincore(map, static_cast<size_t>(st.st_size), vec.data()) == 0) {
    resident = 0;
    for (unsigned char v : vec) resident += v & 1;
  }
  munmap(map, static_cast<size_t>(st.st_size));
  return resident;
}

}  // namespace accel::io::testing
