// POSIX implementation of Env.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/base/env.h"
#include "engine/base/path_checks.h"
#include "engine/base/status_macros.h"

namespace accel {
namespace {

absl::Status PosixError(std::string_view what, const std::string& path, int err) {
  std::string msg = absl::StrCat(std::string(what), " ", path, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == ENOTDIR || err == EISDIR) return absl::InvalidArgumentError(msg);
  return absl::InternalError(msg);
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }
  absl::Status Append(std::string_view data) override {
    const char* p = data.data();
    size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return PosixError("write", path_, errno);
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }
  absl::Status Sync() override {
    if (::fdatasync(fd_) != 0) return PosixError("fdatasync", path_, errno);
    return absl::OkStatus();
  }
  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return PosixError("close", path_, errno);
    return absl::OkStatus();
  }

 private:
  std::string path_;
  int fd_;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }
  absl::Status Read(uint64_t offset, size_t n, char* dst) const override {
    if (offset > size_ || n > size_ - offset) {
      return absl::DataLossError(absl::StrCat(path_, ": read of ", n, " bytes at offset ", offset,
                                              " runs past the end of the file (", size_,
                                              " bytes)"));
    }
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, dst + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError("pread", path_, errno);
      }
      if (r == 0) {
        return absl::DataLossError(
            absl::StrCat(path_, ": unexpected end of file at offset ", offset + done));
      }
      done += static_cast<size_t>(r);
    }
    return absl::OkStatus();
  }
  uint64_t Size() const override { return size_; }
  const std::string& Path() const override { return path_; }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

class PosixEnv final : public Env {
 public:
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return PosixError("open for writing", path, errno);
    return std::make_unique<PosixWritableFile>(path, fd);
  }
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever; a
    // regular file ignores the flag. Anything but a regular file (a FIFO, a device such as
    // /dev/zero that never ends, a socket, a directory) is refused before a byte is read.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return PosixError("open", path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return PosixError("stat", path, err);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      if (S_ISDIR(st.st_mode)) {
        return absl::InvalidArgumentError(absl::StrCat(path, " is a directory, not a file"));
      }
      return absl::InvalidArgumentError(
          absl::StrCat(path, " is ", DescribeFileKind(st.st_mode), ", not a regular file"));
    }
    return std::make_unique<PosixRandomAccessFile>(path, fd, static_cast<uint64_t>(st.st_size));
  }
  bool FileExists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError("stat", path, errno);
    if (S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat(path, " is a directory, not a file"));
    }
    return static_cast<uint64_t>(st.st_size);
  }
  absl::Status CreateDirs(const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return PosixError("create directory", path, ec.value());
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override {
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) return PosixError("list directory", path, errno);
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }
  absl::Status DeleteFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return PosixError("delete", path, errno);
    return absl::OkStatus();
  }
  absl::Status DeleteRecursively(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return PosixError("delete", path, ec.value());
    return absl::OkStatus();
  }
  absl::Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return PosixError(absl::StrCat("rename to ", to, " from"), from, errno);
    }
    return absl::OkStatus();
  }
  absl::Status SyncDir(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return PosixError("open directory", path, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return PosixError("fsync directory", path, err);
    return absl::OkStatus();
  }
  int64_t NowMicros() override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void SleepForMicros(int64_t micros) override {
    std::this_thread::sleep_for(std::chrono::microseconds(micros));
  }
};

}  // namespace

Env* Env::Default() {
  static Env* env = new PosixEnv();
  return env;
}

}  // namespace accel
