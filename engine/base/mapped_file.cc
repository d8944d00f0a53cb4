#include "engine/base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel {
namespace {

// The in-memory form: the bytes read through the Env into a buffer it owns.
class BufferedFile final : public MappedFile {
 public:
  explicit BufferedFile(std::string bytes) : bytes_(std::move(bytes)) {
    data_ = bytes_.data();
    size_ = bytes_.size();
  }
  bool mapped() const override { return false; }

 private:
  std::string bytes_;
};

// A read-only shared mapping of a whole file; an empty file maps nothing.
class PosixMappedFile final : public MappedFile {
 public:
  PosixMappedFile(void* base, uint64_t size) : base_(base) {
    data_ = static_cast<const char*>(base);
    size_ = size;
  }
  ~PosixMappedFile() override {
    if (base_ != nullptr) ::munmap(base_, size_);
  }
  bool mapped() const override { return true; }

 private:
  void* base_;
};

absl::Status MapError(std::string_view what, const std::string& path, int err) {
  return absl::InternalError(absl::StrCat(std::string(what), " ", path, ": ", std::strerror(err)));
}

}  // namespace

absl::StatusOr<std::shared_ptr<const MappedFile>> MapFile(Env* env, const std::string& path) {
  // The Env's open does the checks (regular files only, no waiting on a FIFO) and the errors.
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, env->NewRandomAccessFile(path));
  const uint64_t size = file->Size();
  if (env != Env::Default()) {
    std::string bytes(size, '\0');
    ACCEL_RETURN_IF_ERROR(file->Read(0, size, bytes.data()));
    return std::make_shared<const BufferedFile>(std::move(bytes));
  }
  if (size == 0) return std::make_shared<const PosixMappedFile>(nullptr, 0);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return MapError("open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != size) {
    ::close(fd);
    return absl::DataLossError(absl::StrCat(path, ": the file changed while it was opened"));
  }
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps the pages reachable
  if (base == MAP_FAILED) return MapError("mmap", path, err);
  return std::make_shared<const PosixMappedFile>(base, size);
}

}  // namespace accel
