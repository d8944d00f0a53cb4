// LogTail: follows a worker's log file as it grows and cuts it into lines, keeping the last few
// for the rank's exit report. The local launcher tails the file it redirected a rank's output
// into; cluster launchers tail the per-rank files their tasks write on the shared filesystem.
#pragma once

#include <deque>
#include <functional>
#include <string>

#include "absl/status/status.h"

namespace accel::server {

class LogTail {
 public:
  LogTail() = default;
  ~LogTail();
  LogTail(const LogTail&) = delete;
  LogTail& operator=(const LogTail&) = delete;

  // Follows `path` from its current end (only what is appended from now on). A file that does
  // not exist yet is opened by a later Read once it does (a cluster task creates its own).
  void Follow(const std::string& path);
  // Calls `line` for each complete line appended since the last call (lines are capped at 4 KiB;
  // at most 1 MiB is read per call so one chatty rank cannot stall the caller). With `final`,
  // reads to the end and also emits an unfinished last line.
  void Read(bool final, const std::function<void(std::string)>& line);
  // The last lines read, oldest first, each ending in '\n'.
  std::string Tail() const;

 private:
  std::string path_;
  int fd_ = -1;
  bool from_start_ = false;  // opened late: everything in it is new
  std::string partial_;
  std::deque<std::string> tail_;
};

}  // namespace accel::server
