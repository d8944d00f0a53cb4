#include "server/launchers/log_tail.h"

#include <fcntl.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace accel::server {
namespace {

constexpr size_t kMaxLineBytes = 4096;
constexpr size_t kTailLines = 8;
constexpr size_t kReadChunk = 64 * 1024;
constexpr int kChunksPerRead = 16;

}  // namespace

LogTail::~LogTail() {
  if (fd_ >= 0) close(fd_);
}

void LogTail::Follow(const std::string& path) {
  path_ = path;
  fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ >= 0) {
    lseek(fd_, 0, SEEK_END);  // only what this attempt appends
  } else {
    from_start_ = true;  // created later by its writer: all of it is new
  }
}

void LogTail::Read(bool final, const std::function<void(std::string)>& line) {
  if (fd_ < 0 && !path_.empty()) fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return;
  auto emit = [&](std::string text) {
    if (!text.empty() && text.back() == '\r') text.pop_back();
    tail_.push_back(text);
    if (tail_.size() > kTailLines) tail_.pop_front();
    line(std::move(text));
  };
  char buf[kReadChunk];
  for (int chunks = 0; chunks < kChunksPerRead || final; ++chunks) {
    ssize_t n = read(fd_, buf, sizeof(buf));
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        emit(std::move(partial_));
        partial_.clear();
      } else if (partial_.size() < kMaxLineBytes) {
        partial_.push_back(buf[i]);
      }
    }
  }
  if (final && !partial_.empty()) {
    emit(std::move(partial_));
    partial_.clear();
  }
}

std::string LogTail::Tail() const {
  std::string out;
  for (const std::string& l : tail_) absl::StrAppend(&out, l, "\n");
  return out;
}

}  // namespace accel::server
